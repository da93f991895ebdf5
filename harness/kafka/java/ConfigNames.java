import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.TreeSet;

import org.apache.kafka.common.config.ConfigDef;

/**
 * Prints the config names a Kafka release defines, one a line, sorted: the names of the ConfigDef of the first of
 * the classes given that is on the class path and has one (a static field CONFIG_DEF or CONFIG, or a static method
 * configDef()). The classes differ across releases (Kafka 3.x's kafka.server.KafkaConfig, 4.x's
 * AbstractKafkaConfig), so harness/kafka/config_names.py names every candidate in order. Exit 3: none of them has one.
 */
final class ConfigNames {
    private ConfigNames() {
    }

    public static void main(String[] args) {
        for (String name : args) {
            ConfigDef def = configDef(name);
            if (def != null) {
                for (String key : new TreeSet<>(def.names())) {
                    System.out.println(key);
                }
                return;
            }
        }
        System.err.println("no ConfigDef in any of: " + String.join(", ", args));
        System.exit(3);
    }

    private static ConfigDef configDef(String className) {
        Class<?> c;
        try {
            c = Class.forName(className);
        } catch (ClassNotFoundException | LinkageError e) {
            return null;
        }
        for (String field : new String[] {"CONFIG_DEF", "CONFIG"}) {
            try {
                Field f = c.getDeclaredField(field);
                f.setAccessible(true);
                if (ConfigDef.class.isAssignableFrom(f.getType())) {
                    return (ConfigDef) f.get(null);
                }
            } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
                // not this one: try the next way
            }
        }
        try {
            Method m = c.getDeclaredMethod("configDef");
            m.setAccessible(true);
            Object def = m.invoke(null);
            return def instanceof ConfigDef ? (ConfigDef) def : null;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return null;
        }
    }
}
