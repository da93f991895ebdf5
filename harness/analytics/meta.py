"""Reading one run directory's small files (STATUS, run.json, verdicts.json) and listing its history.

Pure Python: runs on the Spark executors (one task per slice of run directories). A directory that
is corrupt or partial gets a ``reason`` and no rows; it is then skipped by name, never counted. A usable run is
counted by its status as judged now (harness/analytics/judged.py: the run-level checks judged again from its
history), never by STATUS alone; the recorded status is kept beside it.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os

from harness.analytics.judged import judged_now
from harness.record.format import SUFFIX
from harness.record.rundir import HISTORY, RUN_JSON, STATUS, VERDICTS_JSON

FINISHED = ("pass", "fail", "unknown", "error")
VERDICT_STATUSES = ("valid", "invalid", "unknown", "skipped")
MARKERS = (STATUS, RUN_JSON, VERDICTS_JSON, HISTORY)


def is_run_dir(path: str) -> bool:
    """A directory that holds any of the run directory's own entries."""
    return os.path.isdir(path) and any(os.path.exists(os.path.join(path, m)) for m in MARKERS)


def discover(paths, max_depth: int = 3) -> tuple[list[str], list[dict]]:
    """Run directories named by ``paths`` (each a run directory or a folder holding them, searched
    ``max_depth`` levels down). Returns (run dirs, problems) where problems are paths not found."""
    found, problems, seen = [], [], set()

    def walk(p, depth):
        if is_run_dir(p):
            if p not in seen:
                seen.add(p)
                found.append(p)
            return
        if depth <= 0:
            return
        try:
            kids = sorted(os.scandir(p), key=lambda e: e.name)
        except OSError:
            return
        for e in kids:
            if e.is_dir(follow_symlinks=True):
                walk(e.path, depth - 1)

    for p in paths:
        ap = os.path.abspath(p)
        if not os.path.isdir(ap):
            problems.append({"run_dir": ap, "name": os.path.basename(ap), "reason": "not a directory"})
            continue
        walk(ap, max_depth)
    return found, problems


def _ts(s):
    if not s:
        return None
    try:
        d = _dt.datetime.fromisoformat(str(s).replace("Z", "+00:00"))
    except ValueError:
        return None
    return d if d.tzinfo else d.replace(tzinfo=_dt.timezone.utc)


def _int(x):
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def _verdict_list(v) -> list[dict]:
    if isinstance(v, dict):
        items = [dict(d, name=d.get("name") or k) if isinstance(d, dict) else None for k, d in v.items()]
    elif isinstance(v, list):
        items = v
    else:
        raise ValueError(f"{VERDICTS_JSON} is neither an object nor a list")
    out = []
    for d in items:
        if not isinstance(d, dict) or d.get("status") not in VERDICT_STATUSES or not d.get("name"):
            raise ValueError("a verdict without a name or a known status")
        out.append(d)
    return out


class _Unusable(Exception):
    """Why a run directory cannot be used (its skip reason)."""


def load(run_dir: str) -> dict:
    """Everything the job needs from one run directory: its small files (`read`), the run judged now (`judge`)."""
    return judge(read(run_dir))


def read(run_dir: str) -> dict:
    """Everything the job needs from one run directory's small files, not judged yet (`judge` does).

    Returns a dict with ``run_dir``, ``name``, ``reason`` (None when usable), ``files`` (history files: [path,
    size, torn]) where torn means the last byte is not a newline, ``recorded`` (when usable: STATUS, run.json,
    the verdicts), and ``run`` None, ``violations`` and ``rebalance_times`` empty until `judge` fills them: ``run`` a
    tuple in the order of schemas.RUNS (its status and verdicts as judged now, then the status STATUS recorded and
    why the two differ), ``violations`` tuples in the order of schemas.VIOLATIONS, ``rebalance_times`` in the order
    of schemas.REBALANCE_TIMES.
    """
    name = os.path.basename(run_dir.rstrip("/"))
    res = {"run_dir": run_dir, "name": name, "reason": None, "run": None, "violations": [], "files": [],
           "rebalance_times": []}
    try:
        recorded = _status(run_dir)
        meta = _run_json(run_dir)
        verdicts = _verdicts(run_dir, recorded)
        files = _history_files(run_dir)
        if not files and recorded != "error":
            raise _Unusable("history missing")
    except _Unusable as e:
        res["reason"] = str(e)
        return res
    res["files"], res["recorded"] = files, (recorded, meta, verdicts)
    return res


def judge(res: dict) -> dict:
    """`read`'s dict with the run judged now (harness/analytics/judged.py) and its rows: ``run`` (the order of
    schemas.RUNS), ``violations``, ``rebalance_times``; a directory `read` found unusable is returned as it is."""
    if res["reason"] or "recorded" not in res:
        return res
    run_dir, (recorded, meta, verdicts) = res["run_dir"], res.pop("recorded")
    status, verdicts, why = judged_now(run_dir, recorded, verdicts)  # counted as judged now, not as recorded
    res["run"] = _run_row(run_dir, res["name"], status, meta, verdicts, res["files"]) + (recorded, why)
    res["violations"] = [(res["run"][0], v["name"], v["status"], str(v.get("message", "")),
                          len(v.get("witnesses") or []))
                         for v in verdicts if v["status"] in ("invalid", "unknown")]
    res["rebalance_times"] = rebalance_time_rows(res["run"][0], verdicts)
    return res


def _status(run_dir: str) -> str:
    """The run's finished status from STATUS."""
    try:
        with open(os.path.join(run_dir, STATUS)) as f:
            status = (f.readline() or "").strip()
    except FileNotFoundError:
        raise _Unusable(f"{STATUS} missing") from None
    except OSError as e:
        raise _Unusable(f"{STATUS} unreadable: {e}") from None
    if status not in FINISHED:
        raise _Unusable(f"{STATUS} {status or '(empty)'}: no verdict")
    return status


def _run_json(run_dir: str) -> dict:
    """run.json, an object."""
    try:
        with open(os.path.join(run_dir, RUN_JSON)) as f:
            meta = json.load(f)
        if not isinstance(meta, dict):
            raise ValueError("not an object")
    except FileNotFoundError:
        raise _Unusable(f"{RUN_JSON} missing") from None
    except (OSError, ValueError) as e:
        raise _Unusable(f"{RUN_JSON} unparsable: {e}") from None
    return meta


def _verdicts(run_dir: str, status: str) -> list[dict]:
    """The verdicts of verdicts.json (none for a run that ended in error without it)."""
    verdicts = []
    vpath = os.path.join(run_dir, VERDICTS_JSON)
    if os.path.exists(vpath) or status != "error":
        try:
            with open(vpath) as f:
                verdicts = _verdict_list(json.load(f))
        except FileNotFoundError:
            raise _Unusable(f"{VERDICTS_JSON} missing") from None
        except (OSError, ValueError) as e:
            raise _Unusable(f"{VERDICTS_JSON} unparsable: {e}") from None
        if status in ("pass", "fail", "unknown") and not verdicts:
            raise _Unusable(f"{VERDICTS_JSON} holds no verdict")
    return verdicts


def _history_files(run_dir: str) -> list[list]:
    """The history files: [path, size, torn] each, torn when the last byte is not a newline."""
    hdir = os.path.join(run_dir, HISTORY)
    files = []
    if os.path.isdir(hdir):
        for e in sorted(os.scandir(hdir), key=lambda e: e.name):
            if e.name.endswith(SUFFIX) and e.is_file():
                size = e.stat().st_size
                torn = False
                if size:
                    with open(e.path, "rb") as f:
                        f.seek(size - 1)
                        torn = f.read(1) != b"\n"
                files.append([e.path, size, torn])
    return files


def _run_row(run_dir: str, name: str, status: str, meta: dict, verdicts: list[dict], files: list) -> tuple:
    """The run's row, in the order of schemas.RUNS but for its last two columns (`load` adds them)."""
    cfg = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    schedule = meta.get("schedule", cfg.get("schedule"))
    sched_json = json.dumps(schedule, sort_keys=True, separators=(",", ":"))
    started, finished = _ts(meta.get("started")), _ts(meta.get("finished"))
    dur = meta.get("duration_s")
    if not isinstance(dur, (int, float)):
        dur = (finished - started).total_seconds() if started and finished else None
    n_invalid = sum(1 for v in verdicts if v["status"] == "invalid")
    n_unknown = sum(1 for v in verdicts if v["status"] == "unknown")
    signature = ",".join(f"{v['name']}={v['status']}" for v in sorted(verdicts, key=lambda v: v["name"]))

    def s(k):
        v = meta.get(k, cfg.get(k))
        return None if v is None else str(v)

    return (str(meta.get("run_id") or name), run_dir, s("scenario"), s("protocol"), _int(meta.get("seed", cfg.get("seed"))),
            s("kafka_version"), s("client_library"), s("client_version"), s("backend"), status,
            float(dur) if dur is not None else None, started, finished,
            hashlib.sha256(sched_json.encode()).hexdigest()[:16], sched_json, len(verdicts), n_invalid,
            n_unknown, signature, len(files), s("kind") or "consumer", s("shrink_of"))


def rebalance_time_rows(run_id: str, verdicts: list[dict]) -> list[tuple]:
    """Rows of schemas.REBALANCE_TIMES from `convergence_balance`'s `rebalance_time` measurement (none when the
    run has no such verdict: a Streams or Connect run, or one judged before the measurement existed)."""
    conv = next((v for v in verdicts if v.get("name") == "convergence_balance"), None) or {}
    rt = (conv.get("measurements") or {}).get("rebalance_time")
    if not isinstance(rt, dict):
        return []
    assignors = ",".join(str(a) for a in rt.get("assignors") or ())

    def f(x):
        return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None

    rows = []
    for d in rt.get("disturbances") or ():
        if not isinstance(d, dict):
            continue
        rows.append((run_id, _int(d.get("index")), str(d.get("kind") or "?"), str(d.get("trigger") or "?"),
                     f(d.get("at_s")), f(d.get("settled_s")), f(d.get("settled_s")) is not None,
                     None if d.get("why") is None else str(d["why"]), f(d.get("unowned_sum_s")),
                     f(d.get("unowned_max_s")), _int(d.get("partitions_unowned")), _int(d.get("unowned_open")),
                     None if rt.get("protocol") is None else str(rt["protocol"]), assignors))
    return rows
