import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

/**
 * One task of HarnessSink: each batch Connect delivers, per partition run of consecutive records, is a
 * `processed` event (topic, partition, first_offset, last_offset, count) with its connector and task; each
 * offset commit Connect asks for is a `connect_commit` event.
 */
public class HarnessSinkTask extends SinkTask {
    private String connector;
    private int task;

    @Override
    public String version() {
        return "1";
    }

    @Override
    public void start(Map<String, String> props) {
        connector = props.get("name");
        task = Integer.parseInt(props.get("harness.task"));
        HarnessHistory.event("connect_task_started", "connector", connector, "task", task, "worker",
                HarnessHistory.WORKER, "kind", "sink", "resume_seq", null);
    }

    @Override
    public void put(Collection<SinkRecord> records) {
        SinkRecord first = null;
        SinkRecord last = null;
        int n = 0;
        for (SinkRecord r : records) {
            if (first != null && (!r.topic().equals(first.topic()) || r.kafkaPartition().intValue() != first.kafkaPartition().intValue()
                    || r.kafkaOffset() != last.kafkaOffset() + 1)) {
                processed(first, last, n);
                first = null;
            }
            if (first == null) {
                first = r;
                n = 0;
            }
            last = r;
            n++;
        }
        if (first != null) {
            processed(first, last, n);
        }
    }

    private void processed(SinkRecord first, SinkRecord last, int n) {
        HarnessHistory.event("processed", "topic", first.topic(), "partition", first.kafkaPartition(),
                "first_offset", first.kafkaOffset(), "last_offset", last.kafkaOffset(), "count", n,
                "connector", connector, "task", task);
    }

    @Override
    public void flush(Map<TopicPartition, OffsetAndMetadata> offsets) {
        HarnessCommits.flushing(); // the framework commits next: the earliest that commit is asked (HarnessCommits)
        List<Object> out = new ArrayList<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
            out.add(List.of(e.getKey().topic(), e.getKey().partition(), e.getValue().offset()));
        }
        HarnessHistory.event("connect_commit", "connector", connector, "task", task, "worker", HarnessHistory.WORKER,
                "offsets", out);
    }

    @Override
    public void stop() {
        HarnessHistory.event("connect_task_stopped", "connector", connector, "task", task, "worker",
                HarnessHistory.WORKER, "kind", "sink");
    }
}
