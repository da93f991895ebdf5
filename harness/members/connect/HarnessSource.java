import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * The harness's source connector: `tasks.max` tasks (HarnessSourceTask), each writing numbered records of
 * its own into `topic`. Its start and stop are history events of the worker that runs it.
 */
public class HarnessSource extends SourceConnector {
    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
        HarnessHistory.event("connect_connector_started", "connector", props.get("name"), "worker", HarnessHistory.WORKER);
    }

    @Override
    public Class<? extends Task> taskClass() {
        return HarnessSourceTask.class;
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
        return new ConfigDef()
            .define("topic", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "where the tasks write")
            .define("harness.batch.size", ConfigDef.Type.INT, 10, ConfigDef.Importance.LOW, "records per poll")
            .define("harness.interval.ms", ConfigDef.Type.INT, 200, ConfigDef.Importance.LOW, "pause between polls");
    }

    @Override
    public String version() {
        return "1";
    }
}
