"""The kafka-streams (and connect-runtime) version a run picks by default, on hand-made version lists."""
import pytest

from harness.kafka import dist as kafka_dist
from harness.members import streams_member
from harness.base.errors import BadInput

PUBLISHED = ["3.9.1", "3.9.2", "4.2.2", "4.3.0", "4.3.1"]


@pytest.mark.parametrize("brokers, want", [
    ("4.3.1", "4.3.1"),   # the brokers' own release
    ("4.4.0", "4.3.1"),   # not mirrored yet: the newest before it
    ("4.3.0", "4.3.0"),
    ("4.0.0", "3.9.2"),   # 4.0.x missing from the list: the newest 3.x
    ("3.9.10", "3.9.2"),  # compared as numbers, not as text
])
def test_newest_up_to(brokers, want):
    assert streams_member.newest_up_to(brokers, PUBLISHED) == want


def test_newest_up_to_none_older():
    assert streams_member.newest_up_to("3.0.0", PUBLISHED) is None


def _lists(monkeypatch, kept, fresh):
    calls = []

    def published(artifact=kafka_dist.SCALA_ARTIFACT, *, refresh=False):
        assert artifact == "kafka-streams"
        calls.append(refresh)
        return fresh if refresh else kept
    monkeypatch.setattr(kafka_dist, "published_versions", published)
    return calls


def test_default_falls_back_and_says_so(monkeypatch):
    calls = _lists(monkeypatch, PUBLISHED, PUBLISHED)
    said = []
    assert streams_member.version_for_brokers("4.4.0", progress=said.append) == "4.3.1"
    assert calls == [False, True]  # the kept list lacked 4.4.0, so it was fetched again
    assert said == ["kafka-streams 4.4.0 is not on Maven Central (yet); the Streams instances run kafka-streams 4.3.1"]


def test_default_takes_a_release_the_refetched_list_has(monkeypatch):
    _lists(monkeypatch, PUBLISHED, PUBLISHED + ["4.4.0"])
    said = []
    assert streams_member.version_for_brokers("4.4.0", progress=said.append) == "4.4.0"
    assert said == []


def test_default_is_the_brokers_version_without_refetch(monkeypatch):
    calls = _lists(monkeypatch, PUBLISHED, [])
    assert streams_member.version_for_brokers("4.3.1", progress=print) == "4.3.1"
    assert calls == [False]


def test_no_release_old_enough_is_bad_input(monkeypatch):
    _lists(monkeypatch, PUBLISHED, PUBLISHED)
    with pytest.raises(BadInput, match="no kafka-streams release up to 2.8.0"):
        streams_member.version_for_brokers("2.8.0", progress=print)


def test_connect_falls_back_to_the_newest_release_that_resolves(monkeypatch):
    """connect-runtime 4.4.0 is published but a dependency of it is not served (seen here: Jetty 12.0.39)."""
    from harness.members import connect_member
    monkeypatch.setattr(connect_member, "_published", lambda v: ["4.3.0", "4.3.1", "4.4.0", "4.5.0"])
    tried = []

    def build(version, *, progress):
        tried.append(version)
        if version == "4.4.0":
            raise BadInput("connect-runtime 4.4.0 cannot be resolved from Maven Central (see resolve.log)")
        return ("java", "HarnessWorker")
    monkeypatch.setattr(connect_member, "connect_worker_command", build)
    said = []
    assert connect_member.version_for_brokers("4.4.0", progress=said.append) == "4.3.1"
    assert tried == ["4.4.0", "4.3.1"]
    assert said[-1] == "connect-runtime 4.4.0 is not usable here; the workers run 4.3.1"
    tried.clear()
    assert connect_member.version_for_brokers("4.3.1", progress=said.append) == "4.3.1" and tried == ["4.3.1"]


def test_a_dependency_missing_from_maven_is_remembered_for_a_day(tmp_path, monkeypatch):
    from harness.kafka import maven_libs
    (tmp_path / "UNRESOLVABLE").write_text(__import__("hashlib").sha256(b"<pom/>").hexdigest()[:16] + "\n")
    monkeypatch.setattr(maven_libs, "require_tool", lambda *a, **k: pytest.fail("Maven asked again"))
    with pytest.raises(BadInput, match="tried within the last day"):
        maven_libs.resolve_libs("<pom/>", tmp_path, artifact="connect-runtime", version="4.4.0", progress=print)
