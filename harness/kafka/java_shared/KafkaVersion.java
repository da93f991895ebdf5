import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * The Kafka library's version on the class path, read as Kafka's own AppInfoParser reads it: that class moved
 * to an internal package in Kafka 4.4, so it is not named here. Compiled into each of the harness's Java
 * programs (the Java member, the Streams member, the Connect worker).
 */
final class KafkaVersion {
    private KafkaVersion() {
    }

    static String get() {
        try (InputStream in = KafkaVersion.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties v = new Properties();
            if (in != null) {
                v.load(in);
            }
            return v.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }
}
