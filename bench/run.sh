#!/usr/bin/env bash
# Runnel vs Apache Kafka 4.4.0 benchmark: one command, same client (`runnel bench`, librdkafka), same run.
#
#   bench/run.sh [--quick] [--reps N] [--peer HOST:PORT] [--out FILE]
#
# Builds target/release/runnel, starts a fresh `runnel server` (temp data dir) and Apache Kafka 4.4.0
# (scripts/kafka-reference.sh: KRaft combined mode, its own temp data dir on the same filesystem), then
# runs the matrix alternating Runnel and Kafka run by run (the order flips every run, so drift cancels):
# 100 B and 1 KiB records, 1 and 8 partitions, acks=1 and acks=all, none and lz4; produce-only,
# consume-only from the page cache and after posix_fadvise(DONTNEED) of the segment files, end-to-end
# latency at 50% of the lower measured peak. Same-run references: sequential write bandwidth (dd,
# conv=fdatasync, same byte count, same filesystem), loopback TCP throughput between two processes,
# the client's produce ceiling against librdkafka's in-process mock broker, and rdkafka_performance
# as a cross-check of the load generator. Broker RSS (VmRSS from /proc) idle and peak under load.
# Writes bench/results/<YYYY-MM-DD>.md (or --out) with figures and ratios; raw JSON lines beside it
# in the temp dir (printed at the end).
#
# --quick: a reduced matrix (a few minutes). --peer adds another Kafka-protocol broker to the
# produce/consume runs. BENCH_TMP (default target/bench-run) holds all data dirs; it is deleted first.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
QUICK=0
REPS=""
PEER=""
OUT=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --reps) REPS="$2"; shift ;;
        --peer) PEER="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
[[ -n "$REPS" ]] || REPS=$([[ $QUICK == 1 ]] && echo 1 || echo 3)
OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d).md}"
TMP="${BENCH_TMP:-$ROOT/target/bench-run}"
BIN="$ROOT/target/release/runnel"
RESULTS="$TMP/results.jsonl"
log() { printf '==> %s\n' "$*" >&2; }

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_port() {   # bounded: $2 seconds
    local port="$1" secs="$2" i
    for i in $(seq 1 $((secs * 20))); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

log "building target/release/runnel"
(cd "$ROOT" && cargo build --release -q -p runnel)
bash "$ROOT/scripts/kafka-reference.sh" fetch

rm -rf "$TMP"
mkdir -p "$TMP" "$(dirname "$OUT")"
: > "$RESULTS"
RUNNEL_PID="" KAFKA_PID=""
cleanup() {
    [[ -n "$RUNNEL_PID" ]] && kill "$RUNNEL_PID" 2>/dev/null || true
    [[ -n "$KAFKA_PID" ]] && kill "$KAFKA_PID" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT

# --- brokers -------------------------------------------------------------------------------------
RPORT="$(free_port)"
mkdir -p "$TMP/runnel"
t0=$(date +%s%N)
"$BIN" server --listen "127.0.0.1:$RPORT" --data-dir "$TMP/runnel" > "$TMP/runnel.log" 2>&1 &
RUNNEL_PID=$!
wait_port "$RPORT" 30 || { tail -20 "$TMP/runnel.log" >&2; exit 1; }
RUNNEL_STARTUP_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
log "runnel on 127.0.0.1:$RPORT (pid $RUNNEL_PID, accepting after ${RUNNEL_STARTUP_MS} ms)"

KPORT="$(free_port)"
bash "$ROOT/scripts/kafka-reference.sh" prepare "$TMP/kafka" "$KPORT"
mapfile -t KCMD < <(bash "$ROOT/scripts/kafka-reference.sh" java-cmd "$TMP/kafka")
t0=$(date +%s%N)
"${KCMD[@]}" > "$TMP/kafka.log" 2>&1 < /dev/null &
KAFKA_PID=$!
wait_port "$KPORT" 120 || { tail -20 "$TMP/kafka.log" >&2; exit 1; }
KAFKA_STARTUP_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
log "kafka on 127.0.0.1:$KPORT (pid $KAFKA_PID, accepting after ${KAFKA_STARTUP_MS} ms)"
sleep 5   # let both settle before the idle RSS sample
declare -A ADDR=([runnel]="127.0.0.1:$RPORT" [kafka]="127.0.0.1:$KPORT")
declare -A PID=([runnel]="$RUNNEL_PID" [kafka]="$KAFKA_PID")
declare -A DATA=([runnel]="$TMP/runnel" [kafka]="$TMP/kafka/data")
BROKERS=(runnel kafka)
if [[ -n "$PEER" ]]; then ADDR[peer]="$PEER"; PID[peer]=""; DATA[peer]=""; BROKERS+=(peer); fi
for b in runnel kafka; do
    printf '{"kind":"rss_idle","broker":"%s","rss_kib":%s}\n' "$b" "$(rss_kib "${PID[$b]}")" >> "$RESULTS"
done
printf '{"kind":"startup","broker":"runnel","ms":%s}\n{"kind":"startup","broker":"kafka","ms":%s}\n' \
    "$RUNNEL_STARTUP_MS" "$KAFKA_STARTUP_MS" >> "$RESULTS"

# --- helpers -------------------------------------------------------------------------------------
# Peak VmRSS of a pid while a command runs; appends {"kind":"rss_load",...}.
PEAK_FILE="$TMP/peak"
sample_rss() {   # pid; writes the peak to $PEAK_FILE until killed
    local pid="$1" peak=0 r
    while true; do
        r=$(rss_kib "$pid"); (( r > peak )) && peak=$r && echo "$peak" > "$PEAK_FILE"
        sleep 0.2
    done
}
# run_bench BROKER TAG ARGS... : one `runnel bench` run, its JSON line tagged and appended.
run_bench() {
    local broker="$1" tag="$2"; shift 2
    local pid="${PID[$broker]}" sampler="" out
    echo 0 > "$PEAK_FILE"
    if [[ -n "$pid" ]]; then sample_rss "$pid" & sampler=$!; fi
    if out=$("$BIN" bench "$@" -b "${ADDR[$broker]}" --timeout 60 --json 2> "$TMP/last.err"); then
        :
    else
        out='{"error":'"$(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()[-300:]))' "$TMP/last.err")"'}'
    fi
    [[ -n "$sampler" ]] && { kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true; }
    python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d.update(kind="bench", broker=sys.argv[2], tag=sys.argv[3], rss_peak_kib=int(open(sys.argv[4]).read() or 0)); print(json.dumps(d))' \
        "$out" "$broker" "$tag" "$PEAK_FILE" >> "$RESULTS"
    log "$broker $tag: $(tail -1 "$RESULTS" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("error") or "%.0f rec/s %.1f MB/s p99 %s ms" % (d["records_per_sec"], d["mb_per_sec"], (d.get("latency_ms") or {}).get("p99")))')"
}
# drop_cache DIR: fsync then posix_fadvise(DONTNEED) every file under DIR.
drop_cache() {
    python3 - "$1" <<'EOF'
import os, sys
for root, _, files in os.walk(sys.argv[1]):
    for f in files:
        try:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass
        finally:
            os.close(fd)
EOF
}
# order N: the brokers in run order, flipped on odd N (A B, B A, ...).
order() {
    if (( $1 % 2 == 0 )); then echo "${BROKERS[@]}"; else printf '%s\n' "${BROKERS[@]}" | tac | tr '\n' ' '; fi
}
RUN=0

# --- matrix --------------------------------------------------------------------------------------
count_for() {   # record size -> record count per run
    if [[ $QUICK == 1 ]]; then
        [[ $1 -le 100 ]] && echo 2000000 || echo 300000
    else
        [[ $1 -le 100 ]] && echo 10000000 || echo 2000000
    fi
}
if [[ $QUICK == 1 ]]; then
    # size:partitions:acks:compression
    PRODUCE=(100:1:1:none 100:1:all:none 100:1:1:lz4 1024:8:1:none)
    CONSUME=(100:1 1024:8)
    E2E=(100:1)
    E2E_SECS=10
else
    PRODUCE=()
    for s in 100 1024; do for p in 1 8; do for a in 1 all; do for c in none lz4; do
        PRODUCE+=("$s:$p:$a:$c")
    done; done; done; done
    CONSUME=(100:1 100:8 1024:1 1024:8)
    E2E=(100:1 100:8 1024:1 1024:8)
    E2E_SECS=30
fi

for rep in $(seq 1 "$REPS"); do
    for cfg in "${PRODUCE[@]}"; do
        IFS=: read -r size parts acks comp <<< "$cfg"
        n=$(count_for "$size")
        for b in $(order $RUN); do
            run_bench "$b" "produce:$cfg" produce -t "p-$size-$parts-$acks-$comp-$rep" --partitions "$parts" \
                -s "$size" -n "$n" --acks "$acks" -z "$comp"
        done
        RUN=$((RUN + 1))
    done
    for cfg in "${CONSUME[@]}"; do
        IFS=: read -r size parts <<< "$cfg"
        topic="p-$size-$parts-1-none-$rep"
        for mode in cached dropped; do
            for b in $(order $RUN); do
                if [[ $mode == dropped && -n "${DATA[$b]}" ]]; then drop_cache "${DATA[$b]}"; fi
                [[ $mode == dropped && -z "${DATA[$b]}" ]] && continue
                run_bench "$b" "consume-$mode:$cfg" consume -t "$topic" --partitions "$parts"
            done
            RUN=$((RUN + 1))
        done
    done
done

# End-to-end at 50% of the lower peak produce rate (median over reps) of runnel and kafka.
for cfg in "${E2E[@]}"; do
    IFS=: read -r size parts <<< "$cfg"
    rate=$(python3 - "$RESULTS" "produce:$size:$parts:1:none" <<'EOF'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
peaks = []
for b in ("runnel", "kafka"):
    v = [r["records_per_sec"] for r in rows if r.get("kind") == "bench" and r.get("broker") == b
         and r.get("tag") == sys.argv[2] and "records_per_sec" in r]
    if v:
        peaks.append(statistics.median(v))
print(int(0.5 * min(peaks)) if peaks else 10000)
EOF
)
    for rep in $(seq 1 "$REPS"); do
        for b in $(order $RUN); do
            run_bench "$b" "e2e:$size:$parts:1:none" end-to-end -t "e-$size-$parts-$rep" --partitions "$parts" \
                -s "$size" -d "$E2E_SECS" --acks 1 --linger-ms 1 --rate "$rate"
        done
        RUN=$((RUN + 1))
    done
done

# --- same-run references -------------------------------------------------------------------------
REF_BYTES=$(( $(count_for 1024) * 1024 ))
log "reference: sequential write of $REF_BYTES bytes (dd conv=fdatasync, and into the page cache)"
for flush in fdatasync none; do
    f="$TMP/ddfile"
    args=(if=/dev/zero of="$f" bs=1M count=$(( REF_BYTES / 1048576 )))
    [[ $flush == fdatasync ]] && args+=(conv=fdatasync)
    t0=$(date +%s%N)
    dd "${args[@]}" status=none
    ns=$(( $(date +%s%N) - t0 ))
    rm -f "$f"
    python3 -c 'import sys; b=int(sys.argv[1]) // 1048576 * 1048576; ns=int(sys.argv[2]); print("{\"kind\":\"ref_disk\",\"flush\":\"%s\",\"bytes\":%d,\"mb_per_sec\":%.1f}" % (sys.argv[3], b, b/1e6/(ns/1e9)))' \
        "$REF_BYTES" "$ns" "$flush" >> "$RESULTS"
done
log "reference: loopback TCP between two processes"
python3 - "$REF_BYTES" >> "$RESULTS" <<'EOF'
import json, os, socket, sys, time
total = int(sys.argv[1])
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
port = srv.getsockname()[1]
if os.fork() == 0:
    c = socket.create_connection(("127.0.0.1", port)); buf = b"x" * (1 << 20); sent = 0
    while sent < total:
        c.sendall(buf); sent += len(buf)
    c.close(); os._exit(0)
conn, _ = srv.accept(); got = 0; t0 = time.perf_counter(); buf = bytearray(1 << 20)
while True:
    n = conn.recv_into(buf)
    if not n:
        break
    got += n
secs = time.perf_counter() - t0
os.wait()
print(json.dumps({"kind": "ref_tcp", "bytes": got, "mb_per_sec": got / 1e6 / secs}))
EOF
log "reference: client ceiling (librdkafka's in-process mock broker)"
for cfg in 100:1:1:none 1024:8:1:none; do
    IFS=: read -r size parts acks comp <<< "$cfg"
    PID[mock]=""; ADDR[mock]="${ADDR[runnel]}"
    run_bench mock "produce:$cfg" produce -t "mock-$size" --partitions "$parts" -s "$size" \
        -n "$(count_for "$size")" --acks "$acks" -z "$comp" -X test.mock.num.brokers=1
done

# rdkafka_performance cross-check: 100 B, 1 partition, acks=1.
PERF="$ROOT/.test-deps/librdkafka/examples/rdkafka_performance"
if [[ -x "$PERF" ]]; then
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$ROOT/.test-deps/librdkafka/src"
    n=$(count_for 100)
    for b in $(order $RUN); do
        topic="rdperf-$b"
        "$BIN" topic create "$topic" --partitions 1 -b "${ADDR[$b]}" > /dev/null 2>&1 || true
        for mode in produce consume; do
            if [[ $mode == produce ]]; then
                line=$("$PERF" -P -t "$topic" -p 0 -s 100 -c "$n" -b "${ADDR[$b]}" -a 1 -q \
                    -X linger.ms=5 2>&1 | grep -E 'msgs/s' | tail -1 || true)
            else
                line=$("$PERF" -C -t "$topic" -p 0 -o beginning -c "$n" -b "${ADDR[$b]}" -q 2>&1 \
                    | grep -E 'msgs/s' | tail -1 || true)
            fi
            python3 -c 'import json,re,sys; l=sys.argv[3]; m=re.search(r"([\d.]+) msgs/s(?: and|) \(?([\d.]+) MB/s", l); print(json.dumps({"kind":"rdperf","broker":sys.argv[1],"mode":sys.argv[2],"records_per_sec":float(m.group(1)) if m else None,"mb_per_sec":float(m.group(2)) if m else None,"line":l.strip()}))' \
                "$b" "$mode" "$line" >> "$RESULTS"
            log "rdkafka_performance $b $mode: $line"
        done
    done
    RUN=$((RUN + 1))
else
    log "rdkafka_performance not built (PERF=1 scripts/librdkafka-tests.sh builds it); cross-check skipped"
fi

python3 "$ROOT/bench/report.py" "$RESULTS" "$OUT" "$QUICK" "$REPS"
cp "$RESULTS" "${OUT%.md}.jsonl"
log "wrote $OUT (raw results: ${OUT%.md}.jsonl)"
