import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/** The harness's sink connector: `tasks.max` tasks (HarnessSinkTask) reading `topics`. */
public class HarnessSink extends SinkConnector {
    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
        HarnessHistory.event("connect_connector_started", "connector", props.get("name"), "worker", HarnessHistory.WORKER);
    }

    @Override
    public Class<? extends Task> taskClass() {
        return HarnessSinkTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> out = new ArrayList<>();
        for (int i = 0; i < maxTasks; i++) {
            Map<String, String> c = new HashMap<>(props);
            c.put("harness.task", Integer.toString(i));
            out.add(c);
        }
        return out;
    }

    @Override
    public void stop() {
        HarnessHistory.event("connect_connector_stopped", "connector", props.get("name"), "worker", HarnessHistory.WORKER);
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef();
    }

    @Override
    public String version() {
        return "1";
    }
}
