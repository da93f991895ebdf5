"""Verify: bench/smoke_repeat.py runs the gate N times and writes a table with each run's result and, for a failed
run, each failed test with the first witness line of its message.

Setup: a stand-in gate (a small Python script) that passes its first run and fails its second with a JUnit XML
whose failure message has a witness line.
Then: the table has both runs, the second one failed with that test and witness; the exit code is 1.
"""
import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "smoke_repeat.py"
GATE = '''
import sys
from pathlib import Path
junit = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--junitxml="))
count = Path(sys.argv[1])
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
bad = n == 2
case = ('<testcase name="test_scenario[consumer-member-kill]"><failure message="run x: invalid">'
        'run x: invalid\\n  exclusive_ownership: invalid: p3 held twice\\n    witness: {"partition": 3}'
        '</failure></testcase>') if bad else '<testcase name="test_scenario[consumer-member-kill]"/>'
Path(junit).write_text(f'<testsuites><testsuite>{case}</testsuite></testsuites>')
sys.exit(1 if bad else 0)
'''


def test_the_table_names_each_failed_test_and_its_first_witness(tmp_path):
    spec = importlib.util.spec_from_file_location("smoke_repeat", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    gate = tmp_path / "gate.py"
    gate.write_text(GATE)
    out = tmp_path / "out"
    rc = mod.main(["-n", "2", "--out", str(out), "--command", f"{sys.executable} {gate} {tmp_path / 'count'}"])
    table = (out / "table.md").read_text()
    assert rc == 1
    assert "| 1 | 0 min" in table and "| pass | - |" in table
    assert '| fail (exit 1) | `test_scenario[consumer-member-kill]`: witness: {"partition": 3} |' in table
    assert "1 of 2 runs passed" in table
    assert (out / "run-2.xml").exists() and (out / "run-1.log").exists()


def test_a_failure_that_names_a_known_finding_says_so_in_the_table(tmp_path):
    spec = importlib.util.spec_from_file_location("smoke_repeat", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    xml = tmp_path / "r.xml"
    xml.write_text('<testsuites><testsuite><testcase name="t"><failure message="run x: fail">run x: fail\n'
                   '  exclusive_ownership: invalid: zombie\n    witness: {"partition": 0}\n'
                   '  known finding: librdkafka-848-commit-starves-heartbeat: librdkafka, ...; seen before: 2 of 46\n'
                   '</failure></testcase>'
                   '<testcase name="x"><skipped type="pytest.xfail" message="known finding: librdkafka-848-commit-'
                   'starves-heartbeat&#10;run y: fail&#10;    witness: {&quot;partition&quot;: 1}" /></testcase>'
                   '<testcase name="s"><skipped type="pytest.skip" message="no docker" /></testcase>'
                   '</testsuite></testsuites>')
    assert mod.failures(xml) == [
        ("t", 'known finding: librdkafka-848-commit-starves-heartbeat (witness: {"partition": 0})'),
        ("x", 'excused as known finding: librdkafka-848-commit-starves-heartbeat (witness: {"partition": 1})')]
