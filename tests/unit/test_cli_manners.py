"""Verify: the CLI's manners beside --version and --dry-run (test_cli_dry_run.py): a misspelt command, choice,
protocol, kind, setting or scenario-file key is one line naming the word probably meant, exit 2, before anything
starts; `harness run --help` (and nightly's, replay's) shows its options in argument groups, each with a one-line
description; `harness scenarios` is grouped by kind and wrapped to the terminal's width.

Setup: the CLI's `main` in-process with every way to start something made to fail the test (`nothing_starts`),
the parser built by `harness.cli._parser`, the listing of harness/plan/listing.py at fixed widths (and through
`main` with COLUMNS set), scenario files written under tmp_path.
Then: each misspelling's stderr is one line holding `did you mean <the word>?`, exit code 2; a word close to none
lists the known ones instead; every option of run, nightly and replay sits in a named group, in the order of
GROUPS, with its one-line description; no line of the listing is longer than the width, continuation lines are
indented under the description, the kinds come in order with every built-in once and the smoke set tagged. Must
fail: a planted parser with an option outside a group is found; a planted over-long description is found.
"""
from __future__ import annotations

import argparse

import pytest

from harness import cli
from harness.cli import GROUPS, main
from harness.plan import listing
from harness.plan.scenarios import SCENARIOS


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _exit(argv) -> int:
    """main's exit code, whether argparse exits (SystemExit) or main returns."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


# -- did you mean

@pytest.mark.parametrize("argv, meant", [
    (["rnu", "member-kill"], "run"),
    (["run", "member-kill", "--protocol", "cooperativ"], "classic-cooperative"),
    (["run", "member-kill", "--backend", "dockr"], "docker"),
    (["run", "member-kill", "--member", "jav"], "java"),
    (["run", "member-kill", "--commit-mode", "asyn"], "async"),
    (["run", "member-kill", "--misbehave", "claim-extr"], "claim-extra"),
    (["nightly", "--protocols", "consumer,stream"], "streams"),
    (["replay", "x", "--backend", "locl"], "local"),
    (["run", "memberkill"], "member-kill"),
    (["run", "streams-scale-in", "--streams-set", "num.standby.replica=1", "--dry-run"], "num.standby.replicas"),
    (["run", "connect-worker-kill", "--connect-set", "scheduled.rebalance.max.delay=0", "--dry-run"],
     "scheduled.rebalance.max.delay.ms"),
])
def test_a_misspelt_word_is_one_line_naming_the_one_meant(argv, meant, tmp_path, capsys, nothing_starts):
    code = _exit([*argv, "--runs-root", str(tmp_path / "runs")] if argv[0] != "rnu" else argv)
    line = _one_line(capsys)
    assert code == 2 and f"did you mean {meant}?" in line, line
    assert not (tmp_path / "runs").exists()


def test_a_word_close_to_none_lists_the_known_ones(capsys):
    assert _exit(["run", "member-kill", "--backend", "kubernetes"]) == 2
    line = _one_line(capsys)
    assert "did you mean" not in line and "local" in line and "docker" in line, line


@pytest.mark.parametrize("field, meant", [
    ('[membrs]\ncount = 3', "members"),
    ('[members]\ncont = 3', "count"),
    ('[members]\nkind = "stream"', "streams"),
    ('[cluster]\nbroker_setings = { "num.io.threads" = 8 }', "broker_settings"),
])
def test_a_misspelt_scenario_file_key_names_the_one_meant(field, meant, tmp_path, capsys, nothing_starts):
    f = tmp_path / "s.toml"
    f.write_text(f'name = "s"\n{field}\n[[steps]]\naction = "sleep"\nseconds = 1\n')
    assert main(["run", str(f), "--dry-run", "--kafka-version", "4.4.0"]) == 2
    line = _one_line(capsys)
    assert f"did you mean {meant}?" in line and str(f) in line, line


@pytest.mark.parametrize("step, meant", [('action = "kill_membr"\nslot = 1', "kill_member"),
                                         ('action = "kill_member"\nslto = 1', "slot"),
                                         ('action = "kill_member"\nslot = 1\nsetle = 2', "settle")])
def test_a_misspelt_action_or_parameter_names_the_one_meant(step, meant, tmp_path, capsys, nothing_starts):
    f = tmp_path / "s.toml"
    f.write_text(f'name = "s"\n[[steps]]\n{step}\n')
    assert main(["run", str(f), "--dry-run", "--kafka-version", "4.4.0"]) == 2
    line = _one_line(capsys)
    assert f"did you mean {meant}?" in line and "steps[0]" in line, line


def test_a_run_config_names_the_protocol_meant():
    from harness.base.errors import BadInput
    from harness.plan.config import RunConfig
    with pytest.raises(BadInput, match=r"unknown protocol 'consumr'; did you mean consumer\?"):
        RunConfig.for_scenario("member-kill", seed=1, protocol="consumr").validate()


# -- argument groups

def _sub(name: str) -> argparse.ArgumentParser:
    action = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _grouped(p: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Each group's title -> the options (or positionals) in it; the default groups only when they hold any."""
    out = {}
    for g in p._action_groups:
        names = [a.option_strings[-1] if a.option_strings else a.dest for a in g._group_actions
                 if not isinstance(a, argparse._HelpAction)]
        if names or g.title in GROUPS:
            out[g.title] = names
    return out


def _problems(p: argparse.ArgumentParser) -> list[str]:
    """What breaks the help's rule: an option outside a named group, a group out of GROUPS's order, a description
    that is not the group's one line of at most 76 characters."""
    grouped = _grouped(p)
    bad = [f"{n} is in no named group" for t, names in grouped.items() if t not in GROUPS for n in names]
    titles = [t for t in grouped if t in GROUPS]
    if titles != sorted(titles, key=list(GROUPS).index):
        bad.append(f"groups out of order: {titles}")
    for g in p._action_groups:
        if g.title in GROUPS and (g.description != GROUPS[g.title] or len(g.description) > 76
                                  or "\n" in g.description):
            bad.append(f"{g.title}: description {g.description!r}")
    return bad


@pytest.mark.parametrize("command", ["run", "nightly", "replay"])
def test_every_option_sits_in_a_named_group_in_order(command):
    assert _problems(_sub(command)) == []


def test_run_help_groups_its_options_by_what_they_set():
    g = _grouped(_sub("run"))
    assert list(g) == list(GROUPS)[:6]
    assert g["what to run"] == ["scenario", "--dry-run", "--protocol", "--seed"]
    assert g["versions"] == ["--kafka-version", "--client-version"]
    assert g["cluster"] == ["--brokers", "--backend"]
    assert {"--member", "--member-command", "--client-set", "--broker-set", "--group-set", "--streams-set",
            "--connect-set", "--commit-mode", "--processing-ms", "--revoke-delay-ms",
            "--members-per-process"} == set(g["members and settings"])
    assert g["faults and self-tests"] == ["--misbehave"]
    assert g["repeat and output"] == ["--repeat", "--until-fail", "--shrink-attempts", "--explore", "--explore-depth",
                                      "--runs-root", "--quiet"]


def test_nightly_and_replay_share_the_groups_of_the_options_they_share():
    n, r = _grouped(_sub("nightly")), _grouped(_sub("replay"))
    assert "--protocols" in n["what to run"] and n["cluster"] == ["--backend"] and "--client-set" in n["members and settings"]
    assert n["repeat and output"][-2:] == ["--runs-root", "--quiet"]
    assert r["what to run"] == ["run_dir", "--exact"] and r["cluster"] == ["--backend"]
    assert r["output"] == ["--runs-root", "--quiet"] and "repeat and output" not in r


def test_run_help_prints_each_group_with_its_line(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert _exit(["run", "--help"]) == 0
    out = capsys.readouterr().out.splitlines()
    for title in list(GROUPS)[:6]:
        i = out.index(f"{title}:")
        assert out[i + 1] == f"  {GROUPS[title]}", out[i:i + 2]


def test_the_group_rule_catches_a_stray_option_and_a_long_description():
    p = cli._Parser(prog="planted")
    cli._group(p, "cluster").add_argument("--brokers")
    assert _problems(p) == []
    p.add_argument("--stray")
    assert _problems(p) == ["--stray is in no named group"]
    q = cli._Parser(prog="planted")
    q.add_argument_group("versions", "x" * 77).add_argument("--kafka-version")
    assert _problems(q) == [f"versions: description {'x' * 77!r}"]


# -- the scenarios listing

@pytest.mark.parametrize("cols", [46, 60, 80, 100, 200])
def test_no_line_of_the_listing_is_longer_than_the_width(cols):
    out = listing.lines(SCENARIOS.values(), cols=cols)
    assert max(len(line) for line in out) <= cols
    assert max(len(line) for line in out) > cols - 10  # it uses the width it has


def test_the_listing_is_grouped_by_kind_with_every_scenario_once_and_the_smoke_set_tagged():
    out = listing.lines(SCENARIOS.values(), cols=80)
    headings = [line for line in out if line and not line.startswith(" ")]
    assert [h.split(":")[0] for h in headings] == [listing.HEADINGS[k] for k in ("consumer", "streams", "connect", "share")]
    named = [line.split()[0] for line in out if line.startswith("  ") and not line.startswith("   ")]
    assert sorted(named) == sorted(SCENARIOS)
    for kind, heading in zip(("consumer", "streams", "connect", "share"), headings):
        assert heading.endswith(f": {sum(s.kind == kind for s in SCENARIOS.values())} scenarios")
    text = "\n".join(out)
    for s in SCENARIOS.values():
        at = text.index(f"  {s.name}")
        assert (text[at:at + 200].split(s.name, 1)[1].split()[0] == "[smoke]") == s.smoke, s.name
    assert text.index("  member-kill ") < text.index("Kafka Streams:") < text.index("  streams-scale-out")


def test_continuation_lines_are_indented_under_the_description():
    out = listing.lines(SCENARIOS.values(), cols=80)
    first = next(line for line in out if line.startswith("  autoscale "))
    column = len(first) - len(first[len("  autoscale"):].lstrip())
    after = out[out.index(first) + 1]
    assert after.startswith(" " * column) and after[column] != " ", (first, after)
    long = next(i for i, line in enumerate(out) if line.strip() == "race-heartbeat-past-poll-interval-consumer")
    assert out[long + 1].startswith(" " * column) and out[long + 1][column] != " "  # a long name: its own line


def test_harness_scenarios_wraps_to_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "72")
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("consumer groups: ") and 62 < max(map(len, out)) <= 72
