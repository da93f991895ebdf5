"""One word per vocabulary: each is defined once and every module that used to spell it uses that definition.

- versions: one regular expression (harness/base/versions.py), no version gate written again (not as a tuple,
  not in librdkafka's hex), the grep of the issue finding that one definition;
- the kinds, protocols, protocol -> assignor, member programs, commit modes, self-tests and the share members'
  own settings: harness/base/vocabulary.py. Every module that used to spell one is imported and holds the
  vocabulary's object; no module but the owner assigns one of its names, or a list holding a whole vocabulary; a
  table keyed by a vocabulary covers it; every word a member compares its misbehaviour with is a self-test's name;
- the Java members speak it through the generated `Vocabulary` class: no Java source spells a consumer protocol,
  an assignor class, a self-test or a share member's own setting, and the generated class (compiled and run here
  when a JDK is installed) holds what the Python module holds;
- the history header is checked by one function and `History.run_start()` is the one lookup of the run's start.
"""
from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from harness.base import versions, vocabulary as vocab
from harness.record.history import History

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "harness"
HAS_JDK = bool(shutil.which("java") and shutil.which("javac"))

#: the modules that spelled a vocabulary or a version gate of their own before it had one owner
FORMER_SPELLERS = (
    "harness.kafka.dist", "harness.members.clients", "harness.members.python_member", "harness.members.python_settings",
    "harness.members.share_member", "harness.members.pool", "harness.plan.config", "harness.plan.kinds.checks",
    "harness.plan.kinds.share", "harness.plan.kinds.connect", "harness.plan.scenario_model", "harness.plan.scenarios",
    "harness.plan.scenario_format", "harness.plan.actions", "harness.invariants", "harness.invariants.protocols",
    "harness.invariants.commit_settings", "harness.invariants.applies", "harness.invariants.migrations",
    "harness.invariants.rebalance_time", "harness.invariants.core", "harness.run.resolve", "harness.drive.nightly",
    "harness.analytics.synth", "harness.suite.plugin", "harness.cli", "harness.findings.registry",
    "harness.cluster.local", "harness.kafka.config_names", "harness.nemesis.group", "harness.plan.scenarios",
)
#: each owner and the names it defines
OWNERS = {versions: [n for n in vars(versions) if n.endswith("_SINCE") or n in ("VERSION_RE", "ALIASES",
                                                                                "OLDEST_CLIENT_FOR_4")],
          vocab: [n for n in vars(vocab) if n.isupper()]}


def _sources(suffix: str) -> dict[Path, str]:
    return {p: p.read_text() for p in HARNESS.rglob(f"*{suffix}") if "__pycache__" not in p.parts}


def test_the_owners_define_the_words():
    assert set(OWNERS[versions]) >= {"PROTOCOL_SINCE", "CLIENT_PROTOCOL_SINCE", "SHARE_BROKERS_SINCE",
                                     "SHARE_CLIENT_SINCE", "DLQ_SINCE", "CONNECT_PROTOCOL_SINCE", "GROUP_CONFIGS_SINCE",
                                     "VERSION_RE"}
    assert set(OWNERS[vocab]) >= {"GROUP_KINDS", "MEMBER_KINDS", "CONSUMER_PROTOCOLS", "STREAMS_PROTOCOLS",
                                  "CONNECT_PROTOCOLS", "SHARE_PROTOCOLS", "ASSIGNMENT", "COMMIT_MODES",
                                  "MISBEHAVIOURS", "MISBEHAVE_HELP", "STICKY_ASSIGNORS", "SHARE_POISON"}
    assert set(vocab.PROTOCOLS_OF) == set(vocab.GROUP_KINDS) == set(vocab.MISBEHAVIOURS)
    assert set(vocab.ASSIGNMENT) == set(vocab.CONSUMER_PROTOCOLS)
    assert set(versions.PROTOCOL_SINCE) <= set(vocab.ALL_PROTOCOLS)
    assert set(versions.CONNECT_PROTOCOL_SINCE) == set(vocab.CONNECT_PROTOCOLS)
    assert len(set(vocab.ALL_PROTOCOLS)) == len(vocab.ALL_PROTOCOLS)  # a protocol's name says its kind


@pytest.mark.parametrize("module", sorted(set(FORMER_SPELLERS)))
def test_a_former_speller_holds_the_owners_object(module):
    """Every name of an owner that the module still has is the owner's very object (imported, not spelled again)."""
    mod = importlib.import_module(module)
    for owner, names in OWNERS.items():
        for name in names:
            if hasattr(mod, name):
                assert getattr(mod, name) is getattr(owner, name), f"{module}.{name} is not {owner.__name__}.{name}"


def _assigned_names(tree: ast.AST) -> set[str]:
    """Names a module assigns anywhere (module, class or function level; not imports)."""
    out = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    out.add(n.id)
    return out


def test_no_module_but_the_owner_defines_a_word():
    owner_files = {HARNESS / "base" / "versions.py", HARNESS / "base" / "vocabulary.py"}
    owned = {n for names in OWNERS.values() for n in names}
    bad = {}
    for path, text in _sources(".py").items():
        if path in owner_files:
            continue
        again = _assigned_names(ast.parse(text)) & owned
        again |= {n for n in _assigned_names(ast.parse(text)) if n.endswith("_SINCE")}  # a gate of its own
        if again:
            bad[str(path.relative_to(ROOT))] = sorted(again)
    assert not bad, f"names of the vocabulary or the versions defined again: {bad}"


#: each vocabulary of two or more words, as the words a list spelling it again would hold
VOCABULARIES = {"kinds": set(vocab.GROUP_KINDS), "member programs": set(vocab.MEMBER_KINDS),
                **{f"{kind} protocols": set(ps) for kind, ps in vocab.PROTOCOLS_OF.items() if len(ps) > 1},
                "commit modes": set(vocab.COMMIT_MODES), "sticky assignors": set(vocab.STICKY_ASSIGNORS),
                "offset store paths": set(vocab.OFFSET_STORES),
                **{f"{kind} self-tests": set(ms) for kind, ms in vocab.MISBEHAVIOURS.items()},
                "assignor classes": {a.java_class for a in vocab.ASSIGNMENT.values() if a.java_class},
                "share member settings": set(vocab.SHARE_POISON), "ways to subscribe": set(vocab.SUBSCRIBE_BY)}


def _literal_words(node: ast.AST) -> set[str]:
    """The strings of a literal tuple, list or set, or of a dict's keys and values, else none."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        elts = node.elts
    elif isinstance(node, ast.Dict):
        elts = [*node.keys, *node.values]
    else:
        return set()
    return {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def _value_words(node: ast.AST) -> set[str]:
    """The strings a table's value says: a string, a literal list's, a literal dict's values'."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Dict):
        return {w for v in node.values for w in _value_words(v)}
    return _literal_words(node)


def respellings(text: str) -> list[tuple[int, str]]:
    """(line, vocabulary) of each literal assigned in `text` (a tuple, list, set, or a dict whose values are all
    strings) that holds a whole vocabulary: a list spelled again. A table keyed by a vocabulary, whose values are
    the table's own (classes, rules, messages), is a use of it (`test_the_tables_keyed_by_a_vocabulary_cover_it`)."""
    every_word = {w for ws in VOCABULARIES.values() for w in ws}
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value, words = node.value, _literal_words(node.value)
            if isinstance(value, ast.Dict) and not any(_value_words(v) & every_word for v in value.values):
                continue  # a table keyed by a vocabulary to its own values (classes, rules, messages): a use of it
            out += [(node.lineno, name) for name, vs in VOCABULARIES.items() if vs <= words]
    return out


def test_the_respelling_finder_finds_a_respelled_list():
    assert respellings('MODES = ("sync", "async", "auto", "never")\n') == [(1, "commit modes")]
    assert respellings('P = {"classic-eager": {"group.protocol": "classic"}, "classic-cooperative": {}, '
                       '"consumer": {}}\n') == [(1, "consumer protocols")]
    assert respellings('P = {"classic-eager": "range", "classic-cooperative": "cooperative-sticky", "consumer": "x"}\n') \
        == [(1, "consumer protocols")]
    assert respellings('X = ("sync", "async")\nY = ["a", "b"]\nK = {"consumer": "C", "streams": "S", "connect": "K",'
                       ' "share": "H"}\n') == []


def test_the_tables_keyed_by_a_vocabulary_cover_it():
    from harness.kinds import KINDS as KIND_CLASSES
    from harness.plan.kinds.checks import CHECKS
    from harness.plan.scenario_format import _NOT_FOR, MEMBERS_OF
    from harness.invariants.protocols import PROTOCOLS as RULES
    for table in (KIND_CLASSES, CHECKS, MEMBERS_OF, _NOT_FOR):
        assert set(table) == set(vocab.GROUP_KINDS)
    assert tuple(RULES) == vocab.CONSUMER_PROTOCOLS
    assert set(versions.CONNECT_PROTOCOL_SINCE) == set(vocab.CONNECT_PROTOCOLS)


def test_no_module_but_the_owner_spells_a_vocabulary_again():
    bad = {str(p.relative_to(ROOT)): found for p, text in _sources(".py").items()
           if p != HARNESS / "base" / "vocabulary.py" and (found := respellings(text))}
    assert not bad, f"vocabularies spelled again (line, vocabulary): {bad}"


def _misbehave_compares(text: str) -> list[str]:
    """The strings a module compares a misbehaviour with (`misbehave == "x"`, `bad != "x"`, `x in (...)`)."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        named = any(isinstance(s, ast.Name) and s.id in ("misbehave", "bad")
                    or isinstance(s, ast.Attribute) and s.attr == "misbehave" for s in sides)
        if named:
            out += [s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)]
    return out


def test_every_misbehaviour_a_member_or_kind_compares_with_is_a_self_test():
    seen = {}
    for path, text in _sources(".py").items():
        if {"members", "kinds"} & set(path.relative_to(HARNESS).parts[:1]):
            seen[path.name] = _misbehave_compares(text)
    assert "claim-extra" in seen["python_member.py"] and "defeat-warmup" in seen["streams.py"]  # the finder sees them
    unknown = {f: sorted(set(ws) - set(vocab.MISBEHAVE_HELP)) for f, ws in seen.items() if set(ws) - set(vocab.MISBEHAVE_HELP)}
    assert not unknown, f"misbehaviours no kind knows: {unknown}"


def test_the_plan_and_the_faces_offer_the_vocabulary():
    from harness.cli import _parser
    from harness.invariants.protocols import PROTOCOLS as RULES
    from harness.members.python_member import protocol_config
    assert [r.eager_revocation for r in RULES.values()] == [a.eager for a in vocab.ASSIGNMENT.values()]
    assert {p: protocol_config(p) for p in vocab.CONSUMER_PROTOCOLS} == \
        {p: a.client_settings() for p, a in vocab.ASSIGNMENT.items()}
    run = next(a for a in _parser()._subparsers._group_actions[0].choices["run"]._actions if a.dest == "protocol")
    assert tuple(run.choices) == vocab.ALL_PROTOCOLS


# -- versions

def test_the_issues_grep_finds_one_definition():
    """`grep -rn "VERSION_RE\\|0x0204" harness` (compiled caches left out): every hit in harness/base/versions.py,
    one of them its definition."""
    hits = [(p, n, line) for p, text in {**_sources(".py"), **_sources(".java")}.items()
            for n, line in enumerate(text.splitlines(), 1) if re.search(r"VERSION_RE|0x0204", line)]
    assert {p for p, _, _ in hits} == {HARNESS / "base" / "versions.py"}, hits
    assert len([line for _, _, line in hits if line.startswith("VERSION_RE =")]) == 1, hits
    out = subprocess.run(["grep", "-rn", "--exclude-dir=__pycache__", r"VERSION_RE\|0x0204", "harness"], cwd=ROOT,
                         capture_output=True, text=True).stdout.splitlines()
    assert [ln for ln in out if re.search(r"VERSION_RE = ", ln)] == [
        next(f"harness/base/versions.py:{n}:{line}" for _, n, line in hits if line.startswith("VERSION_RE ="))]


def test_no_module_parses_a_version_by_hand():
    """No version split on its dots into numbers and no version regular expression outside harness/base/versions.py
    (a line splitting on "." that speaks of a version or of int, or a pattern of dotted digits)."""
    hand = re.compile(r"""split\(["']\.["']\).*(version|int\b)|(version|int\(|map\(int).*split\(["']\.["']\)"""
                      r"""|\\d\+\\\.\\d\+""")
    bad = {str(p.relative_to(ROOT)): [n for n, line in enumerate(t.splitlines(), 1) if hand.search(line)]
           for p, t in _sources(".py").items() if p != HARNESS / "base" / "versions.py"}
    assert not {p: ns for p, ns in bad.items() if ns}


@pytest.mark.parametrize("v, release, post, prefix, key", [
    ("4.2.0", True, True, False, (4, 2, 0)), ("2.12.0.post1", False, True, False, (2, 12, 0)),
    ("4.2", False, False, True, (4, 2)), ("4", False, False, True, (4,)), ("latest", False, False, False, None),
    ("4.2.0.1", False, False, False, None), ("v4.2.0", False, False, False, None)])
def test_the_one_parser(v, release, post, prefix, key):
    assert versions.is_release(v) is release and versions.is_release(v, post=True) is post
    assert versions.is_prefix(v) is prefix
    if key is None:
        with pytest.raises(ValueError):
            versions.version_key(v)
    else:
        assert versions.version_key(v) == key


def test_names_a_kafka_version_can_stand_for():
    assert [versions.newest_major_minor(n) for n in ("latest", "latest-3", "4", "4.1", "4.1.2", "nonsense")] == \
        [(4, 99), (3, 99), (4, 99), (4, 1), (4, 1), None]
    assert versions.dotted(versions.SHARE_BROKERS_SINCE) == "4.2"


def test_the_python_members_gate_is_librdkafkas_number_of_the_plans():
    """libversion()[1] of a final release x.y.z is 0xXXYYZZff: the gate (2, 4, 0) lets 2.4.0 in and keeps 2.3.0 out."""
    gate = versions.librdkafka_number(versions.CLIENT_PROTOCOL_SINCE["consumer"])
    assert (2 << 24 | 4 << 16 | 0 << 8 | 0xff) >= gate > (2 << 24 | 3 << 16 | 0 << 8 | 0xff)


# -- the Java members

def java_strings(text: str) -> set[str]:
    """The string literals of a Java source (its comments and char literals left out)."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    text = re.sub(r"'(?:[^'\\\n]|\\.)'", "", text)
    return set(re.findall(r'"((?:[^"\\\n]|\\.)*)"', text))


def test_the_java_string_finder():
    assert java_strings('char c = \'"\'; // "not"\n/* "nor" */ p.put("a\\"b", "classic-eager");') == {'a\\"b', "classic-eager"}


def test_no_java_source_spells_the_vocabulary():
    words = (set(vocab.CONSUMER_PROTOCOLS) | set(vocab.MISBEHAVE_HELP) | set(vocab.SHARE_POISON)
             | VOCABULARIES["assignor classes"])
    quoted = {str(p.relative_to(ROOT)): sorted(java_strings(t) & words) for p, t in _sources(".java").items()}
    assert not {p: ws for p, ws in quoted.items() if ws}, "spell these through the generated Vocabulary"
    used = {p.name for p, t in _sources(".java").items() if "Vocabulary." in t}
    assert {"Member.java", "ShareMember.java", "StreamsMember.java", "HarnessSourceTask.java"} <= used


def test_the_generated_vocabulary_is_the_modules():
    from harness.kafka.jvm_build import vocabulary_java
    text = vocabulary_java()
    for p, a in vocab.ASSIGNMENT.items():
        assert f'"{p}", "{a.group_protocol}"' in text
        assert (f'"{p}", "{a.java_class}"' in text) is bool(a.java_class)
    for name in vocab.MISBEHAVE_HELP:
        assert f'MISBEHAVE_{name.upper().replace("-", "_")} = "{name}";' in text
    assert f"SHARE_MISBEHAVE_ON_POLL = {vocab.SHARE_MISBEHAVE_ON_POLL};" in text


PRINTER = """
import java.util.TreeMap;

public class PrintVocabulary {
    public static void main(String[] args) {
        System.out.println(new TreeMap<>(Vocabulary.GROUP_PROTOCOL));
        System.out.println(new TreeMap<>(Vocabulary.JAVA_ASSIGNOR));
        System.out.println(Vocabulary.CONSUMER_PROTOCOLS + " " + Vocabulary.COMMIT_MODES + " "
                + Vocabulary.DEFAULT_COMMIT_MODE + " " + Vocabulary.CLASSIC);
        System.out.println(new TreeMap<>(Vocabulary.SHARE_POISON) + " " + Vocabulary.MISBEHAVE_PROCESS_EXPIRED);
    }
}
"""


@pytest.mark.skipif(not HAS_JDK, reason="no JDK (java and javac) here")
def test_the_java_side_reads_the_same_table(tmp_path, monkeypatch):
    from harness.kafka import jvm_build
    monkeypatch.setenv("HARNESS_CACHE", str(tmp_path / "cache"))
    (src := tmp_path / "PrintVocabulary.java").write_text(PRINTER)
    zipfile.ZipFile(lib := tmp_path / "empty.jar", "w").close()
    program = jvm_build.JvmProgram(name="vocabulary", what="the vocabulary printer", main="PrintVocabulary",
                                   sources=(src,), jvm_opts=(), against="nothing")
    built = jvm_build.build(program, "0", classpath=str(lib), progress=lambda m: None)
    out = subprocess.run(built.command(), capture_output=True, text=True, timeout=120, check=True).stdout.splitlines()

    def java_map(d):
        return "{" + ", ".join(f"{k}={v}" for k, v in sorted(d.items())) + "}"
    a = vocab.ASSIGNMENT
    assert out == [java_map({p: x.group_protocol for p, x in a.items()}),
                   java_map({p: x.java_class for p, x in a.items() if x.java_class}),
                   f"[{', '.join(vocab.CONSUMER_PROTOCOLS)}] [{', '.join(vocab.COMMIT_MODES)}] "
                   f"{vocab.DEFAULT_COMMIT_MODE} {vocab.CLASSIC}",
                   f"{java_map(vocab.SHARE_POISON)} process-expired"]


# -- the history header and the run's start

def test_one_header_check_for_every_reader():
    """Only harness/record/format.py says what a header is: no other module imports the schema's name or version
    (the merged reader re-exports them), and the readers (the tail, the Spark job) and the synthetic writer call
    `checked_header`, `header_problem` or `header`."""
    takers = set()
    for p, t in _sources(".py").items():
        for node in ast.walk(ast.parse(t)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness.record") \
                    and {"SCHEMA", "VERSION"} & {a.name for a in node.names}:
                takers.add(str(p.relative_to(ROOT)))
    assert takers == {"harness/record/history.py"}, takers
    for module in ("record/tail.py", "analytics/job.py", "analytics/synth.py"):
        assert re.search(r"checked_header|header_problem|\bheader\(", (HARNESS / module).read_text()), module


def test_run_start_is_looked_up_by_history_alone():
    lookups = {str(p.relative_to(ROOT)) for p, t in _sources(".py").items() if re.search(r'== "run_start"', t)}
    assert lookups == {"harness/record/history.py", "harness/analytics/job.py"}, lookups  # the Spark job: rows
    h = History.from_events([{"type": "member_start", "mono": 1.0, "member": "m1", "source": "harness"},
                             {"type": "run_start", "mono": 2.0, "kind": "share", "source": "harness"},
                             {"type": "run_start", "mono": 3.0, "kind": "consumer", "source": "harness"}])
    assert h.run_start()["kind"] == "share" and History.from_events([]).run_start() is None
