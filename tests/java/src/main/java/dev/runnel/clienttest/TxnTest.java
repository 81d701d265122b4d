package dev.runnel.clienttest;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactions (KIP-98 / KIP-447) with kafka-clients 4.4.0; driven by tests/test_java_transactions.py.
 *
 * <pre>
 *   commit-abort --bootstrap H:P --topic T        commit, abort, commit; read_committed sees exactly the committed
 *   fence        --bootstrap H:P --topic T        a second instance of the transactional.id fences the first
 *   ctp          --bootstrap H:P --topic T        consume-transform-produce with sendOffsetsToTransaction
 *   timeout      --bootstrap H:P --topic T        the coordinator aborts a transaction past transaction.timeout.ms
 * </pre>
 *
 * Topics are created beforehand by the test (one partition each; ctp uses T-in and T-out). Each scenario prints
 * "OK scenario" and exits 0, or prints what differed and exits 1. Every wait is bounded by --timeout-ms.
 */
public final class TxnTest {
    static String bootstrap;
    static long timeoutMs;

    public static void main(String[] args) throws Exception {
        Map<String, String> opt = new HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            opt.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        if (args.length < 1 || !opt.containsKey("bootstrap") || !opt.containsKey("topic")) {
            System.err.println("usage: commit-abort|fence|ctp|timeout --bootstrap H:P --topic T [--timeout-ms MS]");
            System.exit(2);
        }
        bootstrap = opt.get("bootstrap");
        timeoutMs = Long.parseLong(opt.getOrDefault("timeout-ms", "60000"));
        String topic = opt.get("topic");
        switch (args[0]) {
            case "commit-abort" -> commitAbort(topic);
            case "fence" -> fence(topic);
            case "ctp" -> ctp(topic);
            case "timeout" -> timeout(topic);
            default -> fail("unknown scenario " + args[0]);
        }
        System.out.println("OK " + args[0]);
    }

    static void fail(String why) {
        System.out.println("FAIL " + why);
        System.out.flush();
        System.exit(1);
    }

    static void check(boolean ok, String why) {
        if (!ok) {
            fail(why);
        }
    }

    static KafkaProducer<String, String> txnProducer(String txnId, int txnTimeoutMs) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, Integer.toString(txnTimeoutMs));
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(timeoutMs));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(timeoutMs));
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(Math.min(timeoutMs, 30000)));
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        producer.initTransactions();
        return producer;
    }

    static KafkaConsumer<String, String> consumer(String isolation, String group) {
        return consumer(isolation, group, 500);
    }

    static KafkaConsumer<String, String> consumer(String isolation, String group, int maxPollRecords) {
        Properties p = new Properties();
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(maxPollRecords));
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Long.toString(timeoutMs));
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    /** Every value of partition 0 from offset 0 up to the end offset for `isolation` (the LSO for read_committed). */
    static List<String> readAll(String topic, String isolation) {
        TopicPartition tp = new TopicPartition(topic, 0);
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(isolation, null)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (c.position(tp) < end) {
                check(System.currentTimeMillis() < deadline,
                      isolation + " read of " + topic + " stuck at " + c.position(tp) + " of " + end + ": " + out);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.add(r.value());
                }
            }
        }
        return out;
    }

    static long endOffset(String topic, String isolation) {
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = consumer(isolation, null)) {
            return c.endOffsets(List.of(tp)).get(tp);
        }
    }

    static void sendAll(KafkaProducer<String, String> p, String topic, String prefix, int n) {
        for (int i = 0; i < n; i++) {
            p.send(new ProducerRecord<>(topic, 0, null, prefix + i));
        }
    }

    static List<String> names(String prefix, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(prefix + i);
        }
        return out;
    }

    /** Commit, abort, commit: read_committed sees exactly the committed records in order, read_uncommitted all. */
    static void commitAbort(String topic) {
        try (KafkaProducer<String, String> p = txnProducer("tx-" + topic, 60000)) {
            p.beginTransaction();
            sendAll(p, topic, "a", 5);
            p.commitTransaction();
            p.beginTransaction();
            sendAll(p, topic, "b", 5);
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            sendAll(p, topic, "c", 5);
            p.commitTransaction();
        }
        List<String> want = names("a", 5);
        want.addAll(names("c", 5));
        List<String> got = readAll(topic, "read_committed");
        check(got.equals(want), "read_committed saw " + got + ", want " + want);
        List<String> all = names("a", 5);
        all.addAll(names("b", 5));
        all.addAll(names("c", 5));
        got = readAll(topic, "read_uncommitted");
        check(got.equals(all), "read_uncommitted saw " + got + ", want " + all);
        // 15 records and 3 markers
        check(endOffset(topic, "read_committed") == 18, "LSO " + endOffset(topic, "read_committed") + ", want 18");
    }

    /** A second instance of the transactional.id aborts the first one's open transaction and fences it. */
    static void fence(String topic) {
        String txnId = "tx-" + topic;
        KafkaProducer<String, String> first = txnProducer(txnId, 60000);
        first.beginTransaction();
        first.send(new ProducerRecord<>(topic, 0, null, "zombie"));
        first.flush();
        try (KafkaProducer<String, String> second = txnProducer(txnId, 60000)) {
            second.beginTransaction();
            second.send(new ProducerRecord<>(topic, 0, null, "live"));
            second.commitTransaction();
            Throwable thrown = null;
            try {
                first.commitTransaction();
            } catch (KafkaException e) {
                thrown = e;
            }
            check(thrown instanceof ProducerFencedException,
                  "the fenced producer's commit threw " + thrown + ", want ProducerFencedException");
            System.out.println("fenced: " + thrown);
            thrown = null;
            try {
                first.beginTransaction();
            } catch (KafkaException e) {
                thrown = e;
            }
            check(thrown != null, "the fenced producer could begin another transaction");
            // The second instance keeps working.
            second.beginTransaction();
            second.send(new ProducerRecord<>(topic, 0, null, "live2"));
            second.commitTransaction();
        } finally {
            first.close(Duration.ZERO);
        }
        List<String> got = readAll(topic, "read_committed");
        check(got.equals(List.of("live", "live2")), "read_committed saw " + got + ", want [live, live2]");
    }

    /**
     * Consume-transform-produce: a group member (subscribe, classic protocol) copies T-in to T-out upper-cased,
     * one transaction per poll with sendOffsetsToTransaction(offsets, consumer.groupMetadata()); the second
     * transaction is aborted and its records re-read. Afterwards T-out holds each input once, in order, and the
     * group's committed offset is the input's end.
     */
    static void ctp(String topic) throws Exception {
        String src = topic + "-in";
        String dst = topic + "-out";
        String group = "g-" + topic;
        int n = 40;
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (KafkaProducer<String, String> plain = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            sendAll(plain, src, "m", n);
            plain.flush();
        }
        TopicPartition in = new TopicPartition(src, 0);
        int txns = 0;
        int aborted = 0;
        try (KafkaProducer<String, String> p = txnProducer("tx-" + topic, 60000);
             KafkaConsumer<String, String> c = consumer("read_committed", group, 7)) {
            c.subscribe(List.of(src));
            long done = 0;
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (done < n) {
                check(System.currentTimeMillis() < deadline, "consume-transform-produce stuck at " + done + " of " + n);
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) {
                    continue;
                }
                p.beginTransaction();
                long first = -1;
                long next = -1;
                for (ConsumerRecord<String, String> r : recs) {
                    if (first < 0) {
                        first = r.offset();
                    }
                    p.send(new ProducerRecord<>(dst, 0, null, r.value().toUpperCase()));
                    next = r.offset() + 1;
                }
                p.sendOffsetsToTransaction(Map.of(in, new OffsetAndMetadata(next)), c.groupMetadata());
                txns++;
                if (txns == 2) {
                    p.abortTransaction();
                    aborted++;
                    c.seek(in, first);
                } else {
                    p.commitTransaction();
                    done = next;
                }
            }
        }
        check(aborted == 1, "no transaction was aborted (" + txns + " transactions)");
        List<String> want = new ArrayList<>();
        for (String s : names("m", n)) {
            want.add(s.toUpperCase());
        }
        List<String> got = readAll(dst, "read_committed");
        check(got.equals(want), "read_committed output " + got + ", want " + want);
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(committed.containsKey(in) && committed.get(in).offset() == n,
                  "committed offsets " + committed + ", want " + src + "-0 at " + n);
        }
        try (KafkaConsumer<String, String> c = consumer("read_committed", group)) {
            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(Set.of(in));
            check(committed.get(in) != null && committed.get(in).offset() == n,
                  "consumer.committed " + committed + ", want " + n);
        }
        System.out.println("transactions " + txns + ", aborted " + aborted);
    }

    /** The coordinator aborts a transaction open longer than transaction.timeout.ms; its producer is fenced. */
    static void timeout(String topic) throws Exception {
        String txnId = "tx-" + topic;
        KafkaProducer<String, String> p = txnProducer(txnId, 1500);
        long started = System.currentTimeMillis();
        try {
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, null, "abandoned"));
            p.flush();
            // The abort marker moves the LSO past the record (record + marker = 2).
            long deadline = System.currentTimeMillis() + timeoutMs;
            long lso;
            while ((lso = endOffset(topic, "read_committed")) != 2) {
                check(System.currentTimeMillis() < deadline, "the timed-out transaction was not aborted (LSO " + lso + ")");
                Thread.sleep(200);
            }
            System.out.println("aborted after " + (System.currentTimeMillis() - started) + " ms");
            check(readAll(topic, "read_committed").isEmpty(), "read_committed sees the aborted record");
            Throwable thrown = null;
            try {
                p.commitTransaction();
            } catch (KafkaException e) {
                thrown = e;
            }
            check(thrown != null, "the timed-out transaction committed");
            System.out.println("late commit: " + thrown);
        } finally {
            p.close(Duration.ZERO);
        }
        try (KafkaProducer<String, String> again = txnProducer(txnId, 60000)) {
            again.beginTransaction();
            again.send(new ProducerRecord<>(topic, 0, null, "after"));
            again.commitTransaction();
        }
        List<String> got = readAll(topic, "read_committed");
        check(got.equals(List.of("after")), "read_committed saw " + got + ", want [after]");
    }
}
