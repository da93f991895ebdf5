"""The one builder of the harness's Java programs (harness/kafka/jvm_build.py) and the one Java history header.

- the header every Java program writes names the schema version of harness/record/history.schema.json, through a
  constant generated from the schema at build time (compiled and run here when a JDK is installed);
- no Java source but HistoryHeader.java spells the header, and each Java program writes it through HistoryHeader;
- a build is reused while nothing it depends on changed, and made again when anything did: a source, the
  generated schema constant, a library jar, the JDK, the JVM options;
- the member modules keep only what differs (no lock, stamp, javac or jar of their own).
"""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from harness.record import format as history_format
from harness.record.schema import load_schema, validate_file
from harness.members import connect_member, java_member, streams_member
from harness.kafka import jvm_build

MEMBERS = Path(jvm_build.__file__).resolve().parent
HARNESS = MEMBERS.parent
PROGRAMS = (java_member.PROGRAM, streams_member.PROGRAM, connect_member.PROGRAM)
HAS_JDK = bool(shutil.which("java") and shutil.which("javac"))


def _schema_header() -> tuple[str, int]:
    props = load_schema()["$defs"]["header"]["properties"]
    return props["schema"]["const"], props["version"]["const"]


def test_the_generated_constant_is_the_schemas_and_the_python_writers():
    name, version = _schema_header()
    text = jvm_build.history_schema_java()
    assert f'static final String NAME = "{name}";' in text and f"static final int VERSION = {version};" in text
    assert (history_format.SCHEMA, history_format.VERSION) == (name, version)


def test_a_schema_bump_reaches_the_generated_constant(monkeypatch):
    schema = load_schema()
    schema["$defs"]["header"]["properties"]["version"]["const"] = 7
    monkeypatch.setattr(jvm_build, "load_schema", lambda: schema)
    assert "static final int VERSION = 7;" in jvm_build.history_schema_java()


@pytest.mark.skipif(not HAS_JDK, reason="no JDK (java and javac) here")
def test_the_java_header_line_is_the_schemas(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    lib = tmp_path / "empty.jar"
    zipfile.ZipFile(lib, "w").close()
    header_only = jvm_build.JvmProgram(name="header", what="the header printer", main="HistoryHeader",
                                       sources=(), jvm_opts=(), against="nothing")
    built = jvm_build.build(header_only, "0", classpath=str(lib), progress=lambda m: None)
    out = subprocess.run(built.command(args=('m"1',)), capture_output=True, text=True, timeout=120, check=True).stdout
    line = out.strip()
    name, version = _schema_header()
    path = tmp_path / "member-m1.jsonl"
    path.write_text(line + "\n")
    assert validate_file(path) == [], line
    header, events = history_format.read_file(path)  # the Python reader takes it: its schema and version
    assert (header["schema"], header["version"], header["source"], header["member"]) == (name, version, "member", 'm"1')
    assert events == []


def test_only_history_header_spells_the_header_and_every_program_writes_through_it():
    sources = {p: p.read_text() for p in HARNESS.rglob("*.java")}
    spellers = sorted(p.name for p, t in sources.items() if history_format.SCHEMA in t or '\\"header\\"' in t
                      or '"header"' in t)
    assert spellers == ["HistoryHeader.java"], spellers
    for program in PROGRAMS:
        assert any("HistoryHeader." in sources[s] for s in program.sources), program.name


# -- the build, reused or made again (javac and the JDK stood in for: what is checked is when it builds)

@pytest.fixture
def fake_build(tmp_path, monkeypatch):
    """build() with a stand-in javac that records each compile; returns (build, compiles, after_builds, lib)."""
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jvm_build, "require_tool", lambda name, why: sys.executable)
    compiles, after = [], []

    def compile_java(javac, sources, classpath, classes, log, *, main, what, options=()):
        compiles.append([Path(s).name for s in sources])
        classes.mkdir(parents=True, exist_ok=True)
        (classes / f"{main}.class").write_bytes(b"\xca\xfe")

    monkeypatch.setattr(jvm_build, "compile_java", compile_java)
    src = tmp_path / "Main.java"
    src.write_text("class Main {}\n")
    lib = tmp_path / "lib.jar"
    lib.write_bytes(b"jar")
    program = jvm_build.JvmProgram(name="prog", what="the program", main="Main", sources=(src,), jvm_opts=("-Xmx1m",),
                                   against="lib", after_build=lambda built, progress: after.append(built.jar))

    def run(prog=program):
        return jvm_build.build(prog, "1.0", classpath=str(lib), progress=lambda m: None)
    return run, compiles, after, lib, src, program


def test_a_build_is_reused_while_nothing_changed(fake_build, tmp_path):
    build, compiles, after, lib, src, program = fake_build
    built = build()
    assert built.base == tmp_path / "cache" / "jvm" / "prog" / "1.0" and built.jar.exists()
    assert compiles == [["Main.java", "HistoryHeader.java", "KafkaVersion.java", "HistorySchema.java", "Vocabulary.java"]]
    assert after == [built.jar]
    build()
    assert len(compiles) == 1 and len(after) == 1
    assert built.command(args=("x",)) == (sys.executable, "-Xmx1m", "-cp", f"{built.jar}:{lib}", "Main", "x")


@pytest.mark.parametrize("change", ["source", "schema", "library", "library gone", "jvm options", "stamp lost"])
def test_a_build_is_made_again_when_anything_it_depends_on_changed(fake_build, monkeypatch, change):
    build, compiles, after, lib, src, program = fake_build
    built = build()
    if change == "source":
        src.write_text("class Main { int x; }\n")
    elif change == "schema":
        monkeypatch.setattr(jvm_build, "history_schema_java", lambda: "final class HistorySchema { /* v2 */ }\n")
    elif change == "library":
        st = lib.stat()
        os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    elif change == "library gone":
        lib.unlink()
    elif change == "jvm options":
        program = replace(program, jvm_opts=("-Xmx2m",))
    elif change == "stamp lost":
        (built.base / "COMPLETE").write_text("something else\n")
    build(program)
    assert len(compiles) == 2 and len(after) == 2, change
    build(program)
    assert len(compiles) == 2, f"{change}: rebuilt again with nothing changed"


def test_the_member_modules_keep_only_what_differs():
    for mod in (java_member, streams_member, connect_member):
        tree = ast.parse(Path(mod.__file__).read_text())
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not imported & {"fcntl", "hashlib", "zipfile"}, mod.__name__
        own = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert not [f for f in own if any(w in f for w in ("stamp", "jar", "compile", "lock", "pom"))], (mod.__name__, own)
        assert '"COMPLETE"' not in Path(mod.__file__).read_text() and "POM" not in Path(mod.__file__).read_text()
        assert isinstance(mod.PROGRAM, jvm_build.JvmProgram)
    assert len({p.name for p in PROGRAMS}) == len(PROGRAMS)
