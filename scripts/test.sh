#!/usr/bin/env bash
# Runnel's whole test suite. Run from anywhere; works on a fresh Debian machine with Rust, Python+pip,
# Java 17+Maven and apt. Installs (idempotently) what the tests need, builds, runs every test.
#
#   bash scripts/test.sh                 everything
#   bash scripts/test.sh -k pitfall      extra arguments go to pytest
#
# Environment:
#   RUNNEL_SKIP_INSTALL=1        skip the apt/pip/maven install step
#   RUNNEL_TEST_BOOTSTRAP=h:p    run the Python tests against an external broker (e.g. Apache Kafka)
#   RUNNEL_TEST_BROKER=kafka     run the Python tests against Apache Kafka 4.4.0 started by the fixtures
#   RUNNEL_TEST_RECORDS=N        records per client/codec round trip (default 100000)
#   RUNNEL_TEST_FULL=1           long tests in full instead of their bounded CI versions (test_quotas.py: the 1 MB/s
#                                producer measured over 30 s with Kafka's 11 quota windows instead of 12 s with 4);
#                                the fault tests have their own knobs (TXN_FAULT_ROUNDS, RUNNEL_STREAMS_SENTENCES)
#   RUNNEL_CAMPAIGN_SMOKE=0      skip the fault campaign smoke (one round of each class that needs no root,
#                                unprivileged, in a temp dir; the full campaign: reliability/README.md)
#   RUNNEL_LIBRDKAFKA_TESTS=1    also build and run librdkafka's own test suite (scripts/librdkafka-tests.sh,
#                                ~8 min to build on 2 cores the first time): the default suite, a subset of
#                                SUITE=txn, then a subset of SUITE=security over SASL_SSL and SSL
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

step() { printf '\n==> %s (%s)\n' "$*" "$(date +%T)"; }

# A hung test must fail the run with a clear message, not eat the CI budget.
bounded() {
    local limit="$1"
    shift
    local rc=0
    timeout --signal=TERM --kill-after=30 "$limit" "$@" || rc=$?
    if [[ $rc == 124 || $rc == 137 ]]; then
        echo "TIMEOUT: '$*' did not finish within $limit s" >&2
    fi
    return "$rc"
}

if [[ "${RUNNEL_SKIP_INSTALL:-0}" != 1 ]]; then
    step "install test dependencies"
    bash scripts/install-test-deps.sh
fi

if [[ -z "${RUNNEL_TEST_BOOTSTRAP:-}" && "${RUNNEL_TEST_BROKER:-runnel}" == runnel ]]; then
    step "cargo build --release --workspace --all-targets"
    # One feature resolution for the broker binary and the test binaries (see .ci/run), so `cargo test` below
    # reuses this build instead of recompiling the workspace with the dev-dependencies' features.
    cargo build --release --workspace --all-targets
    step "cargo test --workspace --release"
    bounded "${RUNNEL_CARGO_TEST_TIMEOUT:-1500}" cargo test --workspace --release
fi

step "python -m pytest tests/ -v"
bounded "${RUNNEL_PYTEST_TIMEOUT:-1800}" python3 -m pytest tests/ -v --durations=25 "$@"

if [[ -z "${RUNNEL_TEST_BOOTSTRAP:-}" && "${RUNNEL_TEST_BROKER:-runnel}" == runnel \
      && "${RUNNEL_CAMPAIGN_SMOKE:-1}" == 1 ]]; then
    step "fault campaign smoke (reliability/, one round per unprivileged class)"
    smoke_dir="$(mktemp -d)"
    RUNNEL_CAMPAIGN_DIR="$smoke_dir/work" bounded 900 python3 reliability/campaign.py --unprivileged \
        --classes kill9_leader,kill9_controller,sigstop_leader,kill_two_of_three,coordinator_kill,rolling_restart,kill9_quick_restart \
        --rounds 1 --seed 1 --max-minutes 12 --fail-on-error --out "$smoke_dir/results"
    rm -rf "$smoke_dir"
fi

if [[ "${RUNNEL_LIBRDKAFKA_TESTS:-0}" == 1 ]]; then
    step "librdkafka's own integration tests"
    if [[ -n "${RUNNEL_TEST_BOOTSTRAP:-}" ]]; then
        bash scripts/librdkafka-tests.sh "$RUNNEL_TEST_BOOTSTRAP"
    elif [[ "${RUNNEL_TEST_BROKER:-runnel}" == kafka ]]; then
        bash scripts/librdkafka-tests.sh --kafka
    else
        bash scripts/librdkafka-tests.sh --runnel
    fi
    step "librdkafka's transactions tests (SUITE=txn, CI subset)"
    txn_target="${RUNNEL_TEST_BOOTSTRAP:---runnel}"
    [[ -z "${RUNNEL_TEST_BOOTSTRAP:-}" && "${RUNNEL_TEST_BROKER:-runnel}" == kafka ]] && txn_target=--kafka
    bounded 600 env SUITE=txn TXN_SUBSET=ci bash scripts/librdkafka-tests.sh "$txn_target"
    if [[ -z "${RUNNEL_TEST_BOOTSTRAP:-}" ]]; then
        step "librdkafka's tests over SASL_SSL and SSL (SUITE=security, CI subset)"
        broker_flag=--runnel
        [[ "${RUNNEL_TEST_BROKER:-runnel}" == kafka ]] && broker_flag=--kafka
        bounded 600 env SUITE=security SECURITY_SUBSET=ci bash scripts/librdkafka-tests.sh "$broker_flag"
    fi
fi
