package dev.runnel.clienttest;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Share-group (KIP-932) driver for tests/test_share_groups.py: KafkaShareConsumer (kafka-clients 4.4.0) in
 * explicit acknowledgement mode, plus the Admin calls the tests need. Every event is one JSON line on stdout
 * (flushed), so the test can follow a running process through a file.
 *
 * <pre>
 *   consume  --bootstrap H:P --group G --topic T [--consumers K] [--ack POLICY] [--rule VALUE=POLICY]...
 *            [--count N] [--until VALUE] [--max-seconds S] [--commit sync|async|poll]
 *            [--max-poll-records M] [--set GROUPCONFIG=V]... [--client-id PREFIX] [--watch-members yes]
 *            [--ack-delay-ms MS]
 *   configure --bootstrap H:P --group G --set GROUPCONFIG=V...  (a refusal: {"ev":"configure-error"}, exit 4)
 *   offsets  --bootstrap H:P --group G        (Admin.listShareGroupOffsets: start offset per partition)
 *   describe --bootstrap H:P --group G        (Admin.describeShareGroups: state and members)
 * </pre>
 *
 * POLICY, for each delivered record (a --rule for the record's value wins over --ack):
 *   accept | release | reject      acknowledge it so, every time it is delivered
 *   release-first                  release it when its delivery count is 1, accept it afterwards
 *   hold                           do not acknowledge: print {"ev":"holding"} and block until killed
 * --ack-delay-ms MS sleeps MS before acknowledging a poll's records when one of them is a first delivery
 * (to acknowledge after the acquisition lock expired).
 *
 * Events: {"ev":"subscribed","c":ID} once per consumer; {"ev":"rec","c","p","o","dc","v"} for every record a
 * poll returned (dc: record.deliveryCount()); {"ev":"ack","c","p","o","type","ok"[,"err"]} once the broker
 * answered the acknowledgement of that record (commitSync's result in --commit sync; the
 * AcknowledgementCommitCallback otherwise); {"ev":"configured"}; {"ev":"done","accepted":N} at the end, or
 * {"ev":"lock","c","ms"} after a consumer's first records (acquisitionLockTimeoutMs()),
 * {"ev":"timeout"} (exit 3) when --max-seconds passed first. Stop conditions: --count N accepted (confirmed
 * ACCEPT acks, all consumers together) and/or --until VALUE accepted (both, when both are given), --max-seconds
 * (exit 0 with neither condition: the consumers run until then).
 *
 * --set GROUPCONFIG=V are group configs (ConfigResource.Type.GROUP, incrementalAlterConfigs SET) applied
 * before the consumers start: share.auto.offset.reset, share.record.lock.duration.ms, share.delivery.count.limit.
 */
public final class ShareTest {
    private static final PrintStream OUT = System.out;

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage();
        }
        Map<String, List<String>> opt = new HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            opt.computeIfAbsent(args[i].replaceFirst("^--", ""), k -> new ArrayList<>()).add(args[i + 1]);
        }
        switch (args[0]) {
            case "consume" -> System.exit(consume(opt));
            case "configure" -> {
                try {
                    configure(opt);
                } catch (java.util.concurrent.ExecutionException e) {
                    emit("ev", "configure-error", "error", e.getCause().toString());
                    System.exit(4);
                }
                System.exit(0);
            }
            case "offsets" -> {
                offsets(opt);
                System.exit(0);
            }
            case "describe" -> {
                describe(opt);
                System.exit(0);
            }
            default -> usage();
        }
    }

    private static void usage() {
        System.err.println("usage: consume|configure|offsets|describe --bootstrap H:P --group G ... (see ShareTest.java)");
        System.exit(2);
    }

    static String one(Map<String, List<String>> opt, String key, String dflt) {
        List<String> v = opt.get(key);
        if (v == null || v.isEmpty()) {
            if (dflt == null) {
                System.err.println("missing --" + key);
                System.exit(2);
            }
            return dflt;
        }
        return v.get(v.size() - 1);
    }

    static List<String> all(Map<String, List<String>> opt, String key) {
        return opt.getOrDefault(key, List.of());
    }

    // ------------------------------------------------------------------------------------------- output
    static String q(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (ch < 0x20) {
                        b.append(String.format("\\u%04x", (int) ch));
                    } else {
                        b.append(ch);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    /** One JSON line; values are numbers, booleans or strings (quoted here). */
    static void emit(Object... kv) {
        StringBuilder b = new StringBuilder("{");
        for (int i = 0; i + 1 < kv.length; i += 2) {
            if (i > 0) {
                b.append(',');
            }
            b.append(q((String) kv[i])).append(':');
            Object v = kv[i + 1];
            if (v == null) {
                b.append("null");
            } else if (v instanceof Number || v instanceof Boolean) {
                b.append(v);
            } else {
                b.append(q(v.toString()));
            }
        }
        b.append('}');
        synchronized (OUT) {
            OUT.println(b);
            OUT.flush();
        }
    }

    // -------------------------------------------------------------------------------------------- admin
    static Admin admin(Map<String, List<String>> opt) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, one(opt, "bootstrap", null));
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        return Admin.create(p);
    }

    static void configure(Map<String, List<String>> opt) throws Exception {
        List<String> sets = all(opt, "set");
        if (sets.isEmpty()) {
            return;
        }
        String group = one(opt, "group", null);
        List<AlterConfigOp> ops = new ArrayList<>();
        for (String s : sets) {
            int eq = s.indexOf('=');
            ops.add(new AlterConfigOp(new ConfigEntry(s.substring(0, eq), s.substring(eq + 1)), AlterConfigOp.OpType.SET));
        }
        try (Admin admin = admin(opt)) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(res, ops)).all().get(30, TimeUnit.SECONDS);
        }
        emit("ev", "configured", "group", group, "sets", String.join(",", sets));
    }

    static void offsets(Map<String, List<String>> opt) throws Exception {
        String group = one(opt, "group", null);
        try (Admin admin = admin(opt)) {
            Map<TopicPartition, SharePartitionOffsetInfo> offs = admin
                .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
                .partitionsToOffsetInfo(group).get(30, TimeUnit.SECONDS);
            for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : offs.entrySet()) {
                SharePartitionOffsetInfo info = e.getValue();
                emit("ev", "offset", "t", e.getKey().topic(), "p", e.getKey().partition(),
                     "start", info == null ? null : info.startOffset(),
                     "lag", info == null ? null : info.lag().orElse(null));
            }
        }
        emit("ev", "done");
    }

    static void describe(Map<String, List<String>> opt) throws Exception {
        String group = one(opt, "group", null);
        try (Admin admin = admin(opt)) {
            ShareGroupDescription d = admin.describeShareGroups(List.of(group)).describedGroups().get(group)
                .get(30, TimeUnit.SECONDS);
            emit("ev", "group", "group", d.groupId(), "state", d.groupState().toString(),
                 "members", d.members().size(), "epoch", d.groupEpoch());
            d.members().forEach(m -> emit("ev", "member", "id", m.consumerId(), "client", m.clientId(),
                "partitions", m.assignment().topicPartitions().size()));
        }
    }

    // ------------------------------------------------------------------------------------------ consume
    enum Policy { ACCEPT, RELEASE, REJECT, RELEASE_FIRST, HOLD }

    static Policy policy(String s) {
        return Policy.valueOf(s.toUpperCase().replace('-', '_'));
    }

    static int consume(Map<String, List<String>> opt) throws Exception {
        String bootstrap = one(opt, "bootstrap", null);
        String group = one(opt, "group", null);
        String topic = one(opt, "topic", null);
        int consumers = Integer.parseInt(one(opt, "consumers", "1"));
        Policy dflt = policy(one(opt, "ack", "accept"));
        Map<String, Policy> rules = new HashMap<>();
        for (String r : all(opt, "rule")) {
            int eq = r.lastIndexOf('=');
            rules.put(r.substring(0, eq), policy(r.substring(eq + 1)));
        }
        long count = Long.parseLong(one(opt, "count", "0"));
        String until = one(opt, "until", "");
        long maxMs = (long) (Double.parseDouble(one(opt, "max-seconds", "60")) * 1000);
        String commit = one(opt, "commit", "sync");
        String maxPoll = one(opt, "max-poll-records", "");
        String clientPrefix = one(opt, "client-id", "share");
        long ackDelayMs = Long.parseLong(one(opt, "ack-delay-ms", "0"));

        configure(opt);
        // --watch-members yes: report the group's members (Admin.describeShareGroups) until all consumers are in
        // it with an assignment, as {"ev":"members","n":N,"assigned":A}, so the test can produce afterwards.
        Admin watch = one(opt, "watch-members", "no").equals("yes") ? admin(opt) : null;

        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger accepted = ACCEPTED;
        AtomicBoolean untilSeen = UNTIL_SEEN;
        UNTIL = until;
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(maxMs);

        for (int i = 0; i < consumers; i++) {
            String cid = clientPrefix + "-" + i;
            Thread t = new Thread(() -> {
                Properties p = new Properties();
                p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                p.put(ConsumerConfig.CLIENT_ID_CONFIG, cid);
                p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
                if (!maxPoll.isEmpty()) {
                    p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPoll);
                }
                // what each record was acknowledged as, until the broker answers (callback modes)
                Map<String, AcknowledgeType> pending = new ConcurrentHashMap<>();
                try (KafkaShareConsumer<String, String> c =
                         new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
                    if (!commit.equals("sync")) {
                        c.setAcknowledgementCommitCallback((Map<TopicIdPartition, Set<Long>> offsets, Exception e) -> {
                            for (Map.Entry<TopicIdPartition, Set<Long>> en : offsets.entrySet()) {
                                for (long o : en.getValue()) {
                                    AcknowledgeType type = pending.remove(en.getKey().partition() + ":" + o);
                                    acked(cid, en.getKey().partition(), o, type, e);
                                }
                            }
                        });
                    }
                    c.subscribe(List.of(topic));
                    emit("ev", "subscribed", "c", cid);
                    boolean lockReported = false;
                    while (!stop.get()) {
                        ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(100));
                        // every record of this poll: (partition, offset, type, value)
                        Map<Integer, List<Object[]>> batch = new LinkedHashMap<>();
                        if (ackDelayMs > 0) {
                            boolean first = false;
                            for (ConsumerRecord<String, String> r : recs) {
                                first |= r.deliveryCount().orElse((short) 1) <= 1;
                            }
                            if (first) {
                                // --ack-delay-ms: hold a first delivery past its acquisition lock, then acknowledge
                                Thread.sleep(ackDelayMs);
                            }
                        }
                        for (ConsumerRecord<String, String> r : recs) {
                            Optional<Short> dc = r.deliveryCount();
                            emit("ev", "rec", "c", cid, "p", r.partition(), "o", r.offset(),
                                 "dc", dc.map(Short::intValue).orElse(-1), "v", r.value());
                            Policy pol = rules.getOrDefault(r.value(), dflt);
                            AcknowledgeType type = switch (pol) {
                                case ACCEPT -> AcknowledgeType.ACCEPT;
                                case RELEASE -> AcknowledgeType.RELEASE;
                                case REJECT -> AcknowledgeType.REJECT;
                                case RELEASE_FIRST -> dc.orElse((short) 1) <= 1 ? AcknowledgeType.RELEASE
                                                                                : AcknowledgeType.ACCEPT;
                                case HOLD -> null;
                            };
                            if (type == null) {
                                emit("ev", "holding", "c", cid, "p", r.partition(), "o", r.offset());
                                continue;
                            }
                            c.acknowledge(r, type);
                            pending.put(r.partition() + ":" + r.offset(), type);
                            VALUES.put(r.partition() + ":" + r.offset(), String.valueOf(r.value()));
                            batch.computeIfAbsent(r.partition(), k -> new ArrayList<>())
                                 .add(new Object[] {r.partition(), r.offset(), type});
                        }
                        if (!recs.isEmpty() && !lockReported) {
                            // the group's share.record.lock.duration.ms, as ShareFetch told the client
                            lockReported = true;
                            emit("ev", "lock", "c", cid, "ms", c.acquisitionLockTimeoutMs().orElse(-1));
                        }
                        if (recs.isEmpty()) {
                            if (System.nanoTime() > deadline) {
                                break;
                            }
                            continue;
                        }
                        if (rules.containsValue(Policy.HOLD) || dflt == Policy.HOLD) {
                            boolean held = false;
                            for (ConsumerRecord<String, String> r : recs) {
                                held |= rules.getOrDefault(r.value(), dflt) == Policy.HOLD;
                            }
                            if (held) {
                                // Acquired and never acknowledged: block until the test kills this process.
                                while (true) {
                                    Thread.sleep(60_000);
                                }
                            }
                        }
                        if (commit.equals("sync")) {
                            Map<TopicIdPartition, Optional<KafkaException>> res = c.commitSync(Duration.ofSeconds(30));
                            Map<Integer, Exception> byPartition = new HashMap<>();
                            res.forEach((tip, err) -> byPartition.put(tip.partition(), err.orElse(null)));
                            for (Map.Entry<Integer, List<Object[]>> b : batch.entrySet()) {
                                Exception err = byPartition.containsKey(b.getKey()) ? byPartition.get(b.getKey())
                                    : new KafkaException("commitSync returned no result for partition " + b.getKey());
                                for (Object[] a : b.getValue()) {
                                    pending.remove(a[0] + ":" + a[1]);
                                    acked(cid, (int) a[0], (long) a[1], (AcknowledgeType) a[2], err);
                                }
                            }
                        } else if (commit.equals("async")) {
                            c.commitAsync();
                        }
                        if (reached(count, until)) {
                            stop.set(true);
                        }
                        if (System.nanoTime() > deadline) {
                            break;
                        }
                    }
                    if (!commit.equals("sync")) {
                        c.commitSync(Duration.ofSeconds(30)); // the last acknowledgements, through the callback
                    }
                    c.close(Duration.ofSeconds(30));
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                    emit("ev", "error", "c", cid, "error", e.toString());
                    e.printStackTrace();
                    stop.set(true);
                }
            }, cid);
            threads.add(t);
            t.start();
        }
        // The stop conditions are also checked here: an acknowledgement confirmed through the callback
        // (in another consumer's thread) ends every consumer.
        while (true) {
            boolean alive = false;
            for (Thread t : threads) {
                alive |= t.isAlive();
            }
            if (!alive) {
                break;
            }
            if (reached(count, until)) {
                stop.set(true);
            }
            if (System.nanoTime() > deadline) {
                stop.set(true);
            }
            if (watch != null) {
                watch = watchMembers(watch, group, consumers);
            }
            Thread.sleep(watch != null ? 200 : 20);
        }
        if (watch != null) {
            watch.close();
        }
        boolean reached = reached(count, until);
        if (!failures.isEmpty()) {
            return 1;
        }
        if (!reached && (count > 0 || !until.isEmpty())) {
            emit("ev", "timeout", "accepted", accepted.get());
            return 3;
        }
        emit("ev", "done", "accepted", accepted.get());
        return 0;
    }

    /** Both stop conditions given hold (--count N accepted and --until VALUE accepted). */
    static boolean reached(long count, String until) {
        if (count <= 0 && until.isEmpty()) {
            return false;
        }
        return (count <= 0 || ACCEPTED.get() >= count) && (until.isEmpty() || UNTIL_SEEN.get());
    }

    static int lastMembers = -1;
    static int lastAssigned = -1;

    /** One describe of the group; null (stop watching) once every consumer is a member with partitions. */
    static Admin watchMembers(Admin admin, String group, int consumers) {
        try {
            ShareGroupDescription d = admin.describeShareGroups(List.of(group)).describedGroups().get(group)
                .get(10, TimeUnit.SECONDS);
            int n = d.members().size();
            int assigned = (int) d.members().stream()
                .filter(m -> !m.assignment().topicPartitions().isEmpty()).count();
            if (n != lastMembers || assigned != lastAssigned) {
                lastMembers = n;
                lastAssigned = assigned;
                emit("ev", "members", "n", n, "assigned", assigned, "state", d.groupState().toString());
            }
            if (n == consumers && assigned == consumers) {
                admin.close();
                return null;
            }
        } catch (Exception e) {
            emit("ev", "describe-error", "error", e.toString());
        }
        return admin;
    }

    static final AtomicInteger ACCEPTED = new AtomicInteger();
    static final AtomicBoolean UNTIL_SEEN = new AtomicBoolean();
    static volatile String UNTIL = "";
    /** "partition:offset" -> value of every record delivered (the callback names offsets only). */
    static final Map<String, String> VALUES = new ConcurrentHashMap<>();

    static void acked(String cid, int partition, long offset, AcknowledgeType type, Exception e) {
        if (e == null) {
            emit("ev", "ack", "c", cid, "p", partition, "o", offset, "type", String.valueOf(type), "ok", true);
            if (type == AcknowledgeType.ACCEPT) {
                ACCEPTED.incrementAndGet();
                if (!UNTIL.isEmpty() && UNTIL.equals(VALUES.get(partition + ":" + offset))) {
                    UNTIL_SEEN.set(true);
                }
            }
        } else {
            emit("ev", "ack", "c", cid, "p", partition, "o", offset, "type", String.valueOf(type), "ok", false,
                 "err", e.toString());
        }
    }
}
