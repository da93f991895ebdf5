"""'latest' and other version prefixes: remembered for a day, then Maven Central's list is read again.

Hand-made caches (a COMPLETE stamp per version) and version lists; no Maven runs.
"""
import os
import time

import pytest

from harness.kafka import dist as kafka_dist
from harness.base.errors import SetupError


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path))
    for v in ("4.3.1", "4.4.0"):
        d = tmp_path / "kafka" / v
        (d / "libs").mkdir(parents=True)
        (d / "COMPLETE").write_text(kafka_dist._pom_stamp(v))
    (tmp_path / "kafka" / "alias-4").write_text("4.3.1")
    return tmp_path


def _listing(monkeypatch, versions=None, error=None):
    calls = []

    def published(artifact=kafka_dist.SCALA_ARTIFACT, *, refresh=False):
        calls.append(refresh)
        if error:
            raise error
        return versions
    monkeypatch.setattr(kafka_dist, "published_versions", published)
    return calls


def _age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_remembered_within_a_day_without_reading_the_list(cache, monkeypatch):
    calls = _listing(monkeypatch, ["4.3.1", "4.4.0"])
    assert kafka_dist.resolve("latest", progress=print).version == "4.3.1"
    assert calls == []


def test_a_day_on_a_new_release_is_taken_up(cache, monkeypatch):
    _age(cache / "kafka" / "alias-4", kafka_dist.ALIAS_RECHECK_S + 60)
    calls = _listing(monkeypatch, ["4.3.1", "4.4.0"])
    assert kafka_dist.resolve("latest", progress=print).version == "4.4.0"
    assert calls == [True]  # read again from Maven Central, not from the kept list
    assert (cache / "kafka" / "alias-4").read_text() == "4.4.0"


def test_a_day_on_with_no_new_release_the_clock_restarts(cache, monkeypatch):
    alias = cache / "kafka" / "alias-4"
    _age(alias, kafka_dist.ALIAS_RECHECK_S + 60)
    _listing(monkeypatch, ["4.2.2", "4.3.1"])
    assert kafka_dist.resolve("latest", progress=print).version == "4.3.1"
    assert time.time() - alias.stat().st_mtime < 60


def test_list_unreadable_keeps_the_remembered_release(cache, monkeypatch):
    _age(cache / "kafka" / "alias-4", kafka_dist.ALIAS_RECHECK_S + 60)
    _listing(monkeypatch, error=SetupError("offline"))
    said = []
    assert kafka_dist.resolve("latest", progress=said.append).version == "4.3.1"
    assert said == ["Maven Central's Kafka versions could not be read again; 'latest' stays 4.3.1"]


def test_list_unreadable_and_nothing_remembered_is_an_error(cache, monkeypatch):
    (cache / "kafka" / "alias-4").unlink()
    _listing(monkeypatch, error=SetupError("offline"))
    with pytest.raises(SetupError, match="offline"):
        kafka_dist.resolve("latest", progress=print)
