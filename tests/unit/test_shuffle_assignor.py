"""The Java member's shuffle-assignor self-test (harness/members/java/Member.java `ShuffleAssignor`), run on the
Kafka client's own assignor API without a broker: a small driver hands it a group (members, what each owns) and
prints what it assigns. It must go by the name of the run's protocol's assignor and speak that protocol's rebalance
protocol; deal counts two or more apart (the sticky balance broken) anew when the group's size changes (members keep
fewer than they could: strict stickiness broken); and stay legal under the cooperative protocol: a partition another
member owns goes to nobody in the first round and to its new holder in the next (KIP-429's two steps), which the
client does not check for an assignor named cooperative-sticky.

Compiled against the kafka-clients jar of a Kafka release or client release the harness has cached (the newest and
the oldest found: the Java member runs on kafka-clients 2.4 and newer); skipped without a JDK or such a jar."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.base.tools import cache_dir
from harness.base.versions import version_key

ROOT = Path(__file__).resolve().parents[2]
MEMBER = ROOT / "harness" / "members" / "java" / "Member.java"

DRIVER = """
import java.util.*;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.*;
import org.apache.kafka.common.*;

/** args: protocol, partitions of topic t, then member=owned,partitions (one per member). Prints the name, the
 * protocols, and member=assigned per line. */
public class ShuffleDriver {
    public static void main(String[] args) {
        Member.ShuffleAssignor.protocol = args[0];
        Member.ShuffleAssignor a = new Member.ShuffleAssignor();
        List<PartitionInfo> parts = new ArrayList<>();
        for (int p = 0; p < Integer.parseInt(args[1]); p++) {
            parts.add(new PartitionInfo("t", p, null, new Node[0], new Node[0]));
        }
        Cluster cluster = new Cluster("c", List.of(), parts, Set.of(), Set.of());
        Map<String, Subscription> subs = new HashMap<>();
        for (int i = 2; i < args.length; i++) {
            String[] kv = args[i].split("=", -1);
            List<TopicPartition> owned = new ArrayList<>();
            for (String p : kv[1].split(",")) {
                if (!p.isEmpty()) {
                    owned.add(new TopicPartition("t", Integer.parseInt(p)));
                }
            }
            subs.put(kv[0], new Subscription(List.of("t"), null, owned));
        }
        System.out.println(a.name() + " " + a.supportedProtocols());
        new TreeMap<>(a.assign(cluster, new GroupSubscription(subs)).groupAssignment()).forEach((m, asg) -> {
            StringBuilder sb = new StringBuilder(m + "=");
            asg.partitions().stream().mapToInt(TopicPartition::partition).sorted()
                    .forEach(p -> sb.append(sb.charAt(sb.length() - 1) == '=' ? "" : ",").append(p));
            System.out.println(sb);
        });
    }
}
"""


def _client_libs() -> list[Path]:
    """The cached library directories holding a kafka-clients jar: the newest and the oldest release."""
    found = {}
    for jar in cache_dir().glob("**/libs/kafka-clients-*.jar"):
        v = jar.name.removeprefix("kafka-clients-").removesuffix(".jar")
        try:
            found.setdefault(version_key(v), jar.parent)
        except ValueError:
            continue
    keys = sorted(found)
    return [found[k] for k in dict.fromkeys([keys[-1], keys[0]])] if keys else []


LIBS = _client_libs()
pytestmark = pytest.mark.skipif(not (shutil.which("java") and shutil.which("javac") and LIBS),
                                reason="no JDK (java and javac) or no cached kafka-clients jar")


@pytest.fixture(scope="module", params=LIBS, ids=lambda p: p.parent.name)
def run(request, tmp_path_factory):
    """run(protocol, partitions, *members) -> the driver's lines, the assignor compiled against one release."""
    from harness.kafka import jvm_build
    out = tmp_path_factory.mktemp("shuffle")
    (src := out / "ShuffleDriver.java").write_text(DRIVER)
    program = jvm_build.JvmProgram(name="shuffle-driver", what="the shuffle assignor's driver", main="ShuffleDriver",
                                   sources=(MEMBER, src), jvm_opts=(), against="kafka-clients")
    libs = ":".join(str(p) for p in sorted(request.param.glob("*.jar")))
    mp = pytest.MonkeyPatch()
    mp.setenv("HARNESS_CACHE", str(out / "cache"))
    try:
        built = jvm_build.build(program, "0", classpath=libs, progress=lambda m: None)
    finally:
        mp.undo()

    def go(protocol: str, partitions: int, *members: str) -> list[str]:
        return subprocess.run(built.command(args=(protocol, str(partitions), *members)), capture_output=True,
                              text=True, timeout=120, check=True).stdout.splitlines()
    return go


def assigned(lines: list[str]) -> dict[str, list[int]]:
    return {m: [int(p) for p in ps.split(",") if p] for m, ps in (line.split("=") for line in lines[1:])}


def test_it_goes_by_the_protocols_assignor_and_speaks_its_rebalance_protocol(run):
    assert run("classic-cooperative", 6, "a=")[0] == "cooperative-sticky [EAGER, COOPERATIVE]"
    assert run("classic-eager", 6, "a=")[0] == "range [EAGER]"


def test_it_deals_counts_two_apart_and_anew_when_the_group_grows(run):
    three = assigned(run("classic-eager", 6, "m1=", "m2=", "m3="))
    assert three == {"m1": [0, 2, 3], "m2": [1, 4], "m3": [5]}  # 3, 2, 1: not within one
    four = assigned(run("classic-eager", 6, "m1=", "m2=", "m3=", "m4="))
    assert four == {"m1": [0, 3, 4], "m2": [1, 5], "m3": [2], "m4": []}
    for m in three:  # every member of three keeps fewer than it had and than it holds now: strict stickiness broken
        kept = set(three[m]) & set(four[m])
        assert len(kept) < min(len(three[m]), len(four[m])), m


def test_under_the_cooperative_protocol_it_revokes_before_it_moves(run):
    # the three's assignment owned, a fourth member joins: what changes hands goes to nobody first
    first = assigned(run("classic-cooperative", 6, "m1=0,2,3", "m2=1,4", "m3=5", "m4="))
    assert first == {"m1": [0, 3], "m2": [1], "m3": [], "m4": []}
    # its owners gave 2, 4 and 5 up and rejoined: the next round hands them to their new holders
    second = assigned(run("classic-cooperative", 6, "m1=0,3", "m2=1", "m3=", "m4="))
    assert second == {"m1": [0, 3, 4], "m2": [1, 5], "m3": [2], "m4": []}
    # a partition two members claim (a zombie's stale claim) goes to neither
    two = assigned(run("classic-cooperative", 6, "m1=0,1", "m2=1"))
    assert two == {"m1": [0, 2, 4], "m2": [3, 5]}  # 1 would be m1's: dealt 0, 1, 2, 4 and 3, 5
