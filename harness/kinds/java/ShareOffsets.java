/*
 * Reads a share group's start offsets (KIP-932's share-partition start offset, SPSO: every record below it is
 * done, acknowledged or archived) through the Admin API (ListShareGroupOffsets), which confluent-kafka's Admin
 * does not have. Used by harness/kinds/share_offsets.py after a share run's members stopped.
 *
 * Arguments: bootstrap servers, group id. Output: a line "topic<TAB>partition<TAB>start offset" per partition;
 * exit code 1 with the error on stderr when the brokers did not answer.
 */

import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;

public final class ShareOffsets {
    private ShareOffsets() {
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(p)) {
            Map<TopicPartition, SharePartitionOffsetInfo> got = admin
                    .listShareGroupOffsets(Map.of(args[1], new ListShareGroupOffsetsSpec()))
                    .partitionsToOffsetInfo(args[1]).get(45, TimeUnit.SECONDS);
            StringBuilder out = new StringBuilder();
            for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> e : got.entrySet()) {
                if (e.getValue() != null) {
                    out.append(e.getKey().topic()).append('\t').append(e.getKey().partition()).append('\t')
                            .append(e.getValue().startOffset()).append('\n');
                }
            }
            System.out.print(out);
        } catch (Exception e) {
            System.err.println("ShareOffsets: " + e);
            System.exit(1);
        }
    }
}
