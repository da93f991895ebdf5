/*
 * The commits of a Kafka Streams instance that the group's coordinator acknowledged, as `group_commit` events of
 * its history (docs/history.md; commit_durability, docs/invariants.md). From public APIs only:
 *
 * - at_least_once: the main consumer's interceptor (ConsumerInterceptor.onCommit, which the consumer calls once the
 *   coordinator answered a commit with success, for commitSync and commitAsync, the classic and the streams
 *   protocol alike): `via` "offset_commit". `requested_mono` is the earliest the commit can have been asked: the end of
 *   the previous one this consumer recorded (a stream thread commits one at a time), else when it was made.
 * - exactly_once_v2: the offsets go through the producer's transaction (sendOffsetsToTransaction); the commit is
 *   acknowledged when commitTransaction returned: `via` "transaction", `requested_mono` when the offsets were
 *   handed to the transaction. An aborted transaction records nothing.
 */

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaClientSupplier;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.internals.DefaultKafkaClientSupplier;

final class StreamsCommits {
    /** Where the recorders write; set by `install` before KafkaStreams is made. */
    static volatile StreamsMember.History history;

    private StreamsCommits() {}

    static double now() {
        return System.nanoTime() / 1e9;
    }

    /**
     * A self-test (--misbehave streams-phantom-commit, `harness.phantom.commit`): as its main consumer closes, after
     * its last commit, the instance records one more commit as acknowledged that it never sent, 1000 past the last
     * offset it recorded of one partition; commit_durability must fail the run.
     */
    static volatile boolean phantom;
    static final AtomicBoolean PHANTOM_DONE = new AtomicBoolean();

    /** Record this instance's acknowledged commits into `h`: the main consumer's interceptor set in `p`. */
    static void install(StreamsMember.History h, Properties p, Map<String, Object> conf) {
        history = h;
        phantom = Boolean.parseBoolean(String.valueOf(conf.getOrDefault("harness.phantom.commit", false)));
        p.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.INTERCEPTOR_CLASSES_CONFIG), Interceptor.class.getName());
    }

    /** The client supplier whose producers record the transactions that committed offsets. */
    static KafkaClientSupplier supplier() {
        return new DefaultKafkaClientSupplier() {
            @Override
            public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
                return new TransactionRecorder(config);
            }
        };
    }

    static List<Object> rows(Map<TopicPartition, OffsetAndMetadata> offsets) {
        List<Object> out = new ArrayList<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            out.add(List.of(e.getKey().topic(), e.getKey().partition(), e.getValue().offset()));
        }
        return out;
    }

    static void record(String group, Map<TopicPartition, OffsetAndMetadata> offsets, double asked, String via,
                       String client) {
        StreamsMember.History h = history;
        if (h != null && group != null && !offsets.isEmpty()) {
            h.event("group_commit", "group_id", group, "offsets", rows(offsets), "ok", true, "requested_mono", asked,
                    "via", via, "thread", StreamsMember.thread(client));
        }
    }

    /** The main consumer's interceptor: each acknowledged commit (class doc). */
    public static final class Interceptor implements ConsumerInterceptor<byte[], byte[]> {
        private String group;
        private String client;
        private double since;

        @Override
        public void configure(Map<String, ?> configs) {
            Object g = configs.get(ConsumerConfig.GROUP_ID_CONFIG);
            group = g == null ? null : String.valueOf(g);
            client = String.valueOf(configs.get(ConsumerConfig.CLIENT_ID_CONFIG));
            since = now();
        }

        @Override
        public ConsumerRecords<byte[], byte[]> onConsume(ConsumerRecords<byte[], byte[]> records) {
            return records;
        }

        private final Map<String, Object[]> last = new TreeMap<>();

        @Override
        public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
            record(group, offsets, since, "offset_commit", client);
            since = now();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                last.put(e.getKey().toString(), new Object[] {e.getKey(), e.getValue().offset()});
            }
        }

        @Override
        public void close() {
            if (phantom && !last.isEmpty() && PHANTOM_DONE.compareAndSet(false, true)) {
                Object[] first = last.values().iterator().next();
                TopicPartition tp = (TopicPartition) first[0];
                long never = (Long) first[1] + 1000;
                StreamsMember.log("phantom-commit: recording " + tp + " offset " + never + " as acknowledged, never sent");
                record(group, Map.of(tp, new OffsetAndMetadata(never)), now(), "offset_commit", client);
            }
        }
    }

    /** A producer that records the offsets a committed transaction carried (class doc). */
    static final class TransactionRecorder extends KafkaProducer<byte[], byte[]> {
        private final Map<TopicPartition, OffsetAndMetadata> pending = new HashMap<>();
        private final String client;
        private String group;
        private double asked;

        TransactionRecorder(Map<String, Object> config) {
            super(config, new ByteArraySerializer(), new ByteArraySerializer());
            client = String.valueOf(config.get("client.id"));
        }

        @Override
        public void sendOffsetsToTransaction(Map<TopicPartition, OffsetAndMetadata> offsets,
                                             ConsumerGroupMetadata metadata) {
            if (pending.isEmpty()) {
                asked = now();
            }
            super.sendOffsetsToTransaction(offsets, metadata);
            pending.putAll(offsets);
            group = metadata.groupId();
        }

        @Override
        public void commitTransaction() {
            super.commitTransaction();
            record(group, pending, asked, "transaction", client);
            pending.clear();
        }

        @Override
        public void abortTransaction() {
            pending.clear();
            super.abortTransaction();
        }
    }
}
