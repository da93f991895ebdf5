"""Session-level files of an Allure results dir: environment.properties and categories.json."""
from __future__ import annotations

import json
import re
from pathlib import Path

from harness.findings.registry import REASON as KNOWN_PREFIX  # how the xfail reason of a test a known finding excused starts


def key_setting(source: str, key: str) -> bool:
    """Whether a run.json setting shapes rebalancing (shown in the report's Environment panel)."""
    return source == "client_settings" or key.startswith("group.")

#: failures that are not verdicts (no `name: invalid:` / `name: unknown:` line): set-up failed or crashed
INFRA_REGEX = (r"(?s)(?!.*\b[a-z_]+: (invalid|unknown):)"
               r".*(SetupError|HarnessError|[Cc]ould not|Traceback|\brun \S+: (error|incomplete)).*")


#: the category name's suffix of a known finding that failed its test (`--harness-known-findings fail`, the default)
KNOWN_FAILED = "(failed, not excused)"
#: the Allure statuses of a test whose run was undecided: broken (harness/suite/plugin.py allure_status); failed
#: when another of its runs failed, or when it was judged outside the plugin
UNDECIDED = ["broken", "failed"]


def invariant_names() -> list[str]:
    """Every invariant a checker registry names: the `*CHECKERS` dicts of harness.invariants and of its packages
    (consumer groups first, then in module order), so that a checker registered anywhere there has its category."""
    import importlib
    import pkgutil

    import harness.invariants as inv
    mods = [inv] + [importlib.import_module(m.name) for m in pkgutil.walk_packages(inv.__path__, inv.__name__ + ".")]
    names: list[str] = []
    for mod in mods:
        for attr, value in vars(mod).items():
            if attr.endswith("CHECKERS") and isinstance(value, dict):
                names += [n for n in value if isinstance(n, str) and n not in names]
    return names


def finding_ids() -> list[str]:
    """The ids of the known findings (harness/findings/registry.py)."""
    from harness.findings.registry import KNOWN
    return [f.id for f in KNOWN]


def categories() -> list[dict]:
    """Allure categories: one per known finding (an xfailed test excused by it) and one per known finding that
    failed its test (its message names the finding: `--harness-known-findings fail`), one per invariant violated (a failed
    test) and per invariant undecided (a broken one; every checker of every kind), any other undecided invariant,
    and set-up/infrastructure errors."""
    cats = [{"name": f"{KNOWN_PREFIX}{i}", "matchedStatuses": ["skipped"],
             "messageRegex": rf"(?s)(XFAIL )?{KNOWN_PREFIX}{re.escape(i)}(?![\w.-]).*"} for i in finding_ids()]
    cats += [{"name": f"{KNOWN_PREFIX}{i} {KNOWN_FAILED}", "matchedStatuses": ["failed"],
              "messageRegex": rf"(?s).*\n\s*{KNOWN_PREFIX}{re.escape(i)}: .*"} for i in finding_ids()]
    names = invariant_names()
    cats += [{"name": f"Violation: {n}", "matchedStatuses": ["failed"], "messageRegex": rf"(?s).*\b{n}: invalid:.*"}
             for n in names]
    cats += [{"name": f"Undecided: {n}", "matchedStatuses": UNDECIDED, "messageRegex": rf"(?s).*\b{n}: unknown:.*"}
             for n in names]
    cats.append({"name": "Undecided invariant", "matchedStatuses": UNDECIDED,
                 "messageRegex": r"(?s).*\b[a-z_]+: unknown:.*"})
    cats.append({"name": "Set-up / infrastructure error", "matchedStatuses": ["broken"]})
    cats.append({"name": "Set-up / infrastructure error", "matchedStatuses": ["failed"], "messageRegex": INFRA_REGEX})
    return cats


def environment(metas: list[dict]) -> dict[str, str]:
    """Report environment from the run.json of every run in the session (distinct values joined)."""
    env: dict[str, list[str]] = {}

    def add(key, value):
        if value is not None and str(value) not in env.setdefault(key, []):
            env[key].append(str(value))

    for m in metas:
        add("kafka.version", m.get("kafka_version"))
        add("client.library", m.get("client_library"))
        add("client.version", m.get("client_version"))
        add("protocols", m.get("protocol"))
        add("backend", m.get("backend"))
        add("brokers", m.get("brokers"))
        for src in ("broker_settings", "client_settings"):
            for k, v in (m.get(src) or {}).items():
                if key_setting(src, k):
                    add(k, v)
    return {k: ", ".join(vs) for k, vs in env.items() if vs}


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\n", "\\n").replace("=", "\\=").replace(":", "\\:")


def write(alluredir: str | Path, metas: list[dict]) -> None:
    """Write environment.properties and categories.json into an Allure results dir."""
    d = Path(alluredir)
    d.mkdir(parents=True, exist_ok=True)
    env = environment(metas)
    (d / "environment.properties").write_text("".join(f"{_escape(k)}={_escape(v)}\n" for k, v in env.items()))
    (d / "categories.json").write_text(json.dumps(categories(), indent=2))
