"""Verify: the HTML report of a real failing run shows the failed test, its invariant and the timeline chart.

Setup: the chaos suite in a subprocess (member-kill, classic-cooperative, a member that claims an extra
partition) with --alluredir; `harness report` generates the HTML report; `python -m http.server` serves it.
Then: headless Chromium renders the test's page (the failure names exclusive_ownership, the timeline is
attached) and the timeline SVG attachment, whose screenshot has red violation markers in the chart rows;
the screenshots are kept under reports/screenshots/.
"""
import json
import shutil
import struct
import subprocess
import sys
import time
import urllib.request
import zlib
from pathlib import Path

import pytest

from harness.report.timeline import ROW_H, TOP
from harness.tools import free_ports

pytestmark = pytest.mark.integration
SHOTS = Path("reports/screenshots")
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["chromium", *CHROME_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180)


def _pixels(png: Path):
    """(width, height, rows of RGB(A) tuples) of an 8-bit non-interlaced RGB/RGBA PNG (Chromium's screenshots)."""
    data = png.read_bytes()
    pos, idat, w, h, bpp = 8, b"", 0, 0, 4
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), (depth, ctype)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a, b, c = line[i - bpp] if i >= bpp else 0, prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def test_report_page_shows_failed_run_and_timeline(tmp_path):
    if not shutil.which("chromium"):
        pytest.skip("chromium is not installed (./dev setup installs it)")
    results, report = tmp_path / "results", tmp_path / "report"
    r = subprocess.run([sys.executable, "-m", "pytest", "suites/test_chaos.py", "-p", "no:cacheprovider", "-q",
                        "-k", "test_scenario and member-kill", "--harness-protocol", "classic-cooperative",
                        "--harness-misbehave", "claim-extra", "--alluredir", str(results),
                        "--harness-runs-root", str(tmp_path / "runs")],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 1, (r.stdout + r.stderr)[-4000:]
    assert (results / "categories.json").exists() and (results / "environment.properties").exists()
    g = subprocess.run([sys.executable, "-m", "harness", "report", "--results", str(results), "--out", str(report)],
                       capture_output=True, text=True, timeout=900)
    assert g.returncode == 0, g.stdout + g.stderr
    cases = [json.loads(f.read_text()) for f in (report / "data" / "test-cases").glob("*.json")]
    failed = [c for c in cases if c["status"] == "failed"]
    assert len(failed) == 1 and "exclusive_ownership: invalid" in failed[0].get("statusMessage", "")
    assert "Violation: exclusive_ownership" in (report / "data" / "categories.json").read_text()
    svgs = list((report / "data" / "attachments").glob("*.svg"))
    assert len(svgs) == 1 and 'class="violation"' in svgs[0].read_text()

    port = free_ports(1)[0]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                              cwd=report, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(50):
            try:
                urllib.request.urlopen(base + "/index.html", timeout=2).read()
                break
            except OSError:
                time.sleep(0.2)
        page = f"{base}/index.html#testresult/{failed[0]['uid']}"
        dom = _chromium(tmp_path / "p1", "--virtual-time-budget=20000", "--dump-dom", page).stdout
        assert "exclusive_ownership: invalid" in dom and "ownership timeline" in dom, dom[-2000:]
        assert "Violation: exclusive_ownership" in dom
        SHOTS.mkdir(parents=True, exist_ok=True)
        page_png, chart_png = SHOTS / "report-test-result.png", SHOTS / "report-timeline.png"
        _chromium(tmp_path / "p2", "--virtual-time-budget=20000", "--window-size=1400,1000",
                  f"--screenshot={page_png.resolve()}", page)
        _chromium(tmp_path / "p3", "--window-size=1100,320", f"--screenshot={chart_png.resolve()}",
                  f"{base}/data/attachments/{svgs[0].name}")
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert page_png.stat().st_size > 10_000
    w, h, rows = _pixels(chart_png)
    red = sum(1 for y in range(TOP, min(h, TOP + 6 * ROW_H)) for px in rows[y] if px == (255, 0, 0))
    assert red > 20, f"no red violation markers in the chart rows of {chart_png}"
    coloured = sum(1 for y in range(TOP, min(h, TOP + 6 * ROW_H)) for px in rows[y][120:] if px != (255, 255, 255))
    assert coloured > 5000, "the chart rows are empty: no ownership bars"
