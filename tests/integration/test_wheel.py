"""Verify: the harness's wheel installs beside PyPI's `fixtures` library, and its pytest plugin comes with it.

Setup: the wheel built from a copy of the source tree (with `fixtures/`, `suites/` and `tests/` beside
`harness/`, as in the repository) by pip in a fresh virtual environment under a temp dir (build isolation:
setuptools from PyPI); that wheel installed there with `--no-deps`, then `fixtures` from PyPI and the
wheel's own requirements except pyspark (the analytics job's, a 300 MB source build that nothing here
imports), so the test needs PyPI but stays near half a minute.
Then: the wheel holds `harness` and no top-level `fixtures` package; `import fixtures` is PyPI's (it has
`fixtures.Fixture`) and `import harness.suite.plugin` works in the same interpreter; `pytest --help` there
lists the plugin's options through its `pytest11` entry point, every one under `--harness-` and none of the
short names the plugin once had; `-p harness.suite.plugin` names the same plugin and does not load it twice.
"""
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.nightly]  # pip and PyPI, near a minute and a half under load

ROOT = Path(__file__).resolve().parents[2]
BARE = ("seed", "protocol", "backend", "kafka-version", "client-version", "runs-root", "misbehave", "member",
        "member-command", "commit-mode", "client-set", "broker-set", "group-set")
LEFT_OUT = {"pyspark"}  # what the test does not install (see the docstring)


#: the fresh environment sees only what was installed into it, not this checkout or the caller's venv
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600, env=ENV, **kw)
    assert r.returncode == 0, (cmd, r.stdout[-3000:], r.stderr[-3000:])
    return r


def _requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    reqs = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("Requires-Dist:")]
    reqs = [r for r in reqs if ";" not in r]  # extras (analytics) are not the base install
    return [r for r in reqs if re.split(r"[<>=!~ \[]", r, maxsplit=1)[0].lower() not in LEFT_OUT]


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    src.mkdir()
    shutil.copy(ROOT / "pyproject.toml", src / "pyproject.toml")
    for d in ("harness", "fixtures", "suites", "tests"):
        shutil.copytree(ROOT / d, src / d, ignore=ignore)
    env_dir = tmp / "venv"
    _run([sys.executable, "-m", "venv", env_dir])
    py = env_dir / "bin" / "python"
    _run([py, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist", src])
    wheel = next((tmp / "dist").glob("kafka_rebalance_harness-*.whl"))
    _run([py, "-m", "pip", "install", "-q", "--no-deps", wheel])
    _run([py, "-m", "pip", "install", "-q", "fixtures", *_requirements(wheel)])
    (tmp / "empty").mkdir()
    return py, wheel, tmp / "empty"


def test_the_wheel_has_no_fixtures_package(venv):
    _, wheel, _ = venv
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        tops = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
        entry_points = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert tops == {"harness"}, tops
    assert "harness/suite/plugin.py" in names
    assert re.search(r"^\[pytest11\]\nharness\.suite\.plugin = harness\.suite\.plugin$", entry_points, re.M), entry_points


def test_pypi_fixtures_and_the_plugin_import_side_by_side(venv):
    py, _, cwd = venv
    r = _run([py, "-c", "import fixtures, harness.suite.plugin as p\n"
                        "print(fixtures.Fixture.__module__, fixtures.__file__, p.__file__, sep='\\n')"], cwd=cwd)
    module, fixtures_file, plugin_file = r.stdout.split()
    assert module.startswith("fixtures.")
    assert "site-packages" in fixtures_file and "site-packages" in plugin_file  # installed, not this checkout


def _options(help_text: str) -> list[str]:
    return re.findall(r"^\s{2}(--[a-z][a-z0-9-]*)", help_text, re.M)


def _declared() -> set[str]:
    """The options this checkout's plugin declares (its pytest_addoption run against a recording parser)."""
    from harness.suite import plugin as pytest_plugin
    names: set[str] = set()

    class Group:
        def addoption(self, *opts, **_kw):
            names.update(opts)

    class Parser:
        def getgroup(self, *_a, **_kw):
            return Group()

        def addini(self, *_a, **_kw):
            pass

    pytest_plugin.pytest_addoption(Parser())
    return names


def test_pytest_help_lists_the_options_under_the_prefix_only(venv):
    py, _, cwd = venv
    text = _run([py, "-m", "pytest", "--help", "-p", "no:cacheprovider"], cwd=cwd).stdout
    group = text.split("Kafka rebalancing harness:", 1)[1].split("\n\n", 1)[0]  # loaded by the entry point alone
    ours = _options(group)
    assert ours and all(o.startswith("--harness-") for o in ours), ours
    declared = _declared()
    assert declared == set(ours)  # every option the plugin declares, listed by the installed wheel
    assert {f"--harness-{b}" for b in BARE} <= set(ours)  # the old bare names live on under the prefix
    assert not set(_options(text)) & {f"--{b}" for b in BARE}
    again = _run([py, "-m", "pytest", "--help", "-p", "no:cacheprovider", "-p", "harness.suite.plugin"], cwd=cwd).stdout
    assert _options(again) == _options(text)
