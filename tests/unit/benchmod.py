"""A script of bench/ loaded as a module, for unit tests of its pure parts (bench/ is not a package)."""
import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load(name: str):
    """bench/<name>.py as a module."""
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
