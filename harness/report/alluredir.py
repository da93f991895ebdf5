"""Session-level files of an Allure results dir: environment.properties and categories.json."""
from __future__ import annotations

import json
from pathlib import Path

from harness.invariants import CHECKERS



def key_setting(source: str, key: str) -> bool:
    """Whether a run.json setting shapes rebalancing (shown in the report's Environment panel)."""
    return source == "client_settings" or key.startswith("group.")

#: failures that are not verdicts (no `name: invalid:` / `name: unknown:` line): set-up failed or crashed
INFRA_REGEX = (r"(?s)(?!.*\b[a-z_]+: (invalid|unknown):)"
               r".*(SetupError|HarnessError|[Cc]ould not|Traceback|\brun \S+: (error|incomplete)).*")


def categories() -> list[dict]:
    """Allure categories: one per invariant violated, undecided invariants, and set-up/infrastructure errors."""
    cats = [{"name": f"Violation: {n}", "matchedStatuses": ["failed"], "messageRegex": rf"(?s).*\b{n}: invalid:.*"}
            for n in CHECKERS]
    cats.append({"name": "Undecided invariant", "matchedStatuses": ["failed"],
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
