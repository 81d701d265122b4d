package dev.runnel.clienttest;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams 4.4.0 word count, driven by tests/test_streams_eos.py:
 *
 * <pre>
 *   WordCount --bootstrap H:P --app-id ID --input IN --output OUT --guarantee exactly_once_v2|at_least_once
 *             --state-dir DIR [--sleep-ms MS] [--threads N]
 * </pre>
 *
 * Splits each input value into lower-case words, re-keys by word (a repartition topic), counts them (a changelogged
 * store) and writes every count update to OUT (key: the word, value: the count as an 8-byte long). --sleep-ms
 * slows each sentence down so that a test can kill a broker mid-run. Prints "processed N" every 100 sentences,
 * "STATE new" on each state change, "PRODUCER client-id" for each stream thread's producer once running, and
 * "UNCAUGHT ..." if a stream thread dies (the client then shuts down and
 * the program exits 1). Runs until SIGTERM (closes the Streams client, exits 0).
 */
public final class WordCount {
    public static void main(String[] args) throws Exception {
        Map<String, String> opt = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            opt.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        long sleepMs = Long.parseLong(opt.getOrDefault("sleep-ms", "0"));
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, opt.get("app-id"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, opt.get("bootstrap"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, opt.get("guarantee"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, opt.get("state-dir"));
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, opt.getOrDefault("threads", "1"));
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, opt.getOrDefault("replication-factor", "3"));
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        p.put(StreamsConfig.producerPrefix(ProducerConfig.ACKS_CONFIG), "all");

        AtomicLong processed = new AtomicLong();
        StreamsBuilder b = new StreamsBuilder();
        b.stream(opt.get("input"), Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(sentence -> {
                if (sleepMs > 0) {
                    try {
                        Thread.sleep(sleepMs);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                long n = processed.incrementAndGet();
                if (n % 100 == 0) {
                    System.out.println("processed " + n);
                    System.out.flush();
                }
                return Arrays.asList(sentence.toLowerCase(Locale.ROOT).split("\\s+"));
            })
            .filter((k, w) -> !w.isEmpty())
            .groupBy((k, w) -> w, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"))
            .toStream()
            .to(opt.get("output"), Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch stopped = new CountDownLatch(1);
        int[] exitCode = {0};
        boolean[] announced = {false};
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            if (now == KafkaStreams.State.RUNNING && !announced[0]) {
                announced[0] = true;
                // The test derives each thread's transactional.id (appId-processId-threadIdx) from these.
                streams.metadataForLocalThreads().forEach(t ->
                    t.producerClientIds().forEach(id -> System.out.println("PRODUCER " + id)));
            }
            System.out.flush();
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                stopped.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("UNCAUGHT " + e);
            e.printStackTrace(System.out);
            System.out.flush();
            exitCode[0] = 1;
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            System.out.println("closed, processed " + processed.get());
            System.out.flush();
        }));
        streams.start();
        stopped.await();
        System.exit(exitCode[0]);
    }
}
