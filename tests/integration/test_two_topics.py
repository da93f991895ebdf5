"""Verify: the two-topic scenario file of docs/scenarios.md (two topics, different subscriptions, one by
regex, a team's own member among the harness's, a broker and a client setting, a kill and a broker bounce)
runs and passes through the CLI, replays, and runs through the pytest plugin as a suite would.

Setup: `harness run docs/examples/two-topics.toml --seed 1` as a user runs it, on its own cluster; then
`harness replay` of that run; then a one-test suite in a temporary directory using the plugin's
`run_scenario` fixture on the file, under pytest with the plugin loaded from its entry point. A suite run that
fails only as a registered Kafka or client finding (its marks cover every failing witness) is settled as the suites
settle one (tests/integration/verdict_text.py: failed naming the finding, or xfailed under --harness-known-findings
xfail).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.verdict_text import not_held, settle_known

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "two-topics.toml"


def harness(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def members_of(run_dir: Path) -> dict:
    """Member id -> (its subscription, the topics it was ever assigned), from its own history."""
    out = {}
    for f in (run_dir / "history").glob("member-*.jsonl"):
        events = [json.loads(line) for line in f.read_text().splitlines()[1:] if line.strip()]
        sub = next(e["subscription"] for e in events if e["type"] == "started")
        got = {t.rsplit("-", 1)[1] for e in events if e["type"] == "assigned" for t, _ in e["partitions"]}
        out[f.stem.split("-", 1)[1]] = (sub, got)
    return out


@pytest.mark.nightly  # ~80 s; the same file runs in CI through the pytest plugin below
def test_two_topics_run_pass_and_replay(tmp_path):
    r = harness("run", str(EXAMPLE), "--seed", "1", "--quiet", "--runs-root", str(tmp_path))
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    run_dir = next(tmp_path.glob("*-two-topics-classic-cooperative-1"))
    meta = json.loads((run_dir / "run.json").read_text())
    assert [p for _, p in meta["topics"]] == [6, 3] and meta["topics"][0][0].endswith("-orders")
    assert meta["check_settings"]["topics"] == meta["topics"]
    assert meta["broker_settings"]["num.io.threads"] == "4"
    assert meta["client_settings"]["fetch.wait.max.ms"] == "100"
    verdicts = json.loads((run_dir / "verdicts.json").read_text())
    assert all(v["status"] in ("valid", "skipped") for v in verdicts.values()), verdicts
    subs = members_of(run_dir)
    # slot 0 (m1, and its replacement) read orders only; slot 1 both; slot 2, the team's program, payments by regex
    assert subs["m1"][1] <= {"orders"} and subs["m3"][1] == {"payments"} and subs["m3"][0][0].startswith("^t-")
    first = [json.loads(line) for line in (run_dir / "history" / "member-m3.jsonl").read_text().splitlines()[1:]]
    assert first[0]["client"].startswith("team-app")

    again = harness("replay", str(run_dir), "--quiet", "--runs-root", str(tmp_path / "replay"))
    assert again.returncode == 0, (again.stdout[-3000:], again.stderr[-3000:])
    replayed = next((tmp_path / "replay").glob("*-two-topics-*"))
    rmeta = json.loads((replayed / "run.json").read_text())
    assert rmeta["schedule"] == meta["schedule"] and [p for _, p in rmeta["topics"]] == [6, 3]


SUITE = f'''
from harness.suite.plugin import assert_run_passes


def test_two_topics_file(run_scenario):
    result = run_scenario({str(EXAMPLE)!r}, protocol="consumer")
    assert "-two-topics-consumer-" in result.run_dir.name
    assert_run_passes(result)
'''


def _why(run_dir: Path | None) -> str:
    """What did not hold in the suite's run and why no known finding matched it: first, so that a shortened
    assertion message still shows it."""
    from harness.findings.registry import near_misses
    if run_dir is None or not (run_dir / "verdicts.json").exists():
        return f"no judged run: {run_dir}"
    return "\n".join([str(run_dir), not_held(run_dir), *near_misses(run_dir)])


def test_two_topics_through_the_pytest_plugin(tmp_path, pytestconfig):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_mine.py").write_text(SUITE)
    (suite / "none.ini").write_text("[pytest]\n")
    r = subprocess.run([sys.executable, "-m", "pytest", str(suite), "-p", "no:cacheprovider", "-q",
                        "--rootdir", str(suite), "-c", str(suite / "none.ini"),
                        "--harness-runs-root", str(tmp_path / "runs"),
                        "--harness-broker-set", "num.io.threads=4"],  # the file's broker setting, on the session cluster
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    run_dir = next((tmp_path / "runs").glob("*-two-topics-consumer-*"), None)
    if run_dir is not None and (run_dir / "verdicts.json").exists():  # a known finding is settled as the suites do
        settle_known(pytestconfig, r.returncode, run_dir, json.loads((run_dir / "verdicts.json").read_text()))
    assert r.returncode == 0, _why(run_dir) + "\n" + r.stdout[-3000:] + r.stderr[-2000:]
    assert "1 passed" in r.stdout
    assert json.loads((run_dir / "run.json").read_text())["status"] == "pass"
