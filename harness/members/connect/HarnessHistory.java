import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The worker's history file (HARNESS_HISTORY, docs/member-contract.md): shared by the worker and every
 * connector and task it runs (all on the application class path, so one instance per JVM). Each event is
 * one write of one line, flushed to the file before the caller goes on: a SIGKILL leaves at most a torn line.
 */
public final class HarnessHistory {
    private static FileOutputStream out;
    public static final String WORKER = env("HARNESS_MEMBER_ID", "worker");
    public static final String MISBEHAVE = env("HARNESS_MISBEHAVE", "");

    private HarnessHistory() {}

    static String env(String k, String dflt) {
        String v = System.getenv(k);
        return v == null || v.isEmpty() ? dflt : v;
    }

    private static synchronized FileOutputStream out() throws IOException {
        if (out == null) {
            out = new FileOutputStream(System.getenv("HARNESS_HISTORY"), true);
        }
        return out;
    }

    /** The header line; the worker writes it first, once. */
    public static synchronized void header() {
        write(HistoryHeader.member(WORKER));
    }

    /** One event: its type, mono, wall, member, then the fields (values: String, Number, Boolean, null, Map, Iterable). */
    public static void event(String type, Object... kv) {
        StringBuilder b = new StringBuilder(160);
        b.append("{\"type\":").append(quote(type));
        b.append(",\"mono\":").append(System.nanoTime() / 1e9);
        b.append(",\"wall\":").append(System.currentTimeMillis() / 1e3);
        b.append(",\"member\":").append(quote(WORKER));
        for (int i = 0; i + 1 < kv.length; i += 2) {
            b.append(',').append(quote(String.valueOf(kv[i]))).append(':');
            value(b, kv[i + 1]);
        }
        write(b.append('}').toString());
    }

    private static synchronized void write(String line) {
        try {
            FileOutputStream o = out();
            o.write((line + "\n").getBytes(StandardCharsets.UTF_8));
            o.flush();
        } catch (IOException e) {
            throw new RuntimeException("cannot write the history: " + e, e);
        }
    }

    private static void value(StringBuilder b, Object v) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof Number || v instanceof Boolean) {
            b.append(v);
        } else if (v instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) b.append(',');
                first = false;
                b.append(quote(String.valueOf(e.getKey()))).append(':');
                value(b, e.getValue());
            }
            b.append('}');
        } else if (v instanceof Iterable) {
            b.append('[');
            boolean first = true;
            for (Object o : (Iterable<?>) v) {
                if (!first) b.append(',');
                first = false;
                value(b, o);
            }
            b.append(']');
        } else {
            b.append(quote(v.toString()));
        }
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
}
