package dev.runnel.clienttest;

import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Share-group (KIP-932) delivery-throughput benchmark for bench/share_groups.py: K KafkaShareConsumer threads
 * (kafka-clients 4.4.0) in one JVM, group G, topic T, explicit acknowledgement, every record accepted, until N
 * distinct records have been acknowledged (the broker confirmed the ACCEPT) by all consumers together. Prints one
 * JSON line and exits 0 (3 when --max-seconds passed first, 1 on a consumer error).
 *
 * <pre>
 *   share   --bootstrap H:P --group G --topic T --count N [--consumers K] [--commit sync|async|poll]
 *           [--max-poll-records M] [--max-seconds S] [--set GROUPCONFIG=V]... [--metrics yes]
 *           [--consumer-config KEY=VALUE]...   (extra KafkaShareConsumer configs, e.g. fetch.max.bytes=1048576)
 *   classic --bootstrap H:P --topic T --count N [--max-seconds S]   (one KafkaConsumer of partition 0 from
 *           its start, no group, no commits: the same topic's plain-consumer reference)
 * </pre>
 *
 * --commit: sync = commitSync() after every non-empty poll (an acknowledgement counts once commitSync returned
 * without error for its partition); async = commitAsync() after every poll; poll = no commit call, the
 * acknowledgements ride on the next ShareFetch. In async and poll mode acknowledgements count when the
 * AcknowledgementCommitCallback reports them without error. --set GROUPCONFIG=V (e.g.
 * share.auto.offset.reset=earliest) is applied to the group with Admin.incrementalAlterConfigs before the
 * consumers start (ShareTest.configure).
 *
 * With --max-seconds reached before N (exit 3, "capped":true), elapsed_s runs from the first record to the last
 * confirmed acknowledgement and records_per_s = acked / elapsed_s.
 *
 * Output: {"mode":"share","consumers":K,"commit":..,"count":N,"acked":A,"delivered":D,"duplicates":U,
 * "elapsed_s":E,"records_per_s":R,"first_record_s":F,"per_consumer":[..],"acked_per_consumer":[..],
 * "failed_acks":X,"ok":true}. E is the time from the first record any consumer received to the moment the N-th
 * distinct acknowledgement was confirmed, R = N / E; F is the time from the consumers' start to the first
 * record. U counts deliveries of an offset already delivered before (a record delivered twice), D all
 * deliveries. per_consumer: records each consumer was delivered. --metrics yes: before it, one line per
 * consumer {"metrics":I,"GROUP/NAME":value,...} with the client's numeric metrics (fetch latency, records per
 * request, acknowledgement rates...), the same names against both brokers.
 */
public final class ShareBench {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: share|classic --bootstrap H:P --topic T --count N ... (see ShareBench.java)");
            System.exit(2);
        }
        Map<String, List<String>> opt = new java.util.HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            opt.computeIfAbsent(args[i].replaceFirst("^--", ""), k -> new ArrayList<>()).add(args[i + 1]);
        }
        switch (args[0]) {
            case "share" -> System.exit(share(opt));
            case "classic" -> System.exit(classic(opt));
            default -> {
                System.err.println("unknown mode " + args[0]);
                System.exit(2);
            }
        }
    }

    // ----------------------------------------------------------------------------------------- state
    /** Offsets delivered at least once / acknowledged (partition 0 only: the benchmark's topic has one). */
    static final BitSet DELIVERED = new BitSet();
    static final BitSet ACKED = new BitSet();
    static long deliveries;
    static long duplicates;
    static long acked;
    static long failedAcks;
    static final AtomicLong FIRST_NS = new AtomicLong();
    static volatile long doneNs;
    static volatile long lastAckNs;
    static final AtomicBoolean STOP = new AtomicBoolean();
    static final AtomicReference<String> ERROR = new AtomicReference<>();

    static synchronized void delivered(long[] offsets, int n) {
        for (int i = 0; i < n; i++) {
            int o = (int) offsets[i];
            deliveries++;
            if (DELIVERED.get(o)) {
                duplicates++;
            } else {
                DELIVERED.set(o);
            }
        }
    }

    /** Counts newly acknowledged offsets; returns how many were new. Sets doneNs at the N-th. */
    static synchronized long ackedOffsets(Iterable<Long> offsets, long count) {
        long fresh = 0;
        for (long o : offsets) {
            if (!ACKED.get((int) o)) {
                ACKED.set((int) o);
                fresh++;
            }
        }
        acked += fresh;
        if (fresh > 0) {
            lastAckNs = System.nanoTime();
        }
        if (acked >= count && doneNs == 0) {
            doneNs = System.nanoTime();
            STOP.set(true);
        }
        return fresh;
    }

    static synchronized void failed(long n) {
        failedAcks += n;
    }

    static void firstRecord() {
        if (FIRST_NS.get() == 0) {
            FIRST_NS.compareAndSet(0, System.nanoTime());
        }
    }

    // ----------------------------------------------------------------------------------------- share
    static int share(Map<String, List<String>> opt) throws Exception {
        String bootstrap = ShareTest.one(opt, "bootstrap", null);
        String group = ShareTest.one(opt, "group", null);
        String topic = ShareTest.one(opt, "topic", null);
        int consumers = Integer.parseInt(ShareTest.one(opt, "consumers", "1"));
        long count = Long.parseLong(ShareTest.one(opt, "count", null));
        String commit = ShareTest.one(opt, "commit", "sync");
        String maxPoll = ShareTest.one(opt, "max-poll-records", "");
        boolean metrics = ShareTest.one(opt, "metrics", "no").equals("yes");
        long maxMs = (long) (Double.parseDouble(ShareTest.one(opt, "max-seconds", "120")) * 1000);
        if (!List.of("sync", "async", "poll").contains(commit)) {
            System.err.println("--commit sync|async|poll");
            return 2;
        }
        if (!ShareTest.all(opt, "set").isEmpty()) {
            // prints {"ev":"configured",...} on stdout; the driver takes the last line
            ShareTest.configure(opt);
        }

        long[] perConsumer = new long[consumers];
        long[] ackedPerConsumer = new long[consumers];
        long startNs = System.nanoTime();
        long deadline = startNs + TimeUnit.MILLISECONDS.toNanos(maxMs);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < consumers; i++) {
            final int idx = i;
            Thread t = new Thread(() -> {
                Properties p = new Properties();
                p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                p.put(ConsumerConfig.CLIENT_ID_CONFIG, "bench-" + idx);
                p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
                if (!maxPoll.isEmpty()) {
                    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPoll);
                }
                for (String kv : ShareTest.all(opt, "consumer-config")) {
                    p.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
                }
                try (KafkaShareConsumer<byte[], byte[]> c =
                         new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                    if (!commit.equals("sync")) {
                        c.setAcknowledgementCommitCallback((Map<TopicIdPartition, Set<Long>> offsets, Exception e) -> {
                            for (Set<Long> s : offsets.values()) {
                                if (e == null) {
                                    ackedPerConsumer[idx] += ackedOffsets(s, count);
                                } else {
                                    failed(s.size());
                                }
                            }
                        });
                    }
                    c.subscribe(List.of(topic));
                    long[] offs = new long[64];
                    while (!STOP.get() && System.nanoTime() < deadline) {
                        ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(100));
                        int n = recs.count();
                        if (n == 0) {
                            continue;
                        }
                        firstRecord();
                        if (offs.length < n) {
                            offs = new long[Math.max(n, offs.length * 2)];
                        }
                        int k = 0;
                        for (ConsumerRecord<byte[], byte[]> r : recs) {
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                            offs[k++] = r.offset();
                        }
                        perConsumer[idx] += n;
                        delivered(offs, n);
                        if (commit.equals("sync")) {
                            Map<TopicIdPartition, Optional<KafkaException>> res = c.commitSync(Duration.ofSeconds(30));
                            boolean ok = !res.isEmpty();
                            for (Optional<KafkaException> err : res.values()) {
                                ok &= err.isEmpty();
                            }
                            if (ok) {
                                List<Long> l = new ArrayList<>(n);
                                for (int j = 0; j < n; j++) {
                                    l.add(offs[j]);
                                }
                                ackedPerConsumer[idx] += ackedOffsets(l, count);
                            } else {
                                failed(n);
                            }
                        } else if (commit.equals("async")) {
                            c.commitAsync();
                        }
                    }
                    // the rest of this consumer's acknowledgements (callback modes), then leave
                    if (!commit.equals("sync")) {
                        c.commitSync(Duration.ofSeconds(10));
                    }
                    if (metrics) {
                        // the client's own view of its fetches (same names on both brokers)
                        StringBuilder m = new StringBuilder("{\"metrics\":" + idx);
                        c.metrics().forEach((name, metric) -> {
                            Object v = metric.metricValue();
                            if (v instanceof Double d && !d.isNaN() && !d.isInfinite()
                                    && name.tags().getOrDefault("topic", "").isEmpty()
                                    && !name.tags().containsKey("node-id")) {
                                m.append(',').append(ShareTest.q(name.group() + "/" + name.name())).append(':')
                                 .append(String.format("%.3f", d));
                            }
                        });
                        synchronized (System.out) {
                            System.out.println(m.append('}'));
                        }
                    }
                    c.close(Duration.ofSeconds(10));
                } catch (Throwable e) {
                    ERROR.compareAndSet(null, "bench-" + idx + ": " + e);
                    e.printStackTrace();
                    STOP.set(true);
                }
            }, "bench-" + idx);
            threads.add(t);
            t.start();
        }
        // the stop condition may be reached by a callback run while another thread is in poll()
        while (threads.stream().anyMatch(Thread::isAlive)) {
            if (System.nanoTime() > deadline) {
                STOP.set(true);
            }
            Thread.sleep(20);
        }
        return report("share", consumers, commit, count, startNs, perConsumer, ackedPerConsumer);
    }

    static synchronized int report(String mode, int consumers, String commit, long count, long startNs,
                                   long[] perConsumer, long[] ackedPerConsumer) {
        long first = FIRST_NS.get();
        boolean reached = doneNs != 0;
        // capped (--max-seconds before N): the rate of what was acknowledged, first record to last acknowledgement
        boolean some = first != 0 && lastAckNs > first;
        double elapsed = reached ? (doneNs - first) / 1e9 : some ? (lastAckNs - first) / 1e9 : Double.NaN;
        double rate = reached ? count / elapsed : some ? acked / elapsed : Double.NaN;
        StringBuilder b = new StringBuilder("{");
        b.append("\"mode\":").append(ShareTest.q(mode));
        b.append(",\"consumers\":").append(consumers);
        b.append(",\"commit\":").append(ShareTest.q(commit));
        b.append(",\"count\":").append(count);
        b.append(",\"acked\":").append(acked);
        b.append(",\"delivered\":").append(deliveries);
        b.append(",\"duplicates\":").append(duplicates);
        b.append(",\"failed_acks\":").append(failedAcks);
        b.append(",\"capped\":").append(!reached);
        b.append(",\"elapsed_s\":").append(reached || some ? String.format("%.4f", elapsed) : "null");
        b.append(",\"records_per_s\":").append(reached || some ? String.format("%.1f", rate) : "null");
        b.append(",\"first_record_s\":").append(first == 0 ? "null" : String.format("%.4f", (first - startNs) / 1e9));
        b.append(",\"per_consumer\":").append(java.util.Arrays.toString(perConsumer).replace(" ", ""));
        b.append(",\"acked_per_consumer\":").append(java.util.Arrays.toString(ackedPerConsumer).replace(" ", ""));
        b.append(",\"error\":").append(ShareTest.q(ERROR.get()));
        b.append(",\"ok\":").append(reached && ERROR.get() == null);
        b.append('}');
        System.out.println(b);
        System.out.flush();
        if (ERROR.get() != null) {
            return 1;
        }
        return reached ? 0 : 3;
    }

    // --------------------------------------------------------------------------------------- classic
    static int classic(Map<String, List<String>> opt) {
        String bootstrap = ShareTest.one(opt, "bootstrap", null);
        String topic = ShareTest.one(opt, "topic", null);
        long count = Long.parseLong(ShareTest.one(opt, "count", null));
        long maxMs = (long) (Double.parseDouble(ShareTest.one(opt, "max-seconds", "120")) * 1000);
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "bench-classic");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        long startNs = System.nanoTime();
        long deadline = startNs + TimeUnit.MILLISECONDS.toNanos(maxMs);
        long[] per = new long[1];
        try (KafkaConsumer<byte[], byte[]> c =
                 new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long[] offs = new long[64];
            while (doneNs == 0 && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(100));
                int n = recs.count();
                if (n == 0) {
                    continue;
                }
                firstRecord();
                if (offs.length < n) {
                    offs = new long[Math.max(n, offs.length * 2)];
                }
                int k = 0;
                List<Long> l = new ArrayList<>(n);
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    offs[k++] = r.offset();
                    l.add(r.offset());
                }
                per[0] += n;
                delivered(offs, n);
                ackedOffsets(l, count); // "acknowledged" = consumed, for the same stop condition
            }
        } catch (Throwable e) {
            ERROR.compareAndSet(null, "classic: " + e);
            e.printStackTrace();
        }
        return report("classic", 1, "none", count, startNs, per, per.clone());
    }
}
