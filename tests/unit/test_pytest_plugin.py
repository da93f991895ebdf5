"""Verify: the pytest plugin's options are all under `--harness-`, and each choice it offers is the CLI's own.

Setup: the plugin's `pytest_addoption` given a recorder in place of pytest's parser; the CLI's argparse parser
(`harness run`, `harness nightly`).
Then: every option name starts with `--harness-`; for each option the two share, the plugin offers exactly
the choices the CLI offers (the group protocols: the consumer-group ones, which the suites parametrise).
"""
import argparse

from harness.suite import plugin as pytest_plugin
from harness.cli import _parser
from harness.base.vocabulary import CONSUMER_PROTOCOLS as PROTOCOLS


class _Recorder:
    def __init__(self):
        self.options: dict[str, dict] = {}

    def getgroup(self, name, description=""):
        return self

    def addoption(self, *names, **kwargs):
        for n in names:
            self.options[n] = kwargs


def _plugin_options() -> dict[str, dict]:
    rec = _Recorder()
    pytest_plugin.pytest_addoption(rec)
    return rec.options


def _cli_choices(command: str) -> dict[str, list]:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {s: list(a.choices) for a in sub.choices[command]._actions if a.choices for s in a.option_strings}


def test_every_option_is_under_the_prefix():
    names = _plugin_options()
    assert names and all(n.startswith("--harness-") for n in names), sorted(names)
    for bare in ("--seed", "--protocol", "--backend", "--kafka-version", "--client-version", "--runs-root",
                 "--misbehave", "--member", "--member-command", "--commit-mode"):
        assert bare not in names and f"--harness-{bare[2:]}" in names


def test_choices_are_the_clis():
    plugin = {n: list(kw["choices"]) for n, kw in _plugin_options().items() if kw.get("choices")}
    run = _cli_choices("run")
    assert plugin == {
        "--harness-protocol": list(PROTOCOLS),
        "--harness-backend": run["--backend"],
        "--harness-misbehave": run["--misbehave"],
        "--harness-member": run["--member"],
        "--harness-commit-mode": run["--commit-mode"],
        "--harness-known-findings": ["fail", "xfail"],  # the suites' own: the CLI has no test to xfail
    }
    assert set(PROTOCOLS) < set(run["--protocol"])
    nightly = _cli_choices("nightly")
    assert nightly["--member"] == plugin["--harness-member"] and nightly["--commit-mode"] == plugin["--harness-commit-mode"]


def test_a_run_refused_before_it_starts_fails_its_test_with_the_refusals_one_line(monkeypatch):
    """A run its plan refuses (a client setting the client refuses, checked before anything starts) fails its test
    with the refusal's words, no traceback of the harness."""
    from types import SimpleNamespace

    import pytest

    from harness.base.errors import BadInput
    from harness.run import runner

    def refused(cfg, cluster):
        raise BadInput("confluent-kafka 2.16.1 refuses the client settings: `session.timeout.ms` is not supported")
    monkeypatch.setattr(runner, "run_scenario", refused)
    request = SimpleNamespace(getfixturevalue=lambda name: None, node=SimpleNamespace(name="t", callspec=None))
    with pytest.raises(pytest.fail.Exception) as got:
        pytest_plugin.run_on(request, cfg=None, cluster=None)
    assert str(got.value) == ("harness: the run was refused before it started: confluent-kafka 2.16.1 refuses the "
                              "client settings: `session.timeout.ms` is not supported")
    assert got.value.pytrace is False
