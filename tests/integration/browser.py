"""Headless Chromium for the tests of the report pages: render, dump the DOM, screenshot, read a screenshot's pixels,
and serve a directory over HTTP (the Allure report is a single-page app that loads JSON)."""
import struct
import subprocess
import sys
import time
import urllib.request
import zlib
from contextlib import contextmanager
from pathlib import Path

from harness.base.tools import free_ports

CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess:
    """Chromium with a fresh profile directory of its own."""
    return subprocess.run(["chromium", *CHROME_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180)


def dom(profile: Path, url: str, *, width: int = 1400) -> str:
    """The page's DOM once its scripts have run (virtual time: the page's own timers run to the end)."""
    return chromium(profile, "--virtual-time-budget=20000", f"--window-size={width},1000", "--dump-dom", url).stdout


@contextmanager
def served(directory: Path):
    """`python -m http.server` on a free loopback port serving `directory`; yields its base URL."""
    port = free_ports(1)[0]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                              cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(50):
            try:
                urllib.request.urlopen(base + "/", timeout=2).read()
                break
            except OSError:
                time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=10)


def pixels(png: Path):
    """(width, height, rows of RGB tuples) of an 8-bit non-interlaced RGB/RGBA PNG (Chromium's screenshots)."""
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
