"""Verify: the Java share member tells a lost acknowledgement answer from the broker's refusal.

Setup: the Java share member built against the newest Kafka client (as a run builds it), and a small Java
program that hands it the exceptions KafkaShareConsumer's AcknowledgementCommitCallback documents.
Then: a disconnect, a network error, a timeout, a wakeup, an interrupt, a plain client error, an unknown server
error (what the client makes of a request that timed out: docs/findings.md) and the invalid record state the client
makes up itself when it read no answer for the partition ("Acknowledgement not successful due to invalid response
from broker": docs/findings.md) are `lost` (the broker may have taken the acknowledgement); the broker's own error
answers (invalid record state, not leader,
no share session, not authorized) are `given`. The checkers read that field (`share_acked.answer`), so that a
lost answer of the Java member is no longer judged as a refusal.
"""
import subprocess

import pytest

from harness.kafka import dist as kafka_dist
from harness.members.java_member import SHARE_PROGRAM
from harness.kafka.jvm_build import build

pytestmark = pytest.mark.integration

PROBE = """
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.*;

public class Probe {
    public static void main(String[] a) {
        Exception[] cases = {
            new DisconnectException("node 2 disconnected"), new NetworkException("gone"),
            new TimeoutException("no answer in 10000 ms"), new WakeupException(),
            new InterruptException(new InterruptedException()), new KafkaException("closing"),
            new InvalidRecordStateException("The record state is invalid."),
            new InvalidRecordStateException("Acknowledgement not successful due to invalid response from broker"),
            new NotLeaderOrFollowerException("moved"), new ShareSessionNotFoundException("no session"),
            new UnknownServerException("The server experienced an unexpected error"),
            new TopicAuthorizationException("no")};
        for (Exception e : cases) {
            String made = String.valueOf(e.getMessage()).startsWith("Acknowledgement not successful") ? "(client)" : "";
            System.out.println(e.getClass().getSimpleName() + made + " " + ShareMember.answerOf(e));
        }
        System.out.println("null " + ShareMember.answerOf(null));
    }
}
"""


def test_the_java_share_member_says_which_answers_were_lost(tmp_path):
    dist = kafka_dist.resolve("latest")
    built = build(SHARE_PROGRAM, dist.version, classpath=dist.classpath)
    probe = tmp_path / "Probe.java"
    probe.write_text(PROBE)
    r = subprocess.run([built.java, "-cp", f"{built.jar}:{built.classpath}", str(probe)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    said = dict(line.split() for line in r.stdout.split("\n") if line.strip())
    assert said == {"DisconnectException": "lost", "NetworkException": "lost", "TimeoutException": "lost",
                    "WakeupException": "lost", "InterruptException": "lost", "KafkaException": "lost",
                    "UnknownServerException": "lost",
                    "InvalidRecordStateException": "given", "InvalidRecordStateException(client)": "lost",
                    "NotLeaderOrFollowerException": "given",
                    "ShareSessionNotFoundException": "given", "TopicAuthorizationException": "given",
                    "null": "given"}, r.stdout
