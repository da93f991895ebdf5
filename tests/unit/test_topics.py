"""A run's topics and subscriptions (harness/plan/topics.py, docs/scenarios.md): names, anchored regexes, the
runner's "stable" over several topics, and the one-line refusals."""
import json
from dataclasses import asdict, replace

import pytest

from harness.plan import topics
from harness.base.errors import BadInput
from harness.invariants import balance
from harness.plan.config import RunConfig, replay_config, scenario_of

RUN = "20261123T200000-two.topics-consumer-1"
TS = topics.run_topics(RUN, (("orders", 6), ("payments", 3)), partitions=99)
ORD, PAY = (t.real for t in TS)


def test_a_run_without_named_topics_has_its_one_topic():
    assert topics.run_topics("r1", (), partitions=4) == [topics.Topic("", "t-r1", 4)]
    assert topics.real_subscription("r1", topics.run_topics("r1", (), 4), ()) == ("t-r1",)


def test_named_topics_live_under_the_run_and_regexes_are_anchored_there():
    assert ORD == f"t-{RUN}-orders" and [t.partitions for t in TS] == [6, 3]
    assert topics.real_subscription(RUN, TS, ()) == (ORD, PAY)  # no subscription: every topic
    sub = topics.real_subscription(RUN, TS, ("orders", "^pay.*"))
    assert sub == (ORD, "^t-20261123T200000-two[.]topics-consumer-1-pay.*")
    assert topics.subscribed(sub, PAY) and topics.subscribed(sub, ORD)
    # the run id's dot is a dot, not "any character"; another run's topic never matches
    assert not topics.subscribed(sub[1:], PAY.replace("two.topics", "twoXtopics"))
    assert not topics.subscribed(sub[1:], "payments") and not topics.subscribed(sub[1:], ORD)


@pytest.mark.parametrize("ts, subs, needle", [
    ((("orders", 0),), {}, "at least one partition"),
    ((("or ders", 1),), {}, "bad topic name"),
    ((("a", 1), ("a", 2)), {}, "named twice"),
    ((("a", 1),), {"slot 1": ("b",)}, "names topic 'b', not one of the run's (a)"),
    ((), {"every member": ("b",)}, "name the run's topics"),
    ((("a", 1),), {"slot 0": ("^a(",)}, "bad regex"),
    ((("a", 1),), {"slot 0": ("^a{1,2}",)}, "comma"),
    ((("a", 1),), {"slot 0": ()}, "empty"),
])
def test_bad_topics_and_subscriptions_are_one_line(ts, subs, needle):
    with pytest.raises(BadInput) as e:
        topics.check(ts, subs)
    assert needle in str(e.value) and "\n" not in str(e.value)


def own(**held):
    return {m: set(ps) for m, ps in held.items()}


COUNTS = {t.real: t.partitions for t in TS}


def _subs(subs):
    """member -> subscription entries (None: not said) as the rule takes them: the topic names each takes."""
    return {m: topics.subscribed_topics(e, list(COUNTS)) for m, e in subs.items()}


def _complete(held, subs):
    return balance.consumer(held, _subs(subs), COUNTS).complete


def _balanced(held, subs):
    return balance.consumer(held, _subs(subs), COUNTS).balanced


def test_stable_means_complete_over_every_subscribed_topic():
    o = [(ORD, p) for p in range(6)]
    p = [(PAY, q) for q in range(3)]
    subs = {"m1": (ORD,), "m2": (ORD, PAY), "m3": (PAY,)}
    assert _complete(own(m1=o[:3], m2=o[3:], m3=p), subs)
    assert not _complete(own(m1=o[:3], m2=o[3:5], m3=p), subs)  # orders-5 has no owner
    assert not _complete(own(m1=o[:3], m2=o[2:], m3=p), subs)  # orders-2 has two
    # nobody alive reads payments: its partitions need no owner, and none may be held
    assert _complete(own(m1=o[:3], m2=o[3:]), {"m1": (ORD,), "m2": (ORD,)})
    assert not _complete(own(m1=o[:3], m2=o[3:] + p[:1]), {"m1": (ORD,), "m2": (ORD,)})
    assert not _complete(own(m1=o[:3] + p[:1], m2=o[3:], m3=p[1:]), subs)  # m1 holds payments-0, not subscribed


def test_balance_is_the_assignors_own_over_the_total():
    o = [(ORD, p) for p in range(6)]
    p = [(PAY, q) for q in range(3)]
    subs = {"m1": (ORD,), "m2": (ORD, PAY), "m3": (PAY,)}
    assert _balanced(own(m1=o[:4], m2=o[4:] + p[:1], m3=p[1:]), subs)  # 4-3-2: m3 cannot take orders
    assert not _balanced(own(m1=o, m2=[], m3=p), subs)  # m2 could take orders from m1
    assert _balanced(own(m1=o, m3=p), {"m1": (ORD,), "m3": (PAY,)})  # 6 against 3, neither can take
    # no subscription recorded (a member that does not say): it could take anything
    assert not _balanced(own(m1=o, m3=p), {"m1": (ORD,), "m3": None})


def test_the_runner_matches_subscriptions_with_the_checkers_matcher():
    from harness.invariants import topics as judged
    assert topics.matches is judged.matches and topics.subscribed is judged.subscribed
    assert not topics.matches("^a(", "a(")  # no valid regex: takes nothing, for the runner and the checker alike


def config(**kw):
    return RunConfig(scenario="member-kill", seed=1, **kw)


def test_the_run_config_checks_topics_and_refuses_them_where_they_cannot_work():
    cfg = config(topics=(("orders", 6), ("payments", 3)), subscription=("orders",),
                 slot_subscriptions=((1, ("orders", "^pay.*")),))
    cfg.validate()
    assert cfg.slot_subscription(0) == ("orders",) and cfg.slot_subscription(1) == ("orders", "^pay.*")
    with pytest.raises(BadInput, match="Java member subscribes to topic names or to one regex"):
        replace(cfg, member="java").validate()
    replace(cfg, member="java", slot_commands=((1, ("prog",)),)).validate()  # slot 1 runs its own program
    with pytest.raises(BadInput, match="names topic 'refunds'"):
        replace(cfg, subscription=("refunds",)).validate()
    with pytest.raises(BadInput, match="for consumer-group and share-group members"):
        RunConfig(scenario="streams-scale-out", seed=1, protocol="classic", topics=(("a", 1),)).validate()


def test_replay_restores_topics_and_subscriptions(tmp_path):
    cfg = config(topics=(("orders", 6), ("payments", 3)), subscription=("orders",),
                 slot_subscriptions=((2, ("^pay.*",)),))
    (tmp_path / "history").mkdir()
    (tmp_path / "run.json").write_text(json.dumps({"config": asdict(cfg), "schedule": []}))
    again = replay_config(tmp_path)
    assert (again.topics, again.subscription, again.slot_subscriptions) == (
        cfg.topics, cfg.subscription, cfg.slot_subscriptions)


def test_scenario_files_say_topics_and_subscriptions(tmp_path):
    good = tmp_path / "t.toml"
    good.write_text('name = "t"\n[[topics]]\nname = "a"\npartitions = 2\n[[topics]]\nname = "b"\n'
                    '[members]\nsubscription = ["a"]\nslot_subscriptions = { "1" = ["^b.*"] }\n'
                    '[[steps]]\naction = "scale_out"\n')
    cfg = RunConfig.for_scenario(str(good), seed=1)
    assert cfg.topics == (("a", 2), ("b", 6)) and cfg.subscription == ("a",)
    assert cfg.slot_subscriptions == ((1, ("^b.*",)),)
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "t"\n[[topics]]\nname = "a"\n[members]\nslot_subscriptions = { "0" = ["c"] }\n'
                   '[[steps]]\naction = "scale_out"\n')
    with pytest.raises(BadInput) as e:
        scenario_of(str(bad))
    assert str(e.value).startswith(str(bad)) and "members.slot_subscriptions.0" in str(e.value)
