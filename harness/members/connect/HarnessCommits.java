import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerInterceptor;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The sink tasks' consumers' interceptor (the worker sets consumer.interceptor.classes): each commit of a sink
 * connector's group (`connect-<name>`) that its coordinator acknowledged is a `group_commit` event (docs/history.md;
 * commit_durability, docs/invariants.md). The consumer calls onCommit only once the coordinator answered the commit
 * with success, for the framework's commitAsync and commitSync alike, on the task's thread. `requested_mono` is the
 * earliest the commit can have been asked: the first preCommit (HarnessSinkTask.flush, which the framework calls on
 * the task's thread just before it commits) since the previous acknowledged commit, else that one's own.
 */
public class HarnessCommits implements ConsumerInterceptor<Object, Object> {
    /** The task thread's first flush since its consumer's last acknowledged commit (null: none since). */
    private static final ThreadLocal<Double> FLUSHED = new ThreadLocal<>();

    private String group;
    private double asked;

    static double now() {
        return System.nanoTime() / 1e9;
    }

    /** HarnessSinkTask.flush: the framework is about to commit the task's offsets on this thread. */
    static void flushing() {
        if (FLUSHED.get() == null) {
            FLUSHED.set(now());
        }
    }

    @Override
    public void configure(Map<String, ?> configs) {
        Object g = configs.get(ConsumerConfig.GROUP_ID_CONFIG);
        group = g == null ? null : String.valueOf(g);
        asked = now();
    }

    @Override
    public ConsumerRecords<Object, Object> onConsume(ConsumerRecords<Object, Object> records) {
        return records;
    }

    @Override
    public void onCommit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        Double flushed = FLUSHED.get();
        FLUSHED.remove();
        if (flushed != null) {
            asked = flushed;
        }
        if (group == null || offsets.isEmpty()) {
            return;
        }
        List<Object> out = new ArrayList<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            out.add(List.of(e.getKey().topic(), e.getKey().partition(), e.getValue().offset()));
        }
        HarnessHistory.event("group_commit", "group_id", group, "offsets", out, "ok", true, "requested_mono", asked,
                "via", "offset_commit", "worker", HarnessHistory.WORKER);
    }

    @Override
    public void close() {}
}
