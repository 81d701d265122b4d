#!/usr/bin/env bash
# Apache Kafka 4.4.0 as the behaviour reference for Runnel's client tests.
#
#   scripts/kafka-reference.sh fetch             download kafka jars + runtime deps into .test-deps/kafka/libs
#   scripts/kafka-reference.sh start [PORT]      start a single-node KRaft combined-mode broker on 127.0.0.1:PORT
#                                                (default 19092) with data in .test-deps/kafka/run-PORT;
#                                                prints "BOOTSTRAP=127.0.0.1:PORT" and "PID=N"
#   scripts/kafka-reference.sh stop [PORT]       kill that broker (by the PID it recorded) and delete its data
#   scripts/kafka-reference.sh classpath         print the classpath (run kafka-topics etc. with java -cp)
#   scripts/kafka-reference.sh prepare DIR PORT  write DIR/server.properties and format DIR/data (once)
#   scripts/kafka-reference.sh java-cmd DIR      print the command (one argument per line) running DIR's node
#
# For prepare/start: KAFKA_EXTRA_LISTENERS (e.g. SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094) adds
# listeners, advertised as bound, with the protocol of their name; KAFKA_EXTRA_PROPERTIES names a file of
# further server.properties lines (later lines win: ssl.*, sasl.*, ...). KAFKA_HEAP_OPTS (as in Kafka's own
# scripts) replaces the heap options "-Xms256m -Xmx1g" of start/java-cmd, e.g. "-Xms128m -Xmx512m".
#
# Everything lives under .test-deps/ (gitignored). Needs only Java 17+ and Maven.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
DEPS="$ROOT/.test-deps/kafka"
LIBS="$DEPS/libs"
# shellcheck disable=SC2206 # KAFKA_HEAP_OPTS is a list of JVM options
JOPTS=(${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g} -XX:+UseG1GC -Djava.awt.headless=true)

fetch() {
    if [[ -f "$LIBS/.complete-$KAFKA_VERSION" ]]; then
        return 0
    fi
    mkdir -p "$DEPS"
    local deps="" a
    for a in kafka_2.13 kafka-server kafka-tools kafka-storage kafka-metadata kafka-group-coordinator kafka-clients; do
        deps+="<dependency><groupId>org.apache.kafka</groupId><artifactId>$a</artifactId>"
        deps+="<version>$KAFKA_VERSION</version></dependency>"
    done
    deps+="<dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId>"
    deps+="<version>1.7.36</version></dependency>"
    printf '%s\n' '<?xml version="1.0" encoding="UTF-8"?>' \
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>' \
        '<groupId>dev.runnel</groupId><artifactId>kafka-reference</artifactId><version>1</version>' \
        '<packaging>pom</packaging>' "<dependencies>$deps</dependencies></project>" > "$DEPS/pom.xml"
    rm -rf "$LIBS"
    mvn -q -B -f "$DEPS/pom.xml" dependency:copy-dependencies \
        -DoutputDirectory="$LIBS" -DincludeScope=runtime
    touch "$LIBS/.complete-$KAFKA_VERSION"
}

classpath() {
    fetch
    echo "$LIBS/*"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Kafka logs through slf4j -> reload4j here; keep it to warnings on stderr.
write_log_config() {
    printf '%s\n' 'log4j.rootLogger=WARN, stderr' \
        'log4j.appender.stderr=org.apache.log4j.ConsoleAppender' \
        'log4j.appender.stderr.Target=System.err' \
        'log4j.appender.stderr.layout=org.apache.log4j.PatternLayout' \
        'log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n' > "$1/log4j.properties"
}

prepare() {
    local run="$1" port="$2"
    fetch
    if [[ -f "$run/data/meta.properties" ]]; then
        return 0
    fi
    mkdir -p "$run/data"
    local cport extra="${KAFKA_EXTRA_LISTENERS:-}" extra_map="" l
    cport="$(free_port)"
    for l in ${extra//,/ }; do
        extra_map+=",${l%%://*}:${l%%://*}"
    done
    write_log_config "$run"
    printf '%s\n' \
        'process.roles=broker,controller' \
        'node.id=1' \
        "controller.quorum.voters=1@127.0.0.1:$cport" \
        "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport${extra:+,$extra}" \
        "advertised.listeners=PLAINTEXT://127.0.0.1:$port${extra:+,$extra}" \
        'controller.listener.names=CONTROLLER' \
        'inter.broker.listener.name=PLAINTEXT' \
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT$extra_map" \
        "log.dirs=$run/data" \
        'num.partitions=4' \
        'default.replication.factor=1' \
        'auto.create.topics.enable=true' \
        'delete.topic.enable=true' \
        'offsets.topic.replication.factor=1' \
        'offsets.topic.num.partitions=4' \
        'transaction.state.log.replication.factor=1' \
        'transaction.state.log.min.isr=1' \
        'share.coordinator.state.topic.replication.factor=1' \
        'share.coordinator.state.topic.min.isr=1' \
        'group.initial.rebalance.delay.ms=0' \
        > "$run/server.properties"
    if [[ -n "${KAFKA_EXTRA_PROPERTIES:-}" ]]; then
        cat "$KAFKA_EXTRA_PROPERTIES" >> "$run/server.properties"
    fi
    local log="-Dlog4j.configuration=file:$run/log4j.properties"
    local cluster_id
    cluster_id="$(java "${JOPTS[@]}" "$log" -cp "$LIBS/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)"
    if ! java "${JOPTS[@]}" "$log" -cp "$LIBS/*" kafka.tools.StorageTool format -t "$cluster_id" \
            -c "$run/server.properties" > "$run/format.log" 2>&1; then
        cat "$run/format.log" >&2
        exit 1
    fi
}

java_cmd() {
    local run="$1"
    printf '%s\n' java "${JOPTS[@]}" "-Dlog4j.configuration=file:$run/log4j.properties" -cp "$LIBS/*" \
        kafka.Kafka "$run/server.properties"
}

start() {
    local port="${1:-19092}"
    local run="$DEPS/run-$port"
    if [[ -f "$run/pid" ]] && kill -0 "$(cat "$run/pid")" 2>/dev/null; then
        echo "already running: PID=$(cat "$run/pid")" >&2
        echo "BOOTSTRAP=127.0.0.1:$port"
        return 0
    fi
    rm -rf "$run"
    prepare "$run" "$port"
    local cmdline
    mapfile -t cmdline < <(java_cmd "$run")
    nohup "${cmdline[@]}" > "$run/server.log" 2>&1 < /dev/null &
    local pid=$!
    echo "$pid" > "$run/pid"
    local i
    for i in $(seq 1 240); do   # bounded: 120 s
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "kafka exited during startup; log tail:" >&2
            tail -50 "$run/server.log" >&2
            exit 1
        fi
        if python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),0.5)" 2>/dev/null; then
            echo "BOOTSTRAP=127.0.0.1:$port"
            echo "PID=$pid"
            return 0
        fi
        sleep 0.5
    done
    echo "kafka did not listen on 127.0.0.1:$port within 120 s; log tail:" >&2
    tail -50 "$run/server.log" >&2
    kill "$pid" 2>/dev/null || true
    exit 1
}

stop() {
    local port="${1:-19092}"
    local run="$DEPS/run-$port"
    if [[ -f "$run/pid" ]]; then
        local pid i
        pid="$(cat "$run/pid")"
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for i in $(seq 1 60); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.5
            done
            kill -9 "$pid" 2>/dev/null || true
        fi
    fi
    rm -rf "$run"
}

cmd="${1:-}"
shift || true
case "$cmd" in
    fetch) fetch ;;
    start) start "$@" ;;
    stop) stop "$@" ;;
    classpath) classpath ;;
    prepare) prepare "$@" ;;
    java-cmd) java_cmd "$@" ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
esac
