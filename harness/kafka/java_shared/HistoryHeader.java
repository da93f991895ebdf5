/**
 * The first line of every history file a Java program of the harness writes (docs/history.md): the one place
 * the Java side spells the header. The schema's name and version come from HistorySchema, which the builder
 * (harness/kafka/jvm_build.py) generates from harness/record/history.schema.json at build time, so a schema bump
 * rebuilds every Java program with the new version. Compiled into each of the harness's Java programs.
 */
final class HistoryHeader {
    private HistoryHeader() {
    }

    /** The header line (no line end) of a history file of `source` written by `member` (null: none). */
    static String line(String source, String member) {
        return "{\"type\":\"header\",\"schema\":" + quote(HistorySchema.NAME) + ",\"version\":" + HistorySchema.VERSION
                + ",\"source\":" + quote(source) + ",\"member\":" + (member == null ? "null" : quote(member)) + "}";
    }

    /** A member's header line. */
    static String member(String member) {
        return line("member", member);
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format(java.util.Locale.ROOT, "\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    /** Prints a member's header line: `java HistoryHeader <member>` (the unit tests read it back). */
    public static void main(String[] args) {
        System.out.println(member(args.length > 0 ? args[0] : "m1"));
    }
}
