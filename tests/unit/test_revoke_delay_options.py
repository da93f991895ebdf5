"""A revoke handler that takes time (`--revoke-delay-ms`, `[members] revoke_delay_ms`, HARNESS_REVOKE_DELAY_MS):
how the option and the scenario field are read, what the plan refuses, and how the delay reaches every member."""
from __future__ import annotations

from argparse import Namespace
from types import SimpleNamespace

import pytest

from harness.base.errors import BadInput
from harness.plan.config import RunConfig, scenario_of
from harness.plan.options import member_options


def test_the_revoke_delay_from_the_option_a_scenario_file_and_replay(tmp_path):
    import json
    from harness.plan.config import config_dict, replay_config
    base = {"member": "python", "member_command": [], "client_set": [], "broker_set": [], "group_set": []}
    assert member_options(Namespace(**base, revoke_delay_ms=1500.0)) == {"revoke_delay_ms": 1500.0}
    assert "revoke_delay_ms" not in member_options(Namespace(**base))
    path = tmp_path / "slow.toml"
    path.write_text('name = "slow"\n[members]\nrevoke_delay_ms = 2500\n[[steps]]\naction = "scale_out"\n')
    assert RunConfig.for_scenario(str(path), seed=1).revoke_delay_ms == 2500
    assert RunConfig.for_scenario(str(path), seed=1, revoke_delay_ms=100.0).revoke_delay_ms == 100.0
    cfg = RunConfig(scenario="member-kill", seed=1, revoke_delay_ms=700.0)
    (tmp_path / "history").mkdir()
    (tmp_path / "run.json").write_text(json.dumps({"config": config_dict(cfg), "schedule": []}))
    assert replay_config(tmp_path).revoke_delay_ms == 700.0


@pytest.mark.parametrize("kw, needle", [
    ({"scenario": "member-kill", "revoke_delay_ms": -5}, "from 0 to 60000"),
    ({"scenario": "member-kill", "revoke_delay_ms": 500, "commit_mode": "auto"}, "under commit mode auto"),
    ({"scenario": "share-member-kill", "revoke_delay_ms": 500}, "runs a share group"),
    ({"scenario": "streams-scale-out", "revoke_delay_ms": 500}, "runs Kafka Streams")])
def test_a_revoke_delay_that_cannot_apply_is_refused(kw, needle):
    with pytest.raises(BadInput, match=needle):
        RunConfig.for_scenario(seed=1, **kw).validate()


def test_a_share_scenario_file_cannot_give_a_revoke_delay(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n[members]\nkind = "share"\nrevoke_delay_ms = 10\n[[steps]]\naction = "scale_out"\n')
    with pytest.raises(BadInput, match="revoke_delay_ms"):
        RunConfig.for_scenario(str(path), seed=1)


def test_the_revoke_delay_reaches_every_member_through_the_contract():
    from harness.kinds.consumer import ConsumerGroup
    from harness.members.pool import MemberPool
    from runctx import context
    cfg = RunConfig.for_scenario("member-kill", seed=1, revoke_delay_ms=1200.0)
    kind = ConsumerGroup(context(SimpleNamespace(cfg=cfg, scenario=scenario_of("member-kill"), racks=("r0",))))
    spec = kind.member_spec(0)
    assert spec.revoke_delay_ms == 1200.0
    pool = MemberPool.__new__(MemberPool)
    pool.__dict__.update(bootstrap="b:1", group_id="g", topic="t", history_dir=__import__("pathlib").Path("/x"),
                         client_config={}, merge_settings=lambda protocol, a, b, version=None: {**a, **b})
    assert pool._env(spec, "m1")["HARNESS_REVOKE_DELAY_MS"] == "1200"
