#!/usr/bin/env bash
# Installs, idempotently, what Runnel's client tests need:
#   - kcat from Debian (links Debian's librdkafka 2.0.2: the "old client" case)
#   - Python packages pinned in tests/requirements.txt (pytest, kafka-python, confluent-kafka, codecs)
#   - the Java test programs under tests/java (org.apache.kafka:kafka-clients and kafka-streams, built with Maven)
#   - the Go test program under tests/go (franz-go's share consumer, modules from the Go module proxy)
#   - Apache Kafka 4.4.0 jars (reference broker and command-line tools) via scripts/kafka-reference.sh
#   - Debian's chromium and playwright-core from npm (tests/console), for the web console's browser test
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SUDO=""
if [[ "$(id -u)" != 0 ]] && command -v sudo >/dev/null; then SUDO="sudo"; fi

if ! command -v kcat >/dev/null; then
    echo "installing kcat (apt)"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq kcat
fi

if ! python3 -c 'import sys, importlib.metadata as m
want = [l.split("#")[0].strip() for l in open("tests/requirements.txt")]
for w in filter(None, want):
    name, ver = w.split("==")
    if m.version(name) != ver: sys.exit(1)' 2>/dev/null; then
    echo "installing Python test requirements (pip)"
    python3 -m pip install -q --disable-pip-version-check -r tests/requirements.txt
fi

if [[ ! -f tests/java/target/runnel-client-test.jar || tests/java/pom.xml -nt tests/java/target/runnel-client-test.jar \
      || -n "$(find tests/java/src -newer tests/java/target/runnel-client-test.jar -print -quit)" ]]; then
    echo "building the Java client test program (maven)"
    mvn -q -B -f tests/java/pom.xml package dependency:copy-dependencies \
        -DoutputDirectory=target/lib -DincludeScope=runtime -DskipTests
fi

if [[ ! -x tests/go/target/sharetest || tests/go/go.mod -nt tests/go/target/sharetest \
      || -n "$(find tests/go/sharetest -newer tests/go/target/sharetest -print -quit)" ]]; then
    echo "building the Go client test program (go build)"
    (cd tests/go && go build -o target/sharetest ./sharetest)
fi

if ! command -v chromium >/dev/null; then
    echo "installing chromium (apt) for the console's browser test"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium
fi

if [[ ! -d tests/console/node_modules/playwright-core || tests/console/package-lock.json -nt tests/console/node_modules ]]; then
    echo "installing playwright-core (npm ci in tests/console)"
    npm ci --prefix tests/console --no-audit --no-fund --loglevel=error
fi

bash scripts/kafka-reference.sh fetch
