import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * One task of HarnessSource. Its source partition is {"task": i}, its offset {"seq": next}: each poll hands
 * Connect a batch of records numbered seq_from..seq_to (a `connect_batch` event), a restarted task resumes from
 * the committed offset, and each offset commit Connect makes is a `connect_commit` event with the next seq.
 *
 * HARNESS_MISBEHAVE=zombie-task (a self-test): when stopped, the task says nothing and goes on writing
 * batches from a thread of its own for 10 s, and only then says it stopped.
 */
public class HarnessSourceTask extends SourceTask {
    private String connector;
    private int task;
    private String topic;
    private int batch;
    private int intervalMs;
    private long next;
    private volatile long acked = -1;
    private Map<String, Object> partition;
    private boolean stopping;  // under the task's lock: no batch is handed out once it said it stopped

    @Override
    public String version() {
        return "1";
    }

    @Override
    public void start(Map<String, String> props) {
        connector = props.get("name");
        task = Integer.parseInt(props.get("harness.task"));
        topic = props.get("topic");
        batch = Integer.parseInt(props.getOrDefault("harness.batch.size", "10"));
        intervalMs = Integer.parseInt(props.getOrDefault("harness.interval.ms", "200"));
        partition = Collections.singletonMap("task", task);
        Map<String, Object> offset = context.offsetStorageReader().offset(partition);
        next = offset == null || offset.get("seq") == null ? 0 : ((Number) offset.get("seq")).longValue();
        acked = next;
        HarnessHistory.event("connect_task_started", "connector", connector, "task", task, "worker",
                HarnessHistory.WORKER, "kind", "source", "resume_seq", next);
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        Thread.sleep(intervalMs);
        synchronized (this) {
            return stopping ? null : produce();
        }
    }

    private synchronized List<SourceRecord> produce() {
        List<SourceRecord> out = new ArrayList<>(batch);
        long from = next;
        for (int i = 0; i < batch; i++) {
            long seq = next++;
            out.add(new SourceRecord(partition, Collections.singletonMap("seq", seq + 1), topic, null,
                    Schema.STRING_SCHEMA, "t" + task, Schema.STRING_SCHEMA, connector + ":" + task + ":" + seq));
        }
        HarnessHistory.event("connect_batch", "connector", connector, "task", task, "worker", HarnessHistory.WORKER,
                "seq_from", from, "seq_to", next - 1);
        return out;
    }

    @Override
    public void commitRecord(SourceRecord record, RecordMetadata metadata) {
        long seq = ((Number) record.sourceOffset().get("seq")).longValue();
        if (seq > acked) {
            acked = seq;
        }
    }

    @Override
    public void commit() {
        HarnessHistory.event("connect_commit", "connector", connector, "task", task, "worker", HarnessHistory.WORKER,
                "offset", acked);
    }

    @Override
    public synchronized void stop() {
        stopping = true;
        if (Vocabulary.MISBEHAVE_ZOMBIE_TASK.equals(HarnessHistory.MISBEHAVE)) {
            Thread t = new Thread(() -> {
                long end = System.nanoTime() + 10_000_000_000L;
                try {
                    while (System.nanoTime() < end) {
                        Thread.sleep(intervalMs);
                        produce();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                stopped();
            }, "zombie-" + connector + "-" + task);
            t.setDaemon(true);
            t.start();
            return;
        }
        stopped();
    }

    private void stopped() {
        HarnessHistory.event("connect_task_stopped", "connector", connector, "task", task, "worker",
                HarnessHistory.WORKER, "kind", "source");
    }
}
