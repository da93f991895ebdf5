"""The Python member's `phantom-commit` self-test (HARNESS_MISBEHAVE), without a broker: as it stops, after its last
commit, it records one commit it never sent, PHANTOM_AHEAD past its last committed offset of a partition it holds,
and the client is asked for nothing more; a correct member records only what its client committed."""
from __future__ import annotations

from harness.members import python_member as pm
from tests.unit.test_python_member_commits import commits, member, poll  # noqa: F401 (the fixture, shared)


def test_the_phantom_commit_is_recorded_as_acknowledged_but_never_sent(member, tmp_path):
    m = member("sync", HARNESS_MISBEHAVE="phantom-commit")
    poll(m)
    m._final_commit()
    m._phantom_commit()
    m.hist.close()
    assert m.consumer.calls == [([("t", 0, 5), ("t", 1, 3)], False)]  # the client committed only the real one
    real, phantom = commits(tmp_path)
    assert real["offsets"] == [["t", 0, 5], ["t", 1, 3]]
    assert (phantom["ok"], phantom["offsets"]) == (True, [["t", 0, 5 + pm.PHANTOM_AHEAD]])


def test_no_phantom_without_a_commit_to_lie_about(member, tmp_path):
    m = member("sync", HARNESS_MISBEHAVE="phantom-commit")
    m._phantom_commit()
    m.hist.close()
    assert commits(tmp_path) == []
