import java.io.FileInputStream;
import java.lang.management.ManagementFactory;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.kafka.connect.cli.ConnectDistributed;
import org.apache.kafka.connect.runtime.Connect;
import sun.misc.Signal;

/**
 * A Kafka Connect distributed worker under the member contract (docs/connect.md): the real
 * org.apache.kafka.connect.cli.ConnectDistributed of connect-runtime starts the worker from the generated
 * worker properties (args[0]); this wrapper only writes the history's header, `started` once the worker runs
 * (its REST server and herder started), and on SIGTERM stops the worker (tasks stopped, the group left) and
 * writes `stopped` before it exits 0.
 *
 * HARNESS_MISBEHAVE=connect-rejoin-storm (a self-test, slot 0's worker): from STORM_AFTER_MS after it started, every
 * STORM_EVERY_MS for STORM_FOR_MS, the worker's group member leaves the group (WorkerGroupMember.maybeLeaveGroup:
 * the LeaveGroup its heartbeat thread sends when the herder's poll is late) and its herder rejoins at its next poll,
 * as a new member: rounds of the group that no event of its history shows, which connect_rebalance_cause must find
 * without a cause or past every allowance. A correct worker leaves only as it stops or when it cannot read the config
 * topic within worker.sync.timeout.ms.
 */
public final class HarnessWorker {
    /** Worker config keys with this prefix are recorded under the rest of the key, and not given to Connect. */
    private static final String MISREPORT = "harness.misreport.";
    /** connect-rejoin-storm: when the storm begins after `started`, how often the worker leaves, how long it lasts. */
    private static final long STORM_AFTER_MS = 20_000, STORM_EVERY_MS = 2_000, STORM_FOR_MS = 40_000;

    public static void main(String[] args) throws IOException {
        Properties p = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) {
            p.load(in);
        }
        Map<String, String> props = new HashMap<>();
        Map<String, String> misreport = new HashMap<>();
        for (String k : p.stringPropertyNames()) {
            if (k.startsWith(MISREPORT)) {  // a self-test (--misbehave wrong-delay): recorded, not run with
                misreport.put(k.substring(MISREPORT.length()), p.getProperty(k));
            } else {
                props.put(k, p.getProperty(k));
            }
        }
        // the member id names the worker's clients (its group membership; Connect derives its internal
        // topics' client ids from it), so that the harness's request proxy knows whose request it sees
        String memberId = System.getenv("HARNESS_MEMBER_ID");
        if (memberId != null && !props.containsKey("client.id")) {
            props.put("client.id", memberId);
        }
        // the sink tasks' acknowledged commits, `group_commit` events (HarnessCommits)
        props.putIfAbsent("consumer.interceptor.classes", HarnessCommits.class.getName());
        Map<String, String> recorded = new HashMap<>(props);
        recorded.putAll(misreport);
        HarnessHistory.header();
        @SuppressWarnings({"rawtypes"})
        Connect connect = new ConnectDistributed().startConnect(props);
        Signal.handle(new Signal("TERM"), sig -> {
            new Thread(() -> {
                connect.stop();
                HarnessHistory.event("stopped", "reason", "sigterm");
                Runtime.getRuntime().halt(0);
            }, "harness-stop").start();
        });
        long pid = ProcessHandle.current().pid();
        HarnessHistory.event("started", "pid", pid, "protocol", props.get("connect.protocol"),
                "group_id", props.get("group.id"), "topic", System.getenv("HARNESS_TOPIC"), "instance_id", null,
                "rack", props.get("client.rack"), "client", "connect-runtime " + KafkaVersion.get(),
                "rest_url", props.get("listeners"),
                "settings", recorded);
        Thread metrics = new Thread(HarnessWorker::watchRebalances, "harness-rebalance-metrics");
        metrics.setDaemon(true);
        metrics.start();
        if (Vocabulary.MISBEHAVE_CONNECT_REJOIN_STORM.equals(HarnessHistory.MISBEHAVE)) {
            Thread storm = new Thread(() -> rejoinStorm(connect.herder()), "harness-rejoin-storm");
            storm.setDaemon(true);
            storm.start();
        }
        connect.awaitStop();
    }

    /**
     * The connect-rejoin-storm self-test (the class comment): the herder's group member (DistributedHerder's
     * `member`, reached by reflection, as no API hands it out) leaves the group again and again. Nothing is written
     * to the history but, should the member not be found, a non-fatal `error`.
     */
    private static void rejoinStorm(Object herder) {
        try {
            Field field = herder.getClass().getDeclaredField("member");
            field.setAccessible(true);
            Object member = field.get(herder);
            Method leave = member.getClass().getMethod("maybeLeaveGroup", String.class);
            Thread.sleep(STORM_AFTER_MS);
            long end = System.nanoTime() + STORM_FOR_MS * 1_000_000L;
            while (System.nanoTime() < end) {
                leave.invoke(member, "the harness's connect-rejoin-storm self-test");
                Thread.sleep(STORM_EVERY_MS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ReflectiveOperationException | RuntimeException e) {
            HarnessHistory.event("error", "fatal", false, "error", "connect-rejoin-storm cannot leave the group: " + e);
        }
    }

    /**
     * The worker's own view of its group (the connect-worker-rebalance-metrics MBean): a `connect_rebalance`
     * event each time the leader, the epoch or whether it is rebalancing changes.
     */
    private static void watchRebalances() {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        String last = null;
        while (true) {
            try {
                ObjectName name = new ObjectName("kafka.connect:type=connect-worker-rebalance-metrics");
                if (server.isRegistered(name)) {
                    Object leader = server.getAttribute(name, "leader-name");
                    Object epoch = server.getAttribute(name, "epoch");
                    Object rebalancing = server.getAttribute(name, "rebalancing");
                    Object completed = server.getAttribute(name, "completed-rebalances-total");
                    String now = leader + "/" + epoch + "/" + rebalancing;
                    if (!now.equals(last)) {
                        last = now;
                        HarnessHistory.event("connect_rebalance", "leader", leader, "epoch",
                                epoch instanceof Number ? ((Number) epoch).longValue() : null,
                                "rebalancing", rebalancing instanceof Number ? ((Number) rebalancing).doubleValue() != 0
                                        : rebalancing instanceof Boolean ? rebalancing : null, "completed",
                                completed instanceof Number ? ((Number) completed).longValue() : null);
                    }
                }
                Thread.sleep(100);
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                try {
                    Thread.sleep(500);
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
    }
}
