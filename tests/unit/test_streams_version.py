"""The kafka-streams version a Streams run picks by default, on hand-made version lists."""
import pytest

from harness import kafka_dist
from harness.members import streams_member
from harness.errors import BadInput

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
