"""Unit tests: make the shared history builders (histbuild.py) importable under any import mode; `nothing_starts`,
the fixture of the tests that bad input starts nothing."""
import os
import subprocess
import sys

import pytest

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)


class Started(Exception):
    """Something was about to start (a cluster, a backend's preflight, a child process)."""


@pytest.fixture
def nothing_starts(monkeypatch):
    """A cluster made, a backend's preflight or a child process: the test fails (raised as Started)."""
    def started(*a, **k):
        raise Started(f"started: {a[:1]}")
    from harness.cluster import backends
    monkeypatch.setattr(backends, "new_backend", started)
    monkeypatch.setattr(backends, "preflight", started)
    monkeypatch.setattr(subprocess, "Popen", started)
