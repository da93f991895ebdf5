"""The HTML report: Allure's generator from the npm registry, installed once into the cache, history carried over."""
from __future__ import annotations

import logging

import shutil
import subprocess
from pathlib import Path

from harness.base.errors import BadInput, SetupError
from harness.base.tools import cache_dir, require_tool

_log = logging.getLogger(__name__)

ALLURE_VERSION = "2.46.1"  # npm package allure-commandline (bundles the Java generator)
#: Allure's own trend data in a report (not a run directory's history)
ALLURE_HISTORY = "history"


def allure_binary(progress=_log.info) -> Path:
    """The `allure` command of the pinned allure-commandline, installed with npm into the cache on first use."""
    home = cache_dir() / "allure" / ALLURE_VERSION
    binary = home / "node_modules" / ".bin" / "allure"
    if binary.exists():
        return binary
    require_tool("node", why="run Allure's report generator (allure-commandline from the npm registry)")
    npm = require_tool("npm", why="install Allure's report generator (allure-commandline from the npm registry)")
    require_tool("java", why="run Allure's report generator (Java 17)")
    progress(f"installing allure-commandline {ALLURE_VERSION} with npm into {home}")
    home.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([npm, "install", "--prefix", str(home), "--no-audit", "--no-fund", "--loglevel=error",
                        f"allure-commandline@{ALLURE_VERSION}"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0 or not binary.exists():
        last = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SetupError(f"npm could not install allure-commandline {ALLURE_VERSION}: {last[0]}")
    return binary


def carry_history(results: Path, out: Path) -> bool:
    """Copy the previous report's history/ into the results dir so the new report shows trends."""
    prev = out / ALLURE_HISTORY
    if not prev.is_dir():
        return False
    shutil.copytree(prev, results / ALLURE_HISTORY, dirs_exist_ok=True)
    return True


def generate(results: str | Path, out: str | Path, *, progress=_log.info) -> Path:
    """Generate the HTML report from an Allure results dir into `out` (replaced); returns out/index.html."""
    results, out = Path(results).resolve(), Path(out).resolve()
    if not results.is_dir() or not any(results.glob("*-result.json")):
        raise BadInput(f"{results} holds no Allure results (run the suites with --alluredir={results})")
    binary = allure_binary(progress=progress)
    if carry_history(results, out):
        progress(f"trends: carried {out / ALLURE_HISTORY} over")
    r = subprocess.run([str(binary), "generate", "--clean", str(results), "-o", str(out)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0 or not (out / "index.html").exists():
        last = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        raise SetupError(f"allure generate failed (exit {r.returncode}): {last[0]}")
    return out / "index.html"
