"""Verify: bad input and missing tools give one clear line on stderr and exit code 2.

Setup: the `harness` command as a user runs it, in a subprocess.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
HARNESS = [sys.executable, "-m", "harness.cli"]


def run(args, *, env=None, timeout=300):
    return subprocess.run(HARNESS + args, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def one_line_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_unknown_scenario(tmp_path):
    one_line_error(run(["run", "no-such-scenario", "--runs-root", str(tmp_path)]), "unknown scenario", "no-such-scenario")
    assert not list(tmp_path.iterdir()), "no run directory for input refused up front"


def test_unknown_protocol():
    one_line_error(run(["run", "member-kill", "--protocol", "nope"]), "invalid choice", "nope")


def test_unknown_kafka_version(tmp_path):
    one_line_error(run(["kafka", "9.9.9"], env={"HARNESS_CACHE": str(tmp_path)}), "9.9.9", "does not exist")


def test_malformed_kafka_version():
    one_line_error(run(["kafka", "four"]), "bad Kafka version")


def test_unknown_client_version(tmp_path):
    r = run(["run", "member-kill", "--client-version", "0.0.1", "--runs-root", str(tmp_path)],
            env={"HARNESS_CACHE": str(tmp_path / "cache")})
    one_line_error(r, "confluent-kafka 0.0.1")
    assert not list(tmp_path.glob("*/STATUS")), "refused before any run directory (the install is tried up front)"


def test_consumer_protocol_on_kafka_3(tmp_path):
    r = run(["run", "broker-upgrade", "--protocol", "consumer", "--runs-root", str(tmp_path)])
    one_line_error(r, "does not run with protocol consumer")


def _path_without(tmp_path: Path, *missing: str) -> str:
    """The current PATH with the named tools hidden: a directory that holds one is replaced by a
    directory of links to everything else in it."""
    shadow = tmp_path / "bin"
    shadow.mkdir()
    dirs = []
    for d in os.environ["PATH"].split(os.pathsep):
        if not d or not os.path.isdir(d):
            continue
        if any(os.path.exists(os.path.join(d, tool)) for tool in missing):
            for name in os.listdir(d):
                if name not in missing and not (shadow / name).exists():
                    (shadow / name).symlink_to(os.path.join(d, name))
            if str(shadow) not in dirs:
                dirs.append(str(shadow))
        else:
            dirs.append(d)
    return os.pathsep.join(dirs)


@pytest.mark.parametrize("tool", ["mvn", "java"])
def test_missing_java_or_maven(tool, tmp_path):
    r = run(["kafka", "latest"], env={"PATH": _path_without(tmp_path, tool), "HARNESS_CACHE": str(tmp_path / "c")})
    one_line_error(r, f"'{tool}' was not found")


def test_missing_go(tmp_path):
    """With Kafka cached but no Toxiproxy built yet, a run needs go: one line, exit 2, run marked error."""
    env = {"PATH": _path_without(tmp_path, "go"), "HARNESS_CACHE": str(tmp_path / "c")}
    r = run(["run", "member-kill", "--kafka-version", "latest", "--runs-root", str(tmp_path / "runs"), "--quiet"],
            env=env)
    one_line_error(r, "'go' was not found")
    assert next((tmp_path / "runs").glob("*/STATUS")).read_text().startswith("error")


# -- Kafka Streams settings: refused before anything starts
@pytest.mark.parametrize("args, needle", [
    (["--streams-set", "num.standby.replicas=3"], "cannot be placed"),
    (["--streams-set", "processing.guarantee=exactly_once"], "processing.guarantee"),
    (["--streams-set", "probing.rebalance.interval.ms=1000"], "at least 60000"),
    (["--streams-set", "max.warmup.replicas=0"], "max.warmup.replicas"),
    (["--streams-set", "no.such.setting=1"], "unknown Streams setting"),
    (["--streams-set", "num.standby.replica=1"], "did you mean num.standby.replicas?"),
    (["--streams-set", "num.standby.replicas"], "KEY=VALUE"),
    (["--misbehave", "claim-extra"], "unknown misbehaviour"),
])
def test_bad_streams_settings(args, needle, tmp_path):
    one_line_error(run(["run", "streams-scale-out", *args, "--runs-root", str(tmp_path)]), needle)
    assert not list(tmp_path.iterdir()), "no run directory for input refused up front"


def test_streams_protocol_needs_a_newer_broker(tmp_path):
    r = run(["run", "streams-scale-out", "--protocol", "streams", "--kafka-version", "latest-3",
             "--runs-root", str(tmp_path)])
    one_line_error(r, "the streams protocol, which needs Kafka 4.2 or newer", "3.9")
    assert not list(tmp_path.iterdir()), "refused before any run directory or broker"


def test_share_groups_need_kafka_4_2_before_any_broker_starts(tmp_path):
    r = run(["run", "share-member-kill", "--kafka-version", "3.9.2", "--runs-root", str(tmp_path)], timeout=120)
    one_line_error(r, "the share protocol, which needs Kafka 4.2 or newer", "3.9.2")
    assert not list(tmp_path.iterdir()), "refused before any run directory or broker"


def test_consumer_protocol_needs_kafka_4_before_any_broker_starts(tmp_path):
    r = run(["run", "member-kill", "--protocol", "consumer", "--kafka-version", "latest-3",
             "--runs-root", str(tmp_path)], timeout=120)
    one_line_error(r, "the consumer protocol, which needs Kafka 4.0 or newer", "3.9")
    assert not list(tmp_path.iterdir()), "refused before any run directory or broker"


@pytest.mark.parametrize("args, needles", [
    (["--broker-set", "num.io.thread=4"], ["broker setting 'num.io.thread' is not defined by Kafka 4.", "num.io.threads?"]),
    (["--broker-set", "num.io.thread=4", "--kafka-version", "latest-3"], ["Kafka 3.9.", "num.io.threads?"]),
    (["--protocol", "consumer", "--group-set", "consumer.session.timeout=10000"],
     ["group setting 'consumer.session.timeout' is not defined by Kafka 4.", "consumer.session.timeout.ms?"]),
], ids=["broker-key", "broker-key-on-3", "group-key"])
def test_misspelt_broker_and_group_keys_refused_before_any_broker_starts(tmp_path, args, needles):
    """A key the release does not define (read from the release's own jars): one line, exit 2, no run directory."""
    one_line_error(run(["run", "member-kill", *args, "--runs-root", str(tmp_path)], timeout=180), *needles)
    assert not list(tmp_path.iterdir()), "refused before any run directory or broker"


# -- paths that are not what a command reads
def test_check_on_a_directory_that_is_not_a_run(tmp_path):
    one_line_error(run(["check", str(tmp_path)]), "is not a run directory")


def test_check_on_a_missing_path(tmp_path):
    one_line_error(run(["check", str(tmp_path / "nope")]), "is not a run directory")


def test_replay_of_a_directory_that_is_not_a_run(tmp_path):
    one_line_error(run(["replay", str(tmp_path)]), "is not a run directory")


def test_aggregate_of_a_missing_directory(tmp_path):
    one_line_error(run(["aggregate", str(tmp_path / "nonexistent"), "--out", str(tmp_path / "out")]),
                   "no such directory", "nonexistent")
    assert not (tmp_path / "out").exists()


def test_streams_protocol_without_static_membership():
    one_line_error(run(["run", "streams-static-bounce", "--protocol", "streams"]), "does not run with protocol streams")


# -- members and settings (docs/settings.md): refused with one line before any broker starts
@pytest.mark.parametrize("args, needle", [
    (["--member", "cobol"], "invalid choice: 'cobol'"),
    (["--member-command", "slot1="], "names no program"),
    (["--member-command", "prog a", "--member-command", "prog b"], "given twice"),
    (["--member-command", "prog 'unclosed"], "cannot be split"),
    (["--client-set", "fetch.min.bytes"], "--client-set wants KEY=VALUE"),
    (["--broker-set", "=1"], "--broker-set wants KEY=VALUE"),
    (["--group-set", "consumer.session.timeout.ms"], "--group-set wants KEY=VALUE"),
    (["--client-set", "group.id=mine"], "group.id is the harness's to set"),
    (["--client-set", "group.protocol=consumer"], "use --protocol"),
    (["--client-version", "2.3.0", "--protocol", "consumer"], "confluent-kafka 2.3.0 cannot speak the consumer"),
    (["--group-set", "consumer.session.timeout.ms=10000", "--kafka-version", "latest-3"],
     "need Kafka 4.0 or newer"),
])
def test_bad_member_or_setting_refused_before_any_run_directory(args, needle, tmp_path):
    one_line_error(run(["run", "member-kill", *args, "--runs-root", str(tmp_path)], timeout=120), needle)
    assert not list(tmp_path.iterdir()), "refused before any run directory or broker"


@pytest.mark.parametrize("args, needle", [
    (["--client-set", "no.such.property=1"], 'No such configuration property: "no.such.property"'),
    (["--client-set", "fetch.min.bytes=lots"], 'Invalid value for configuration property "fetch.min.bytes"'),
    (["--protocol", "consumer", "--client-set", "session.timeout.ms=10000"], "is not supported for `group.protocol"),
])
def test_client_setting_the_client_refuses(args, needle, tmp_path):
    """Checked by constructing the Python member's consumer in its own client install, before anything starts."""
    r = run(["run", "member-kill", *args, "--runs-root", str(tmp_path), "--quiet"], timeout=120)
    one_line_error(r, "refuses the client settings", needle)
    assert not list(tmp_path.iterdir()), "refused before any run directory or broker"


def test_client_setting_refused_by_an_old_client(tmp_path):
    """A setting librdkafka 2.0 does not know yet (KIP-848's group.remote.assignor) is refused by that install."""
    r = run(["run", "member-kill", "--client-version", "2.0.2", "--client-set", "group.remote.assignor=uniform",
             "--runs-root", str(tmp_path), "--quiet"], timeout=300)
    one_line_error(r, "confluent-kafka 2.0.2 refuses", "group.remote.assignor")
    assert not list(tmp_path.iterdir()), "refused before any run directory or broker"


def test_broker_setting_the_broker_refuses(tmp_path):
    """A broker refuses a bad value at start (here already when its storage is formatted): its reason, one line."""
    r = run(["run", "member-kill", "--broker-set", "num.network.threads=many", "--runs-root", str(tmp_path),
             "--quiet"], timeout=300)
    one_line_error(r, "broker 1", "Invalid value many for configuration num.network.threads")


def test_streams_runs_take_no_client_settings(tmp_path):
    one_line_error(run(["run", "streams-scale-out", "--client-set", "fetch.min.bytes=1", "--runs-root",
                        str(tmp_path)]), "--client-set does not apply")


def test_nightly_member_options_without_streams_protocols(tmp_path):
    one_line_error(run(["nightly", "--budget", "2m", "--protocols", "classic-eager,streams", "--client-set",
                        "fetch.min.bytes=1", "--runs-root", str(tmp_path)]), "leave the Streams and Connect protocols")


# -- scenario files (docs/scenarios.md): a bad file is one line naming file, step and field, before anything starts
@pytest.mark.parametrize("text, needles", [
    ('name = "x"\n[[steps]]\naction = "broker_bounce"\nbroker = 1\ndwn_s = 2', ["steps[0] (broker_bounce)", "dwn_s"]),
    ('name = "x"\n[[steps]]\naction = "nope"', ["steps[0] (nope)", "unknown action"]),
    ('name = "x"\nnme = 1\n[[steps]]\naction = "scale_out"', ["nme", "unknown field"]),
    ('name = "x"\n[[steps]\n', ["not valid TOML"]),
    ('name = "x"\n[[topics]]\nname = "a"\n[members]\nsubscription = ["b"]\n[[steps]]\naction = "scale_out"',
     ["members.subscription", "names topic 'b'"]),
    ('name = "x"\n[[topics]]\nname = "a"\n[members]\nslot_subscriptions = { "1" = ["^a("] }\n[[steps]]\n'
     'action = "scale_out"', ["members.slot_subscriptions.1", "bad regex"]),
    ('name = "x"\n[[topics]]\nname = "a"\npartitions = 0\n[[steps]]\naction = "scale_out"', ["topics.0.partitions"]),
    ('name = "x"\n[[steps]]\naction = "network_latency"\nlatency_ms = { choice = [] }\njitter_ms = 0\n'
     'duration_s = 1.0', ["steps[0] (network_latency)", "latency_ms", "choice is a non-empty list"]),
    ('name = "x"\n[[steps]]\naction = "rack_outage"\nrack = "anywhere"\ndown_s = 1.0', ["rack", "not a rack"]),
])
def test_bad_scenario_file(text, needles, tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    one_line_error(run(["run", str(f), "--runs-root", str(tmp_path / "runs")], timeout=60), str(f), *needles)
    assert not (tmp_path / "runs").exists(), "refused before any run directory or broker"


def test_missing_scenario_file(tmp_path):
    one_line_error(run(["run", str(tmp_path / "nope.toml"), "--runs-root", str(tmp_path / "runs")], timeout=60),
                   "nope.toml", "cannot read the scenario file")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("args,needles", [
    (["--protocol", "cooperative-ish"], ["invalid choice", "cooperative-ish"]),
    (["--connect-set", "scheduled.rebalance.max.delay.ms=-1"], ["scheduled.rebalance.max.delay.ms", "at least 0"]),
    (["--client-version", "2.0.1"], ["connect-runtime 2.0.1 cannot join Kafka", "KIP-896"]),
    (["--connect-set", "scheduled.rebalance.delay.ms=0"], ["did you mean scheduled.rebalance.max.delay.ms?"]),
], ids=["unknown-protocol", "negative-delay", "worker-too-old", "misspelt-key"])
def test_bad_connect_settings(tmp_path, args, needles):
    """Kafka Connect runs: an unknown connect.protocol, a scheduled delay below zero, a worker version that cannot
    join the brokers: one line, exit 2, no run directory."""
    one_line_error(run(["run", "connect-worker-kill", "--runs-root", str(tmp_path), *args]), *needles)
    assert not list(tmp_path.iterdir())
