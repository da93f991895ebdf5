"""Unit tests: make the shared history builders (histbuild.py) importable under any import mode."""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)
