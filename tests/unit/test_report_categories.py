"""Verify: the Allure categories cover every invariant of every kind of group and every known finding, and are made
from the registries, so that a checker registered later has its category without a hand list.

Setup: a history of each kind (consumer, Streams, Connect with a sink, share) holding only its run_start, judged;
the failure message a suite test prints for a verdict; an xfail reason as harness/suite/known.py writes it.
Then: every verdict name `judge` gives, and every name of every `*CHECKERS` registry, is a `Violation:` and an
`Undecided:` category, matched first by a message naming it invalid (unknown); a registry planted in an
invariants module is picked up; each known finding has a category that an xfail reason starting `known finding:
<id>` falls in, with status skipped, and no other finding's.
"""
import re

import pytest

from harness.findings.registry import KNOWN
from harness.record.history import History
from harness.invariants import CHECKERS, RUN_CHECKERS, judge
from harness.invariants.connect import CONNECT_CHECKERS
from harness.invariants.share import SHARE_CHECKERS
from harness.invariants.streams import STREAMS_CHECKERS
from harness.report import alluredir


def _history(kind: str) -> History:
    start = {"type": "run_start", "mono": 0.0, "wall": 0.0, "source": "harness", "kind": kind,
             "settings": {"topic": "t"}, "connect_settings": {"sink_connectors": ["sink"]}}
    return History.from_events([start, {"type": "run_end", "mono": 1.0, "wall": 1.0, "source": "harness",
                                        "status": "complete"}])


def _first(cats, status: str, message: str) -> str | None:
    """The first category Allure would file a test of this status and message under (its regex matches whole)."""
    for c in cats:
        if status in c["matchedStatuses"] and re.fullmatch(c.get("messageRegex", "(?s).*"), message):
            return c["name"]
    return None


def _message(name: str, status: str) -> str:
    return (f"run 20261127T100000-s-consumer-1: fail\n  {name}: {status}: something the checker said\n"
            f"    witness: {{}}\n  reproduce: harness replay x")


JUDGED = sorted({n for k in ("consumer", "streams", "connect", "share") for n in judge(_history(k))})


def test_the_judged_names_are_those_of_every_kind():
    assert {"exclusive_ownership", "task_exclusive_active", "connect_task_exclusive", "share_served",
            "record_integrity"} <= set(JUDGED)


@pytest.mark.parametrize("name", JUDGED)
def test_every_judged_invariant_has_its_violation_and_undecided_category(name):
    cats = alluredir.categories()
    assert _first(cats, "failed", _message(name, "invalid")) == f"Violation: {name}"
    assert _first(cats, "failed", _message(name, "unknown")) == f"Undecided: {name}"
    # an undecided run's test is broken (harness/suite/plugin.py allure_status): still filed by its invariant
    assert _first(cats, "broken", _message(name, "unknown").replace(": fail\n", ": unknown\n")) == f"Undecided: {name}"
    assert _first(cats, "broken", "run r: error (could not start the cluster)") == "Set-up / infrastructure error"


def test_every_registered_invariant_is_in_a_category():
    names = {c["name"] for c in alluredir.categories()}
    for registry in (RUN_CHECKERS, CHECKERS, STREAMS_CHECKERS, CONNECT_CHECKERS, SHARE_CHECKERS):
        for n in registry:
            assert f"Violation: {n}" in names and f"Undecided: {n}" in names, n
    # the run-level ones first, then consumer groups', in report order
    assert alluredir.invariant_names()[:len(RUN_CHECKERS) + len(CHECKERS)] == [*RUN_CHECKERS, *CHECKERS]


def test_a_registry_added_later_is_covered_without_a_hand_list(monkeypatch):
    import harness.invariants.streams as streams
    monkeypatch.setattr(streams, "LATER_CHECKERS", {"a_later_invariant": lambda h, s: None}, raising=False)
    cats = alluredir.categories()
    assert _first(cats, "failed", _message("a_later_invariant", "invalid")) == "Violation: a_later_invariant"
    assert _first(cats, "failed", _message("a_later_invariant", "unknown")) == "Undecided: a_later_invariant"


def test_a_name_no_registry_has_is_still_undecided_or_unfiled():
    cats = alluredir.categories()
    assert _first(cats, "failed", _message("not_a_checker", "unknown")) == "Undecided invariant"
    assert _first(cats, "failed", _message("not_a_checker", "invalid")) is None


@pytest.mark.parametrize("finding", [f.id for f in KNOWN])
def test_each_known_finding_has_its_category_for_the_xfail_reason(finding):
    cats = alluredir.categories()
    reason = f"known finding: {finding}; this run: m1 lost its partitions at +12.0s\nrun x: fail"
    assert _first(cats, "skipped", f"XFAIL {reason}\n\nXFailed: {reason}") == f"known finding: {finding}"
    assert _first(cats, "skipped", f"XFAIL {reason}") == f"known finding: {finding}"
    assert _first(cats, "failed", f"XFAIL {reason}") != f"known finding: {finding}"  # a failure is not excused
    assert _first(cats, "skipped", f"XFAIL known finding: {finding}x; other") is None  # another id: not this one


@pytest.mark.parametrize("finding", [f.id for f in KNOWN])
def test_a_known_finding_that_failed_its_test_has_its_own_category(finding):
    """Under `--harness-known-findings fail` (a team's gate) the failure's message names the finding (harness/suite/
    known.py `line`): filed under it, before the invariants it broke; a near miss (`not <id>: ...`) is not."""
    cats = alluredir.categories()
    failed = _message("exclusive_ownership", "invalid") + f"\n  known finding: {finding}: its title; this run: m2 at 9.5 s"
    assert _first(cats, "failed", failed) == f"known finding: {finding} {alluredir.KNOWN_FAILED}"
    near = _message("exclusive_ownership", "invalid") + f"\n  not {finding}: exclusive_ownership's witness is m1"
    assert _first(cats, "failed", near) == "Violation: exclusive_ownership"
    assert _first(cats, "failed", failed.replace(finding, finding + "x")) == "Violation: exclusive_ownership"


def test_an_xfail_of_something_else_is_no_known_finding():
    assert _first(alluredir.categories(), "skipped", "XFAIL flaky network; run x: fail") is None
