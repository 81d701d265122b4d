# Transaction rows of bench/run.sh (issue 15), sourced by it: needs its run_bench, run_bench_retry, order,
# ensure_disk, bytes_for, count_for, delete_everywhere, finish, BROKERS, REPS, QUICK and RUN.
#
# Per repetition: 100 B records to 8 partitions with acks=all, produced by the same producer without
# transactions and with one transaction committed every 100 ms (`runnel bench produce --txn-ms 100`); then
# the transactional topic consumed from the page cache with read_uncommitted and with read_committed
# (`-X isolation.level=read_committed`). Runnel and Kafka alternate with the order flipped every run.
# Targets (issue 15): transactional produce ≥ 0.9× the same producer without transactions; read_committed
# consume ≥ 0.95× read_uncommitted; both beside Kafka's figures from the same run.

txn_rows() {
    local rep mode b n topic parts=8
    n=$(count_for 100)
    for rep in $(seq 1 "$REPS"); do
        for mode in plain txn; do
            topic="txn-$mode-$rep"
            local extra=()
            [[ $mode == txn ]] && extra=(--txn-ms 100)
            for b in $(order $RUN); do
                [[ $b == peer ]] && continue   # a --peer may not have transactions
                ensure_disk "$(bytes_for 100 "$n")"
                run_bench "$b" "txn-produce:$mode" produce -t "$topic" --partitions "$parts" -s 100 -n "$n" \
                    --acks all -z none "${extra[@]}"
            done
            RUN=$((RUN + 1))
        done
        for mode in read_uncommitted read_committed; do
            for b in $(order $RUN); do
                [[ $b == peer ]] && continue
                BENCH_X=(-X "isolation.level=$mode")
                run_bench_retry "$b" "txn-consume:$mode" consume -t "txn-txn-$rep" --partitions "$parts"
                BENCH_X=()
            done
            RUN=$((RUN + 1))
        done
        delete_everywhere "txn-plain-$rep"
        delete_everywhere "txn-txn-$rep"
        finish "in progress: repetition $rep of $REPS of the transaction rows done"
    done
}
