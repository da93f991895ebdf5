"""Verify: a scenario's topics created later and its `create_topic` / `delete_topic` steps are checked before anything
starts: a topic created later is left out of the run's starting topics but a subscription may name it; a step on a
topic that is not created later, a create of a topic that exists by then, a delete of one that does not, and a file
whose every topic is created later are each one line and exit 2, with no cluster, process or run directory.
Setup: `harness.plan.topics` directly, and the CLI's `main` with `--dry-run` on a file under tmp_path.
"""
from __future__ import annotations

import pytest

from harness.base.errors import BadInput
from harness.cli import main
from harness.plan.scenarios import Action
from harness.plan.topics import check, real_subscription, run_topics, schedule_refusal

TOPICS = (("orders", 6), ("late", 3, "later"))


def test_a_topic_created_later_is_not_among_the_starting_topics_but_a_subscription_may_name_it():
    ts = run_topics("r1", TOPICS, 4)
    assert [t.real for t in ts] == ["t-r1-orders"]
    assert real_subscription("r1", ts, ("orders", "late", "^la.*")) == ("t-r1-orders", "t-r1-late", "^t-r1-la.*")
    check(TOPICS, {"every member": ("late",)})  # no error


def test_every_topic_created_later_is_refused():
    with pytest.raises(BadInput, match="every topic is created later"):
        check((("late", 3, "later"),), {})


@pytest.mark.parametrize("steps, why", [
    ([("delete_topic", "late")], "step 0 (delete_topic): topic 'late' does not exist by then"),
    ([("create_topic", "late"), ("create_topic", "late")], "step 1 (create_topic): topic 'late' exists by then"),
    ([("create_topic", "orders")], "step 0 (create_topic): topic 'orders' is not one of the run's topics created later"),
])
def test_topic_steps_out_of_order_are_refused(steps, why):
    got = schedule_refusal(TOPICS, [Action(kind=k, params={"topic": t}) for k, t in steps])
    assert got is not None and got.startswith(why), got


def test_create_delete_create_is_taken():
    steps = [Action(kind=k, params={"topic": "late"}) for k in ("create_topic", "delete_topic", "create_topic")]
    assert schedule_refusal(TOPICS, steps) is None


BODY = '''name = "s"
[[topics]]
name = "orders"
partitions = 2
[[topics]]
name = "late"
partitions = 2
created = "later"
[members]
count = 2
subscription = ["orders", "^late.*"]
[[steps]]
action = "{}"
topic = "late"
'''


def test_a_delete_before_any_create_is_one_line_and_exit_2_before_anything_starts(tmp_path, capsys, nothing_starts):
    f = tmp_path / "s.toml"
    f.write_text(BODY.format("create_topic"))
    assert main(["run", str(f), "--dry-run", "--kafka-version", "4.4.0", "--runs-root", str(tmp_path / "r")]) == 0
    assert "create_topic {'topic': 'late'}" in capsys.readouterr().out
    f.write_text(BODY.format("delete_topic"))
    assert main(["run", str(f), "--dry-run", "--kafka-version", "4.4.0", "--runs-root", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "topic 'late' does not exist by then" in err[0], err
    assert not (tmp_path / "r").exists()


def test_a_bad_created_word_is_one_line_and_exit_2(tmp_path, capsys, nothing_starts):
    f = tmp_path / "s.toml"
    f.write_text(BODY.format("create_topic").replace('created = "later"', 'created = "soon"'))
    assert main(["run", str(f), "--dry-run", "--kafka-version", "4.4.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "created" in err[0], err
