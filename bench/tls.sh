# TLS rows of bench/run.sh (issue 14), sourced by it: produce and consume over PLAINTEXT, SSL and SASL_SSL
# (SASL mechanism PLAIN), 1 KiB records, acks=all, against Runnel and Apache Kafka 4.4.0 in the same run.
#
# tls_setup DIR        certificates made now with the openssl CLI (valid 2 days, nothing committed): a CA
#                      (DIR/ca.pem, what the client trusts), the brokers' EC P-256 key and certificate for
#                      localhost / 127.0.0.1 as a PEM key store (DIR/broker.pem, Runnel) and a PKCS12 key
#                      store (DIR/broker.p12, Kafka), and DIR/runnel.properties (the SSL and SASL_SSL keys).
# tls_kafka_config F P S Q   rewrites Kafka's server.properties F: PLAINTEXT on P, SSL on S, SASL_SSL on Q.
# tls_rows             the rows (uses run.sh's run_bench, order, ensure_disk, delete_everywhere, ...).
#
# The SASL_SSL listeners of both brokers know one PLAIN user (bench / bench-secret) from the listener's JAAS
# entry; the inter-broker and controller listeners stay PLAINTEXT. Over TLS both brokers encrypt Fetch data in
# user space (Runnel: rustls with ring; Kafka: the JDK's SSLEngine): kernel TLS needs the `tls` ULP, which
# tls_setup records as present or not (/proc/sys/net/ipv4/tcp_available_ulp).

TLS_PASS=bench-secret   # the PKCS12 store's password and the PLAIN user's
TLS_JAAS="org.apache.kafka.common.security.plain.PlainLoginModule required username=\"bench\" password=\"$TLS_PASS\" user_bench=\"$TLS_PASS\";"

tls_setup() {
    local d="$1"
    mkdir -p "$d"
    (
        cd "$d"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -noenc -keyout ca.key -out ca.pem \
            -days 2 -subj "/CN=runnel-bench-ca" -addext "basicConstraints=critical,CA:TRUE" \
            -addext "keyUsage=critical,keyCertSign,cRLSign"
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -noenc -keyout broker.key -out broker.csr \
            -subj "/CN=localhost"
        printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "extendedKeyUsage=serverAuth,clientAuth" \
            "basicConstraints=CA:FALSE" > broker.ext
        openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -set_serial "0x$(openssl rand -hex 8)" \
            -days 2 -extfile broker.ext -out broker.crt
        cat broker.key broker.crt ca.pem > broker.pem
        openssl pkcs12 -export -in broker.crt -inkey broker.key -certfile ca.pem -name broker \
            -passout "pass:$TLS_PASS" -out broker.p12
    ) > "$d/openssl.log" 2>&1 || { cat "$d/openssl.log" >&2; return 1; }
    printf '%s\n' \
        "ssl.keystore.type=PEM" \
        "ssl.keystore.location=$d/broker.pem" \
        "listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN" \
        "listener.name.sasl_ssl.plain.sasl.jaas.config=$TLS_JAAS" > "$d/runnel.properties"
    local ulp
    ulp=$(cat /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null || echo "unknown")
    python3 -c 'import json,sys; u=sys.argv[1]; print(json.dumps({"kind":"tls_env","ulp":u,"ktls":"tls" in u.split()}))' \
        "$ulp" >> "$RESULTS"
}

tls_kafka_config() {
    local f="$1" p="$2" s="$3" q="$4" cport
    cport=$(sed -n 's/^controller.quorum.voters=1@127.0.0.1:\([0-9]*\)$/\1/p' "$f")
    sed -i -e '/^listeners=/d' -e '/^advertised.listeners=/d' -e '/^listener.security.protocol.map=/d' "$f"
    printf '%s\n' \
        "listeners=PLAINTEXT://127.0.0.1:$p,SSL://127.0.0.1:$s,SASL_SSL://127.0.0.1:$q,CONTROLLER://127.0.0.1:$cport" \
        "advertised.listeners=PLAINTEXT://127.0.0.1:$p,SSL://127.0.0.1:$s,SASL_SSL://127.0.0.1:$q" \
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT" \
        "ssl.keystore.type=PKCS12" \
        "ssl.keystore.location=$TMP/tls/broker.p12" \
        "ssl.keystore.password=$TLS_PASS" \
        "ssl.key.password=$TLS_PASS" \
        "listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN" \
        "listener.name.sasl_ssl.plain.sasl.jaas.config=$TLS_JAAS" >> "$f"
}

# tls_client_args PROTO: the `runnel bench` client options (librdkafka's names) for that listener.
tls_client_args() {
    BENCH_X=()
    [[ $1 == PLAINTEXT ]] && return 0
    BENCH_X=(-X "security.protocol=$1" -X "ssl.ca.location=$TMP/tls/ca.pem")
    [[ $1 == SASL_SSL ]] && BENCH_X+=(-X sasl.mechanism=PLAIN -X sasl.username=bench -X "sasl.password=$TLS_PASS")
    return 0
}

# tls_probe: the protocol version and cipher each broker's SSL listener negotiates with OpenSSL's s_client.
tls_probe() {
    local b line
    for b in runnel kafka; do
        line=$(openssl s_client -connect "${SADDR[$b:SSL]}" -servername localhost -CAfile "$TMP/tls/ca.pem" \
            < /dev/null 2> /dev/null | grep -E '^(New|Verify return code)' | tr '\n' ' ' || true)
        python3 -c 'import json,sys; print(json.dumps({"kind":"tls_cipher","broker":sys.argv[1],"line":sys.argv[2].strip()}))' \
            "$b" "$line" >> "$RESULTS"
        log "$b SSL listener: $line"
    done
}

# tls_bench BROKER PROTO TAG ARGS...: one run_bench (consume runs: run_bench_retry) on BROKER's PROTO listener.
tls_bench() {
    local b="$1" proto="$2"
    shift 2
    BENCH_ADDR="${SADDR[$b:$proto]}"
    tls_client_args "$proto"
    if [[ $1 == tls-consume:* ]]; then run_bench_retry "$b" "$@"; else run_bench "$b" "$@"; fi
    BENCH_ADDR=""
    BENCH_X=()
}

# The rows: per repetition, per partition count (1; and 8 in the full run), per listener: produce N 1 KiB
# records (acks=all, no compression) to a fresh topic, then consume it (page cache), Runnel and Kafka
# alternating with the order flipped every run; then the topic is deleted.
tls_rows() {
    local rep parts proto n topic b parts_list=(1 8)
    [[ $QUICK == 1 ]] && parts_list=(1)
    n=$(count_for 1024)
    tls_probe
    for rep in $(seq 1 "$REPS"); do
        for parts in "${parts_list[@]}"; do
            for proto in PLAINTEXT SSL SASL_SSL; do
                topic="tls-${proto,,}-$parts-$rep"
                for b in $(order $RUN); do
                    [[ $b == peer ]] && continue   # a --peer has no TLS listener here
                    ensure_disk "$(bytes_for 1024 "$n")"
                    tls_bench "$b" "$proto" "tls-produce:$proto:1024:$parts:all" produce -t "$topic" \
                        --partitions "$parts" -s 1024 -n "$n" --acks all -z none
                done
                RUN=$((RUN + 1))
                for b in $(order $RUN); do
                    [[ $b == peer ]] && continue
                    tls_bench "$b" "$proto" "tls-consume:$proto:1024:$parts" consume -t "$topic" --partitions "$parts"
                done
                RUN=$((RUN + 1))
                delete_everywhere "$topic"
            done
        done
        finish "in progress: repetition $rep of $REPS of the TLS rows done"
    done
}

# acl_row: bench/acl_bench.py (two more brokers of its own: no authorizer vs the StandardAuthorizer with
# 10,000 ACLs), 1 KiB produce runs of ACL_SECS seconds (10; --quick 5) alternating between them, REPS+1
# repetitions; its JSON lines go to the results.
acl_row() {
    local secs=$([[ $QUICK == 1 ]] && echo 5 || echo 10)
    log "authorizer row: bench/acl_bench.py $secs s x $((REPS + 1)) per broker"
    ensure_disk $(( 2 * (REPS + 1) * secs * 100 * 1000000 ))   # at most ~100 MB/s here
    if ! timeout -k 10 "$RUN_LIMIT" python3 "$ROOT/bench/acl_bench.py" "$secs" 1024 --reps $((REPS + 1)) --json \
        >> "$RESULTS" 2> "$TMP/acl.err"; then
        python3 -c 'import json,sys; print(json.dumps({"kind":"acl_summary","error":open(sys.argv[1],errors="replace").read()[-300:]}))' \
            "$TMP/acl.err" >> "$RESULTS"
    fi
    log "authorizer: $(tail -1 "$RESULTS")"
}
