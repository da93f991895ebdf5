/*
 * A share-group member (KIP-932) on the Apache Kafka Java client's KafkaShareConsumer that writes its history:
 * the second implementation of the share member contract (docs/share.md), written apart from
 * harness/members/share_member.py, so that the two clients are judged side by side.
 *
 * Single-file Java 17 program compiled against the brokers' kafka-clients (harness/members/java_member.py) and
 * run with the HARNESS_* environment. Per record: `share_acquired` when poll returns it, `share_processed` when
 * its work took effect, `share_acked` when the broker answered its acknowledgement (the acknowledgement commit
 * callback, with requested_mono). `share.acknowledgement.mode` from HARNESS_CLIENT_CONFIG (default explicit);
 * in explicit mode a record whose lock (HARNESS_SHARE_LOCK_MS less HARNESS_SHARE_MARGIN_MS) would run out
 * before its work is done is released unprocessed, and so is one whose work outlasted it. Poison records (the
 * client settings harness.share.reject.keys, harness.share.release.keys: record keys, taken out of the client's
 * settings) are never processed: rejected, or released on every delivery until the limit archives them.
 * A poison record that kills the member (harness.share.crash.records, partition:offset of the first topic): the member
 * works the poll's other records, commits their acknowledgements, writes a fatal `error` naming the record and
 * halts with Vocabulary.SHARE_CRASH_EXIT, the record unacknowledged, no close, no leave.
 * Controls (docs/member-contract.md): on SIGUSR1 it reads HARNESS_CONTROL and subscribes to the `subscription` it
 * names (subscribe_by unsubscribe-subscribe: unsubscribe() first), the acknowledgements it owes committed first,
 * then writes a `control` event with the new subscription (share_subscribed_only judges its later records by it);
 * --misbehave keep-dropped-share-topic records the change and keeps the old subscription.
 */

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.DisconnectException;
import org.apache.kafka.common.errors.InvalidRecordStateException;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class ShareMember {

    private final String member;
    private final FileOutputStream out;
    private final KafkaShareConsumer<byte[], byte[]> consumer;
    private final String mode;
    private final double processingS;
    private final Double lockS;
    private final double marginS;
    private final String misbehave;
    private final Map<String, Object[]> asked = new HashMap<>(); // "t|p|o" -> {ack, requested mono}
    private final List<String> implicit = new ArrayList<>();
    private volatile boolean running = true;
    /** set by main before its own System.exit: the shutdown hook then halts with it at once */
    private volatile Integer exitCode = null;
    private int pollsWithRecords = 0;
    private String firstTopic = "";
    private double lastPollAt = -1; // when the previous poll began: the client fetches ahead from then on
    /** HARNESS_CONTROL: the control file the harness writes before sending SIGUSR1 (null: none) */
    private final String controlPath = env("HARNESS_CONTROL", null);
    /** set by SIGUSR1; the main loop reads the control file */
    private volatile boolean controlPending;
    private long controlSeq;
    /** the topics the member subscribes to, as it recorded them (a control changes them) */
    private List<String> topics = List.of();

    static double mono() {
        return System.nanoTime() / 1e9;
    }

    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    /** One event line: type, mono, wall, member, then the given fields (values already JSON). */
    synchronized void event(String type, String... kv) {
        java.time.Instant now = java.time.Instant.now();
        StringBuilder b = new StringBuilder("{\"type\":").append(q(type))
                .append(String.format(Locale.ROOT, ",\"mono\":%.9f,\"wall\":%d.%06d", mono(), now.getEpochSecond(),
                        now.getNano() / 1000))
                .append(",\"member\":").append(q(member));
        for (int i = 0; i + 1 < kv.length; i += 2) {
            b.append(',').append(q(kv[i])).append(':').append(kv[i + 1]);
        }
        try {
            out.write((b.append("}\n")).toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static String env(String k, String dflt) {
        String v = System.getenv(k);
        return v == null || v.isEmpty() ? dflt : v;
    }

    /** HARNESS_CLIENT_CONFIG: a flat JSON object of strings and numbers (what the harness writes). */
    static Map<String, String> clientConfig() {
        Map<String, String> m = new java.util.LinkedHashMap<>();
        String s = env("HARNESS_CLIENT_CONFIG", "{}").trim();
        java.util.regex.Matcher x = java.util.regex.Pattern
                .compile("\"((?:[^\"\\\\]|\\\\.)*)\"\\s*:\\s*(\"((?:[^\"\\\\]|\\\\.)*)\"|[^,}\\s]+)").matcher(s);
        while (x.find()) {
            m.put(x.group(1), x.group(3) != null ? x.group(3) : x.group(2));
        }
        return m;
    }

    /** record key -> the acknowledgement the member always gives its records (poison records). */
    final Map<String, String> poison = new HashMap<>();
    /** "partition|offset" of the first topic's records whose delivery kills the member */
    final Set<String> crash = new TreeSet<>();
    /** the poison record this poll delivered ("topic|partition|offset|count"), or null */
    private String fatal = null;

    ShareMember() throws IOException {
        member = env("HARNESS_MEMBER_ID", "share-member");
        File f = new File(System.getenv("HARNESS_HISTORY"));
        if (f.getAbsoluteFile().getParentFile() != null) {
            f.getAbsoluteFile().getParentFile().mkdirs();
        }
        out = new FileOutputStream(f, true);
        out.write((HistoryHeader.member(member) + "\n").getBytes(StandardCharsets.UTF_8));
        Map<String, String> given = clientConfig();
        // poison records (harness.share.reject.keys, harness.share.release.keys): the member's own settings
        for (Map.Entry<String, String> kv : Vocabulary.SHARE_POISON.entrySet()) {
            for (String k : given.getOrDefault(kv.getKey(), "").split(",")) {
                if (!k.trim().isEmpty()) {
                    poison.put(k.trim(), kv.getValue());
                }
            }
        }
        for (String x : given.getOrDefault(Vocabulary.SHARE_CRASH_RECORDS, "").split(",")) {
            if (!x.trim().isEmpty()) {
                crash.add(x.trim().replace(':', '|'));
            }
        }
        given.keySet().removeIf(k -> k.startsWith("harness."));
        Properties p = new Properties();
        p.put("share.acknowledgement.mode", "explicit");
        p.putAll(given);
        p.put("bootstrap.servers", env("HARNESS_BOOTSTRAP", ""));
        p.put("group.id", System.getenv("HARNESS_GROUP_ID"));
        p.put("client.id", member);
        if (!env("HARNESS_RACK", "").isEmpty()) {
            p.put("client.rack", System.getenv("HARNESS_RACK"));
        }
        mode = p.getProperty("share.acknowledgement.mode");
        processingS = Double.parseDouble(env("HARNESS_PROCESSING_MS", "0")) / 1000;
        String lock = env("HARNESS_SHARE_LOCK_MS", "");
        lockS = lock.isEmpty() ? null : Double.parseDouble(lock) / 1000;
        marginS = Double.parseDouble(env("HARNESS_SHARE_MARGIN_MS", "1000")) / 1000;
        misbehave = env("HARNESS_MISBEHAVE", null);
        consumer = new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        consumer.setAcknowledgementCommitCallback(this::onAcks);
    }

    /**
     * "given" when the broker answered the acknowledgement (ok, or its refusal: an ApiException from its error code,
     * InvalidRecordStateException, NotLeaderOrFollowerException, ...); "lost" when the client gave up without the
     * broker's answer (a disconnect, a timeout, a wakeup or an interrupt, or an error of its own), so that the broker
     * may have taken it (history.md, share_acked). UnknownServerException is lost too: the client hands the callback
     * Errors.forException of a failed request, and a DisconnectException (a request timeout) is no error Kafka's
     * table knows, so it arrives as UNKNOWN_SERVER_ERROR (docs/findings.md); from a broker it leaves the outcome
     * unknown all the same. An InvalidRecordStateException with the client's own message (CLIENT_MADE) is lost too:
     * the client read no answer of the broker's for the partition (the broker's answer lacked it, or named a topic
     * id the client could no longer name after a subscription change dropped the topic from its metadata), and
     * the broker may have taken the acknowledgement (docs/findings.md).
     */
    public static String answerOf(Exception exc) {
        if (exc == null) {
            return "given";
        }
        boolean noAnswer = !(exc instanceof ApiException) || exc instanceof DisconnectException
                || exc instanceof NetworkException || exc instanceof TimeoutException
                || exc instanceof UnknownServerException
                || (exc instanceof InvalidRecordStateException
                        && String.valueOf(exc.getMessage()).contains(CLIENT_MADE));
        return noAnswer ? "lost" : "given";
    }

    /** kafka-clients' ShareConsumeRequestManager.INVALID_RESPONSE: an error the client gives, not the broker. */
    static final String CLIENT_MADE = "Acknowledgement not successful due to invalid response from broker";

    void onAcks(Map<TopicIdPartition, Set<Long>> offsets, Exception exc) {
        String err = exc == null ? "null" : q(exc.getClass().getSimpleName() + ": " + exc.getMessage());
        String answer = q(answerOf(exc));
        for (Map.Entry<TopicIdPartition, Set<Long>> e : offsets.entrySet()) {
            for (long o : new TreeSet<>(e.getValue())) {
                String t = e.getKey().topic();
                int part = e.getKey().partition();
                Object[] a = asked.remove(t + "|" + part + "|" + o);
                String ack = a == null ? "accept" : (String) a[0];
                double at = a == null ? mono() : (Double) a[1];
                event("share_acked", "topic", q(t), "partition", Integer.toString(part), "offset", Long.toString(o),
                        "ack", q(ack), "ok", Boolean.toString(exc == null), "error", err, "answer", answer, "requested_mono",
                        String.format(Locale.ROOT, "%.9f", at));
            }
        }
    }

    /**
     * Commit the asked acknowledgements. A client error (a timeout while a partition's leader is down), thrown or
     * returned for a partition, is recorded and the member goes on: the callback reports each answer when it comes,
     * and unanswered() the ones that never did. A wakeup (the SIGTERM stop) is thrown on.
     */
    void commit() {
        try {
            for (Map.Entry<TopicIdPartition, java.util.Optional<KafkaException>> r
                    : consumer.commitSync(Duration.ofSeconds(10)).entrySet()) {
                if (r.getValue().isPresent()) {  // a partition's failure is returned, not thrown
                    commitFailed(r.getKey().topic() + "-" + r.getKey().partition() + ": ", r.getValue().get());
                }
            }
        } catch (WakeupException e) {
            throw e;
        } catch (KafkaException e) {
            commitFailed("", e);
        }
    }

    void commitFailed(String where, KafkaException e) {
        event("error", "fatal", "false", "error", q("commitSync: " + where + e.getClass().getSimpleName() + ": "
                + e.getMessage()));
    }

    /** At the stop, after the last commit and close: an acknowledgement whose answer never came is a lost answer. */
    void unanswered() {
        for (Map.Entry<String, Object[]> e : new java.util.TreeMap<>(asked).entrySet()) {
            String[] k = e.getKey().split("\\|");
            event("share_acked", "topic", q(k[0]), "partition", k[1], "offset", k[2], "ack", q((String) e.getValue()[0]),
                    "ok", "false", "error", q("no answer before the member stopped"), "answer", q("lost"),
                    "requested_mono", String.format(Locale.ROOT, "%.9f", (Double) e.getValue()[1]));
        }
        asked.clear();
    }

    boolean inTime(double acquired, double moreS) {
        return lockS == null || mono() + moreS <= acquired + lockS - marginS;
    }

    void ask(ConsumerRecord<byte[], byte[]> r, String ack) {
        asked.put(r.topic() + "|" + r.partition() + "|" + r.offset(), new Object[] {ack, mono()});
        if (mode.equals("explicit")) {
            consumer.acknowledge(r, AcknowledgeType.valueOf(ack.toUpperCase(Locale.ROOT)));
        }
    }

    static void sleep(double s) {
        try {
            Thread.sleep((long) (s * 1000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    void work(List<ConsumerRecord<byte[], byte[]>> batch, double acquired) {
        pollsWithRecords++;
        boolean locks = Vocabulary.MISBEHAVE_ACK_UNHELD.equals(misbehave)
                || Vocabulary.MISBEHAVE_PROCESS_EXPIRED.equals(misbehave);
        String bad = pollsWithRecords == Vocabulary.SHARE_MISBEHAVE_ON_POLL && lockS != null && locks ? misbehave : null;
        if (bad != null) {
            sleep(lockS + marginS + 0.5);
        }
        boolean explicit = mode.equals("explicit");
        for (ConsumerRecord<byte[], byte[]> r : batch) {
            if (r.topic().equals(firstTopic) && crash.contains(r.partition() + "|" + r.offset())) {
                if (fatal == null) { // never processed nor acknowledged: the member dies on it
                    fatal = r.topic() + "|" + r.partition() + "|" + r.offset() + "|" + r.deliveryCount().orElse((short) 0);
                }
                continue;
            }
            String key = r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
            if (explicit && bad == null && key != null && poison.containsKey(key)) {
                ask(r, poison.get(key));  // never processed: rejected, or released until the limit archives it
                continue;
            }
            if (explicit && bad == null && !inTime(acquired, processingS)) {
                ask(r, "release");
                continue;
            }
            sleep(processingS);
            if (explicit && bad == null && !inTime(acquired, 0.0)) {
                ask(r, "release");
                continue;
            }
            event("share_processed", "topic", q(r.topic()), "partition", Integer.toString(r.partition()), "offset",
                    Long.toString(r.offset()));
            if (explicit) {
                ask(r, Vocabulary.MISBEHAVE_PROCESS_EXPIRED.equals(bad) ? "release" : "accept");
            } else {
                implicit.add(r.topic() + "|" + r.partition() + "|" + r.offset());
            }
        }
    }

    /** A poison record was delivered: say so, and halt at once (no acknowledgement of it, no close, no leave). */
    void die() {
        String[] f = fatal.split("\\|");
        event("error", "fatal", "true", "poison", "[" + q(f[0]) + "," + f[1] + "," + f[2] + "," + f[3] + "]", "error",
                q("poison record " + f[0] + "-" + f[1] + "@" + f[2] + " (delivery count " + f[3] + "): the member dies"));
        exitCode = Vocabulary.SHARE_CRASH_EXIT;
        Runtime.getRuntime().halt(Vocabulary.SHARE_CRASH_EXIT);
    }

    void implicitAsked() {
        double now = mono();
        for (String k : implicit) {
            asked.put(k, new Object[] {"accept", now});
        }
        implicit.clear();
    }

    /** the `crash_records` of the started event's `effective` ([[topic, partition, offset], ...]), or "" */
    String crashRecords() {
        List<String> out = new ArrayList<>();
        for (String c : crash) {
            String[] po = c.split("\\|");
            out.add("[" + q(firstTopic) + "," + po[0] + "," + po[1] + "]");
        }
        return out.isEmpty() ? "" : ",\"crash_records\":[" + String.join(",", out) + "]";
    }

    int run() {
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (exitCode == null) { // a signal, not main's own exit: stop the loop and let main close and say its code
                running = false;
                consumer.wakeup();
                try {
                    main.join(60000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            // the JVM would exit 143 after a SIGTERM; the contract wants 0 (a failure of the member's: 1)
            Runtime.getRuntime().halt(exitCode == null ? 0 : exitCode);
        }, "share-member-shutdown"));
        topics = Arrays.asList(env("HARNESS_TOPICS", System.getenv("HARNESS_TOPIC")).split(","));
        firstTopic = topics.get(0);
        consumer.subscribe(topics);
        if (controlPath != null) {
            sun.misc.Signal.handle(new sun.misc.Signal("USR1"), sig -> controlPending = true);
        }
        String client = q("apache-kafka-java " + KafkaVersion.get());
        event("started", "pid", Long.toString(ProcessHandle.current().pid()), "protocol", q(Vocabulary.SHARE_PROTOCOL), "group_id",
                q(System.getenv("HARNESS_GROUP_ID")), "topic", q(topics.get(0)), "subscription", jsonList(topics),
                "controls", controlPath == null ? "[]" : "[\"subscription\"]", "instance_id", "null", "rack",
                env("HARNESS_RACK", "").isEmpty() ? "null" : q(System.getenv("HARNESS_RACK")), "client", client,
                "effective", "{\"share.acknowledgement.mode\":" + q(mode) + ",\"processing_ms\":"
                        + String.format(Locale.ROOT, "%.3f", processingS * 1000) + crashRecords() + ",\"client\":"
                        + client + "}");
        try {
            while (running) {
                if (controlPending) {
                    control();
                }
                implicitAsked();
                ConsumerRecords<byte[], byte[]> recs;
                double began = mono();
                try {
                    recs = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    break;
                }
                // KafkaShareConsumer fetches the next records while the application works on the last ones: their
                // locks run from then, so they are judged from the start of the previous poll
                double acquired = lastPollAt >= 0 ? lastPollAt : began;
                lastPollAt = began;
                String since = String.format(Locale.ROOT, "%.9f", acquired);
                List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    short count = r.deliveryCount().orElseThrow(
                            () -> new IllegalStateException("the client gave no delivery count for " + r));
                    event("share_acquired", "topic", q(r.topic()), "partition", Integer.toString(r.partition()),
                            "offset", Long.toString(r.offset()), "delivery_count", Short.toString(count),
                            "since_mono", since);
                    batch.add(r);
                }
                if (!batch.isEmpty()) {
                    work(batch, acquired);
                    if (mode.equals("explicit")) {
                        try {
                            commit();
                        } catch (WakeupException e) {
                            break; // a SIGTERM stop: the acknowledgements are committed below, then close
                        }
                    }
                    if (fatal != null) {
                        die();
                    }
                }
            }
            // A SIGTERM's wakeup spent in no call yet would make the next one throw: once more then. Without it a
            // member stopped between its accept and its commit left without closing, the broker's answer to the
            // accept never written (share-scale-out-in --member java, seed 1: two records "ended by exit")
            implicitAsked();
            try {
                commit();
            } catch (WakeupException e) {
                commit();
            }
            consumer.close(Duration.ofSeconds(10));
            unanswered();
            event("stopped", "reason", q("sigterm"));
        } catch (RuntimeException e) { // the member's own failure: said as such, never as a graceful stop (exit 1)
            event("error", "fatal", "true", "error", q(e.getClass().getSimpleName() + ": " + e.getMessage()));
            throw e;
        }
        return 0;
    }

    static String jsonList(List<String> xs) {
        List<String> quoted = new ArrayList<>();
        for (String x : xs) {
            quoted.add(q(x));
        }
        return "[" + String.join(",", quoted) + "]";
    }

    /**
     * The harness's control file (docs/member-contract.md, Controls: the JSON object the harness writes, of seq,
     * subscription and subscribe_by): subscribe to the new topics, the acknowledgements owed committed first; then
     * say so in a `control` event with the file's seq.
     */
    void control() {
        controlPending = false;
        String text;
        try {
            text = java.nio.file.Files.readString(java.nio.file.Path.of(controlPath));
        } catch (IOException e) {
            event("error", "fatal", "false", "error", q("control file: " + e));
            return;
        }
        java.util.regex.Matcher seqM = java.util.regex.Pattern.compile("\"seq\"\\s*:\\s*(\\d+)").matcher(text);
        java.util.regex.Matcher subM = java.util.regex.Pattern.compile("\"subscription\"\\s*:\\s*\\[([^\\]]*)\\]")
                .matcher(text);
        java.util.regex.Matcher byM = java.util.regex.Pattern.compile("\"subscribe_by\"\\s*:\\s*\"([^\"]*)\"")
                .matcher(text);
        long seq = seqM.find() ? Long.parseLong(seqM.group(1)) : 0;
        if (seq <= controlSeq) {
            return;
        }
        controlSeq = seq;
        String by = byM.find() ? byM.group(1) : Vocabulary.DEFAULT_SUBSCRIBE_BY;
        if (!subM.find() || !Vocabulary.SUBSCRIBE_BY.contains(by)) {
            event("error", "fatal", "false", "error", q("control file: a share member takes a subscription, by one of "
                    + Vocabulary.SUBSCRIBE_BY + " (got " + text + ")"));
            return;
        }
        List<String> next = new ArrayList<>();
        java.util.regex.Matcher item = java.util.regex.Pattern.compile("\"([^\"]*)\"").matcher(subM.group(1));
        while (item.find()) {
            next.add(item.group(1));
        }
        if (!Vocabulary.MISBEHAVE_KEEP_DROPPED_SHARE_TOPIC.equals(misbehave)) { // that one keeps the old subscription
            implicitAsked();
            commit();
            if (!by.equals(Vocabulary.DEFAULT_SUBSCRIBE_BY)) { // leave the group first, then join afresh
                consumer.unsubscribe();
            }
            consumer.subscribe(next);
        }
        topics = next;
        event("control", "seq", Long.toString(seq), "subscription", jsonList(next), "subscribe_by", q(by));
    }

    public static void main(String[] args) throws Exception {
        ShareMember m = new ShareMember();
        int code;
        try {
            code = m.run();
        } catch (RuntimeException e) {
            e.printStackTrace(); // the member's log; its history has the error event
            code = 1;
        }
        m.exitCode = code;
        if (m.running) {
            System.exit(code); // main's own end (not a SIGTERM stop, which ends the loop): the hook halts with it
        }
        // a SIGTERM stop: the shutdown hook, waiting for this thread, halts with the code (System.exit would block
        // here, the JVM already shutting down)
    }
}
