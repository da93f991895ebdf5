"""The synthetic correct run (harness.analytics.synth_run): what a correct group writes, judged valid; broken, not."""
from __future__ import annotations

import pytest

from harness.analytics import synth_run
from harness.base.vocabulary import CONSUMER_PROTOCOLS
from harness.analytics.synth_group import Shape
from harness.invariants import judge, rules_for
from harness.invariants.applies import recorded
from harness.record.history import History
from harness.record.schema import validate_dir


@pytest.mark.parametrize("proto", CONSUMER_PROTOCOLS)
def test_every_event_has_the_schema_s_shape(tmp_path, proto):
    path = synth_run.write(tmp_path, Shape(members=3, partitions=6, events=1000, protocol=proto))
    assert validate_dir(path / "history") == []


def judged(tmp_path, **shape):
    path = synth_run.write(tmp_path, Shape(**shape))
    history = History.load(path / "history")
    return path, history, judge(history)


def assert_every_applying_invariant_valid(history, verdicts):
    plan = recorded(history)
    for name, v in verdicts.items():
        if v.status == "skipped":  # only where the plan said so before the run
            assert plan[name]["applies"] is False, (name, v.message)
        else:
            assert v.status == "valid", (name, v.status, v.message)


def test_ten_members_on_thirty_partitions_are_judged_valid(tmp_path):
    path, history, verdicts = judged(tmp_path, members=10, partitions=30, events=5000)
    assert_every_applying_invariant_valid(history, verdicts)
    assert verdicts["rebalance_cause"].status == "valid"  # from the coordinator's lines
    assert verdicts["record_integrity"].measurements.get("duplicates", 0) == 0
    assert 4000 < len(history) < 6500


@pytest.mark.parametrize("proto", CONSUMER_PROTOCOLS)
def test_each_protocol_s_shape_is_judged_valid(tmp_path, proto):
    _, history, verdicts = judged(tmp_path, members=3, partitions=6, events=2000, protocol=proto)
    assert_every_applying_invariant_valid(history, verdicts)
    if rules_for(proto).sticky:  # one member stops: one cause, judged
        assert verdicts["strict_stickiness"].status == "valid"
        assert verdicts["bounded_migrations"].status == "valid"


def test_a_partition_given_to_two_members_at_once_fails_exclusive_ownership(tmp_path):
    path = synth_run.write(tmp_path, Shape(members=10, partitions=30, events=5000), broken="double_owner")
    v = judge(History.load(path / "history"))["exclusive_ownership"]
    assert v.status == "invalid" and "partition 0 assigned to" in v.message, v.message


def test_a_shape_that_cannot_be_is_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(ValueError, match="partitions .* must be at least members"):
        synth_run.write(tmp_path, Shape(members=10, partitions=5))
    assert synth_run.main([str(tmp_path), "--members", "1"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
