"""The invariants' public face: Verdict, CheckSettings, CHECKERS, check_all; and their purity (no I/O imports)."""
import ast
import json
from pathlib import Path

import pytest
from histbuild import (acked, assigned, committed, drained, effective, history, processed, run_end, run_start, settings,
                       steady)

import harness.invariants as inv
from harness.invariants import CHECKERS, CheckSettings, Verdict, check_all, judge, protocols, run_settings, timeline
from harness.invariants.applies import decide

PACKAGE = Path(inv.__file__).parent
STDLIB_ALLOWED = {"__future__", "bisect", "collections", "dataclasses", "functools", "graphlib", "itertools", "math", "re",
                  "typing", "numpy"}  # numpy for the columns; its file functions are refused below
NUMPY_IO = {"load", "save", "savez", "savez_compressed", "fromfile", "tofile", "loadtxt", "savetxt", "genfromtxt",
            "memmap", "fromregex", "DataSource"}


def test_checker_names_in_order():
    assert list(CHECKERS) == ["exclusive_ownership", "coverage_liveness", "bounded_migrations", "subscribed_only",
                              "topic_changes", "assignor_shape", "strict_stickiness", "convergence_balance", "rebalance_cause", "group_settled", "static_membership", "record_integrity", "commit_progress",
                              "commit_durability", "coordinator_survival", "coordinator_claims", "expected_refusal"]


def test_check_all_on_a_good_history():
    evs = [*steady(), *[acked(0.8, p, 0) for p in range(4)],
           *[processed("a" if p < 2 else "b", 2.0, p, 0, 0) for p in range(4)],
           *[committed("a" if p < 2 else "b", 2.1, {p: 1}) for p in range(4)], drained(19.0)]
    vs = check_all(history(evs), settings())
    assert {n: v.status for n, v in vs.items()} == {
        "exclusive_ownership": "valid", "coverage_liveness": "valid", "bounded_migrations": "skipped",
        "convergence_balance": "valid", "group_settled": "valid", "static_membership": "skipped", "record_integrity": "valid",
        "commit_progress": "valid", "coordinator_survival": "skipped",
        "expected_refusal": "skipped",  # no broker log
        "commit_durability": "skipped",  # no read of the committed offsets: the plan decides (judge, `applies`)
        "subscribed_only": "valid", "strict_stickiness": "skipped",  # one stable point
        "topic_changes": "skipped",  # no topic step, no subscription change: the plan decides (judge, `applies`)
        "assignor_shape": "skipped",  # the members' starts recorded no settings: the plan decides (judge, `applies`)
        "rebalance_cause": "unknown",  # no broker log: the coordinator's rebalances are unseen
        "coordinator_claims": "unknown"}  # the coordinator's assignment was not recorded
    assert vs["assignor_shape"].message.startswith("at 0.7s the assignor in force cannot be told: a's start recorded no")
    assert all(v.name == n for n, v in vs.items())
    json.dumps({n: v.to_dict() for n, v in vs.items()})


def test_check_all_finds_a_planted_anomaly():
    # two owners of partition 0 at the end, 15 s after the last disturbance: past two rounds of a 5 s rebalance timeout
    vs = check_all(history(steady(), assigned("b", 5.0, [0])), settings(max_poll_interval_s=5.0))
    assert vs["exclusive_ownership"].status == "invalid"
    assert vs["coverage_liveness"].status == "invalid"


@pytest.mark.parametrize("events", [[], [run_end(3.0)], [acked(1.0, 0, 0), run_end(3.0)]])
def test_empty_history_is_unknown_for_every_checker(events):
    vs = check_all(history(events), settings())
    assert list(vs) == list(CHECKERS)
    assert {v.status for v in vs.values()} == {"unknown"}
    for name, check in CHECKERS.items():  # and each checker on its own
        assert check(history(events), settings()).status == "unknown", name


def test_a_checker_that_raises_is_unknown(monkeypatch):
    def boom(h, s):
        raise RuntimeError("bad\nthing")

    monkeypatch.setitem(CHECKERS, "coverage_liveness", boom)
    monkeypatch.setitem(CHECKERS, "bounded_migrations", lambda h, s: "valid")
    vs = check_all(history(steady()), settings())
    assert vs["coverage_liveness"].status == "unknown"
    assert vs["coverage_liveness"].message == "checker raised RuntimeError: bad thing"
    assert vs["bounded_migrations"].status == "unknown"
    assert vs["exclusive_ownership"].status == "valid"


def test_bad_settings_give_unknown_not_valid():
    vs = check_all(history(steady()), settings(protocol="nonsense"))
    assert vs["exclusive_ownership"].status == "unknown"
    assert "nonsense" in vs["exclusive_ownership"].message


def test_several_topics_without_a_topic_setting_are_unknown():
    h = history(steady(), assigned("a", 3.0, [0], topic="other"))
    vs = check_all(h, CheckSettings(partitions=4))
    assert vs["exclusive_ownership"].status == "unknown"
    assert "several topics" in vs["exclusive_ownership"].message
    assert check_all(history(steady()), CheckSettings(partitions=4))["coverage_liveness"].status == "valid"


def test_check_all_subset_and_unknown_names():
    assert list(check_all(history(steady()), settings(), names=["record_integrity"])) == ["record_integrity"]
    with pytest.raises(ValueError):
        check_all(history(steady()), settings(), names=["nope"])


def test_verdict():
    v = Verdict("x", "invalid", "two\nlines", [{"type": "assigned", "why": "w"}], {"n": 1.5, "inf": float("inf")})
    assert v.message == "two lines"
    assert isinstance(v.witnesses, tuple)
    assert v.to_dict() == {"name": "x", "status": "invalid", "message": "two lines",
                           "witnesses": [{"type": "assigned", "why": "w"}], "measurements": {"n": 1.5, "inf": None}}
    assert not v.ok
    with pytest.raises(ValueError):
        Verdict("x", "maybe", "")


def test_check_settings():
    # zombie_tolerance_s and max_unowned_s were run-wide tolerances: old run.json files still hold them, ignored now
    s = CheckSettings.from_dict({"topic": "t", "partitions": 6, "session_timeout_s": 9.0, "zombie_tolerance_s": 9.0,
                                 "max_unowned_s": 30.0, "unknown_key": 1})
    assert (s.topic, s.partitions, s.session_timeout_s, s.protocol) == ("t", 6, 9.0, "classic-cooperative")
    assert not hasattr(s, "zombie_tolerance_s") and not hasattr(s, "max_unowned_s")
    assert CheckSettings.from_dict(s.to_dict()).to_dict() == s.to_dict()
    # read from a dict, they remember what it held: the same values built in code (every field given) differ
    assert s.held == {"topic", "partitions", "session_timeout_s"} and s != CheckSettings(**{
        k: v for k, v in s.to_dict().items() if k != "topics"})
    assert "held" not in s.to_dict()
    with pytest.raises(TypeError):
        CheckSettings("t")  # keyword-only


def test_protocol_rules_live_in_one_place():
    assert set(protocols.PROTOCOLS) == {"classic-eager", "classic-cooperative", "consumer"}
    assert not protocols.rules_for("classic-eager").sticky
    assert protocols.rules_for("classic-cooperative").revoke_before_assign
    assert protocols.rules_for("consumer").revoke_before_assign


def test_invariants_do_no_io():
    """Only the stdlib allow-list (and numpy), harness.record.history, the vocabulary, the table of steps and sibling
    modules are imported; no I/O builtins or numpy file functions are called."""
    files = sorted(PACKAGE.rglob("*.py"))  # the streams package too
    assert len(files) >= 15
    for f in files:
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"open", "print", "input", "exec", "eval", "__import__"}, f.name
            if isinstance(node, ast.Attribute):
                assert node.attr not in NUMPY_IO, f"{f.name} uses {node.attr}"
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: a sibling module
                    continue
                names = [node.module]
            else:
                continue
            for n in names:
                ok = n in STDLIB_ALLOWED or n in ("harness.record.history", "harness.base.vocabulary", "harness.base.steps") \
                    or n == "harness.invariants" or n.startswith("harness.invariants.")
                assert ok, f"{f.name} imports {n}"


# -- judge(history): the settings come from the history's run_start alone
def _consumer_run(**start):
    evs = [*steady(), *[acked(0.8, p, 0) for p in range(4)],
           *[processed("a" if p < 2 else "b", 2.0, p, 0, 0) for p in range(4)],
           *[committed("a" if p < 2 else "b", 2.1, {p: 1}) for p in range(4)]]
    evs = [e for e in evs if e["type"] != "run_start"] + ([run_start(0.0, **start)] if start is not None else [])
    return history(evs)


#: the run's member timings as run_start.settings records them (the members of `steady` record none of their own)
TIMINGS = {"session_timeout_s": 6.0, "heartbeat_interval_s": 0.5, "max_poll_interval_s": 20.0}


def test_judge_reads_the_consumer_settings_from_run_start():
    h = _consumer_run(kind="consumer", settings={"topic": "t", "partitions": 4, "protocol": "classic-eager", **TIMINGS})
    vs = judge(h)
    assert list(vs) == ["schedule_performed", *CHECKERS]
    assert run_settings(h)[1].protocol == "classic-eager"  # the checkers read each member's own before it
    assert vs["coverage_liveness"].measurements["partitions_inferred"] is False
    assert vs["commit_progress"].status == "valid"
    assert {n: v.status for n, v in vs.items() if n in CHECKERS} == {n: decide(v, None).status for n, v in check_all(
        _consumer_run(), CheckSettings(topic="t", partitions=4, protocol="classic-eager", **TIMINGS)).items()}


def _own_timings(h):
    """The history with each member's start recording its client's timings (`effective`)."""
    return history([dict(e, effective=effective(max_poll_ms=20000)) if e["type"] == "started" else e
                    for e in h.events])


@pytest.mark.parametrize("start", [None, {"settings": {"topic": "t"}}, {"settings": None}])
def test_judge_without_settings_uses_the_defaults(start):
    """No run_start, a run_start like the synthetic generator's (only the topic), or settings: null."""
    h = _consumer_run() if start is None else history(
        [e for e in _consumer_run().events if e["type"] != "run_start"], run_start(0.0, **start))
    if start is None:
        h = history([e for e in h.events if e["type"] != "run_start"])
    # the members recorded no timings and neither did the run: the bounds that need them are unknown, naming them
    bare = judge(h)["coverage_liveness"]
    assert bare.status == "unknown" and "max.poll.interval.ms" in bare.message and "300" not in bare.message
    vs = judge(_own_timings(h))  # each member's own: judged (the rest of the settings are the defaults)
    assert list(vs) == ["schedule_performed", *CHECKERS]
    assert vs["coverage_liveness"].status == "valid"
    assert vs["coverage_liveness"].measurements["partitions_inferred"] is True  # partitions 0: inferred
    assert run_settings(h)[0] == "consumer"


def test_run_settings_tells_streams_runs_old_and_new():
    from harness.invariants.streams import StreamsCheckSettings
    new = history(run_start(0.0, kind="streams", settings={"topic": "in", "partitions": 4},
                            streams_settings={"tasks": 4, "standby_replicas": 1, "exactly_once": True}))
    kind, check, streams = run_settings(new)
    assert (kind, check.topic, streams) == ("streams", "in", StreamsCheckSettings(tasks=4, standby_replicas=1,
                                                                                   exactly_once=True))
    old = history(run_start(0.0, settings={"topic": "in", "partitions": 4, "tasks": 4, "standby_replicas": 0,
                                           "protocol": "classic"}))  # both settings merged, no kind
    kind, check, streams = run_settings(old)
    assert kind == "streams" and check.topic == "in" and streams.tasks == 4 and streams.protocol == "classic"


def test_judge_dispatches_a_streams_run():
    from harness.invariants.streams import STREAMS_CHECKERS
    h = history(run_start(0.0, kind="streams", settings={"topic": "t"}, streams_settings={"tasks": 4}), run_end(9.0))
    vs = judge(h)
    assert list(vs) == ["schedule_performed", *STREAMS_CHECKERS, "record_integrity", "commit_durability"]
    assert vs["task_exclusive_active"].status == "unknown"  # no Streams events at all


def test_the_timeline_is_built_once_per_judgment(monkeypatch):
    built = []
    real = timeline.Timeline.__init__

    def counting(self, h, s):
        built.append(s)
        real(self, h, s)

    monkeypatch.setattr(timeline.Timeline, "__init__", counting)
    check_all(_consumer_run(), settings())
    assert len(built) == 1
