"""Setting keys checked against a release's config names: the pure matching (names, prefixes, the close name),
the names kept per version, and what run.resolve refuses up front, on small hand-made name lists."""
import pytest

from harness.kafka import config_keys
from harness.kafka import config_names
from harness.base.versions import is_release
from harness.kafka import dist as kafka_dist
from harness.cluster.base import BrokerSettings
from harness.cluster.fake import FakeCluster
from harness.base.errors import BadInput
from harness.plan.config import RunConfig
from harness.run.resolve import resolve

BROKER = frozenset({"num.io.threads", "num.network.threads", "log.roll.ms", "group.consumer.assignors"})
GROUP = frozenset({"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"})


def test_a_key_is_known_by_name_extra_or_prefix():
    assert config_keys.known("num.io.threads", BROKER)
    assert not config_keys.known("num.io.thread", BROKER)
    assert config_keys.known("super.users", BROKER, extra=config_keys.BROKER_EXTRA)
    prefixes = config_keys.BROKER_PREFIXES
    assert config_keys.known("listener.name.broker.ssl.keystore.location", BROKER, prefixes=prefixes)
    assert config_keys.known("config.providers.file.class", BROKER, prefixes=prefixes)
    assert not config_keys.known("listener.name.", BROKER, prefixes=prefixes)  # a prefix alone names nothing
    assert not config_keys.known("listener.names", BROKER, prefixes=prefixes)


def test_the_close_name_is_offered_only_when_close():
    assert config_keys.closest("num.io.thread", BROKER) == "num.io.threads"
    assert config_keys.closest("consumer.session.timeout", GROUP) == "consumer.session.timeout.ms"
    assert config_keys.closest("zookeeper.connect", BROKER) is None


def test_check_refuses_the_first_unknown_key_naming_the_release_and_the_close_name():
    config_keys.check("broker setting", ["num.io.threads", "log.roll.ms"], BROKER, by="Kafka 4.3.1")
    with pytest.raises(BadInput) as e:
        config_keys.check("broker setting", ["num.io.threads", "num.io.thread", "zzz"], BROKER, by="Kafka 4.3.1")
    assert str(e.value) == "broker setting 'num.io.thread' is not defined by Kafka 4.3.1; did you mean num.io.threads?"
    with pytest.raises(BadInput, match=r"^group setting 'zzz' is not defined by Kafka 4.3.1$"):
        config_keys.check("group setting", ["zzz"], GROUP, by="Kafka 4.3.1")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))

    def no_resolve(v, progress=None):
        raise AssertionError(f"kept names need no Kafka {v}")
    monkeypatch.setattr(kafka_dist, "resolve", no_resolve)
    return tmp_path


def keep(cache, version, kind, lines, key=None):
    d = cache / "config-names" / version
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{kind}.txt").write_text("".join(f"{x}\n" for x in [f"# {key or config_names._key(kind)}", *lines]))


def test_kept_names_are_read_without_a_jvm(cache):
    keep(cache, "4.3.1", "broker", sorted(BROKER))
    keep(cache, "3.9.2", "group", ["# none"])
    assert config_names.names("broker", "4.3.1") == BROKER
    assert config_names.names("group", "3.9.2") is None  # the release defines no group configs


def test_names_kept_by_another_revision_are_read_again(cache, monkeypatch):
    keep(cache, "4.3.1", "broker", sorted(BROKER), key="0123456789abcdef")
    monkeypatch.setattr(config_names.shutil, "which", lambda name: None)
    said = []
    assert config_names.names("broker", "4.3.1", progress=said.append) is None  # no JDK: not checked, said so
    assert "not checked" in said[0]


def test_check_reads_every_release_a_cluster_runs_and_groups_only_from_4_0(monkeypatch):
    kept = {("broker", "3.9.2"): BROKER | {"log.message.format.version"}, ("broker", "4.3.1"): BROKER,
            ("group", "4.3.1"): GROUP}
    asked = []

    def names(kind, version, progress=None):
        asked.append((kind, version))
        return kept.get((kind, version))
    monkeypatch.setattr(config_names, "names", names)
    config_names.check(["log.message.format.version"], ["consumer.session.timeout.ms"], ["3.9.2", "4.3.1"])
    assert ("group", "3.9.2") not in asked
    with pytest.raises(BadInput, match=r"'num\.io\.thread' is not defined by Kafka 3\.9\.2 or 4\.3\.1; did you mean"):
        config_names.check(["num.io.thread"], [], ["3.9.2", "4.3.1"])
    with pytest.raises(BadInput, match="group setting 'consumer.session.timeout' is not defined by Kafka 4.3.1"):
        config_names.check([], ["consumer.session.timeout"], ["3.9.2", "4.3.1"])
    config_names.check(["num.io.thread"], [], ["4.3.1", "4.4.0"])  # 4.4.0's names cannot be read: not checked


@pytest.fixture
def release(monkeypatch, tmp_path):
    """Runs on their own cluster of Kafka 4.3.1 (or the version asked for), whose names are BROKER and GROUP."""
    monkeypatch.setattr(kafka_dist, "resolve", lambda v, progress=None: kafka_dist.KafkaDist(
        v if is_release(v) else "4.3.1", tmp_path))
    asked = []

    def names(kind, version, progress=None):
        asked.append((kind, version))
        return {"broker": BROKER, "group": GROUP}[kind]
    monkeypatch.setattr(config_names, "names", names)
    return asked


def test_resolve_refuses_a_broker_key_the_release_does_not_define(release):
    cfg = RunConfig(scenario="member-kill", seed=1, kafka_version="4.3.1", broker_settings=(("num.io.thread", "4"),))
    with pytest.raises(BadInput, match="broker setting 'num.io.thread' is not defined by Kafka 4.3.1; did you mean "
                                       "num.io.threads"):
        resolve(cfg)
    resolve(RunConfig(scenario="member-kill", seed=1, broker_settings=(("num.io.threads", "4"),
                                                                       ("listener.name.x.ssl.key.password", "p"))))


def test_resolve_refuses_group_keys_of_the_run_and_of_its_group_config_steps(release):
    with pytest.raises(BadInput, match="group setting 'consumer.session.timeout'"):
        resolve(RunConfig(scenario="member-kill", seed=1, group_settings=(("consumer.session.timeout", "9"),)))
    step = {"kind": "group_config", "at": 1.0, "params": {"settings": {"consumer.heartbeat.interval": 500}}}
    with pytest.raises(BadInput, match="group setting 'consumer.heartbeat.interval' .*heartbeat.interval.ms"):
        resolve(RunConfig(scenario="member-kill", seed=1, schedule=(step,)))


def test_resolve_asks_nothing_without_keys_or_of_a_fake_cluster(release):
    resolve(RunConfig(scenario="member-kill", seed=1))
    shared = FakeCluster(work_dir="/nonexistent", version="4.3.1", settings=BrokerSettings.for_brokers(3))
    resolve(RunConfig(scenario="member-kill", seed=1, group_settings=(("no.such.key", "1"),)), shared=shared)
    assert release == []


@pytest.mark.parametrize("kw, needle", [
    ({"scenario": "streams-scale-out", "protocol": "classic", "streams_settings": (("num.standby.replica", 1),)},
     "unknown Streams setting 'num.standby.replica'; did you mean num.standby.replicas?"),
    ({"scenario": "connect-worker-kill", "protocol": "sessioned", "connect_settings": (("harness.sink.task", 1),)},
     "unknown Connect setting 'harness.sink.task'; did you mean harness.sink.tasks?")])
def test_streams_and_connect_keys_suggest_the_close_name(kw, needle):
    with pytest.raises(BadInput) as e:
        RunConfig(seed=1, **kw).validate()
    assert str(e.value) == needle
