package dev.runnel.clienttest;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Produces / consumes the deterministic test records of tests/records.py with the Java client.
 *
 * <pre>
 *   produce --bootstrap H:P --topic T --count N --seed S [--codec none|gzip|snappy|lz4|zstd] [--acks all|1|0]
 *   consume --bootstrap H:P --topic T --count N --out FILE [--timeout-ms MS]
 * </pre>
 *
 * produce sends records 0..N-1 to partition 0 in order (idempotent, one in-flight ordering guaranteed) and
 * prints "produced N". consume reads partition 0 from the beginning until N records arrived and writes one
 * canonical line per record (records.py's canonical()) to FILE, then prints "consumed N".
 */
public final class ClientTest {
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage();
        }
        Map<String, String> opt = new HashMap<>();
        for (int i = 1; i + 1 < args.length; i += 2) {
            opt.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        switch (args[0]) {
            case "produce" -> produce(opt);
            case "consume" -> consume(opt);
            default -> usage();
        }
    }

    private static void usage() {
        System.err.println("usage: produce|consume --bootstrap H:P --topic T --count N ...");
        System.exit(2);
    }

    /** One record of the shared stream (see tests/records.py). */
    record Rec(byte[] key, byte[] value, List<Header> headers) {}

    static Rec record(String seed, long i) throws NoSuchAlgorithmException {
        byte[] h = MessageDigest.getInstance("SHA-256").digest((seed + ":" + i).getBytes(StandardCharsets.UTF_8));
        byte[] key = i % 10 == 0 ? null : i % 10 == 1 ? new byte[0] : slice(h, 0, (int) (4 + i % 13));
        byte[] value = null;
        if (i % 13 == 1) {
            value = new byte[0];
        } else if (i % 13 != 0) {
            int len = (int) (20 + (i * 7) % 81);
            value = new byte[len];
            for (int j = 0; j < len; j++) {
                value[j] = h[j % 32];
            }
        }
        List<Header> headers = new ArrayList<>();
        switch ((int) (i % 6)) {
            case 0 -> { }
            case 1 -> headers.add(new RecordHeader("n", null));
            case 2 -> headers.add(new RecordHeader("e", new byte[0]));
            case 3 -> {
                headers.add(new RecordHeader("a", slice(h, 0, 3)));
                headers.add(new RecordHeader("b", slice(h, 3, 10)));
            }
            default -> headers.add(new RecordHeader("id", Long.toString(i).getBytes(StandardCharsets.UTF_8)));
        }
        return new Rec(key, value, headers);
    }

    static byte[] slice(byte[] b, int from, int to) {
        byte[] out = new byte[to - from];
        System.arraycopy(b, from, out, 0, to - from);
        return out;
    }

    static String b(byte[] v) {
        return v == null ? "-" : "=" + HEX.formatHex(v);
    }

    static String canonical(byte[] key, byte[] value, Iterable<Header> headers) {
        StringBuilder hs = new StringBuilder();
        for (Header h : headers) {
            if (hs.length() > 0) {
                hs.append(',');
            }
            hs.append(h.key()).append(':').append(b(h.value()));
        }
        return b(key) + " " + b(value) + " " + hs;
    }

    static void produce(Map<String, String> opt) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, opt.get("bootstrap"));
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, opt.getOrDefault("codec", "none"));
        String acks = opt.getOrDefault("acks", "all");
        p.put(ProducerConfig.ACKS_CONFIG, acks);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, acks.equals("all") ? "true" : "false");
        if (!acks.equals("all")) {
            p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        }
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "262144");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
        String topic = opt.get("topic");
        String seed = opt.get("seed");
        long count = Long.parseLong(opt.get("count"));
        AtomicLong failures = new AtomicLong();
        AtomicReference<Exception> firstError = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (long i = 0; i < count; i++) {
                Rec r = record(seed, i);
                producer.send(new ProducerRecord<>(topic, 0, null, r.key(), r.value(), r.headers()), (md, e) -> {
                    if (e != null) {
                        failures.incrementAndGet();
                        firstError.compareAndSet(null, e);
                    }
                });
            }
            producer.flush();
        }
        if (failures.get() > 0) {
            System.err.println("produce failures: " + failures.get() + ", first: " + firstError.get());
            System.exit(1);
        }
        System.out.println("produced " + count);
    }

    static void consume(Map<String, String> opt) throws IOException {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opt.get("bootstrap"));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, "52428800");
        p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, "10485760");
        long count = Long.parseLong(opt.get("count"));
        long timeoutMs = Long.parseLong(opt.getOrDefault("timeout-ms", "120000"));
        TopicPartition tp = new TopicPartition(opt.get("topic"), 0);
        long got = 0;
        long deadline = System.currentTimeMillis() + timeoutMs;
        try (KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             BufferedWriter out = Files.newBufferedWriter(Paths.get(opt.get("out")), StandardCharsets.UTF_8)) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            while (got < count && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    if (r.offset() != got) {
                        System.err.println("offset gap: expected " + got + " got " + r.offset());
                        System.exit(1);
                    }
                    out.write(canonical(r.key(), r.value(), r.headers()));
                    out.write('\n');
                    got++;
                }
            }
        }
        System.out.println("consumed " + got);
        if (got < count) {
            System.err.println("timed out after " + got + " of " + count + " records");
            System.exit(1);
        }
    }
}
