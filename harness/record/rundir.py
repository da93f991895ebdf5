"""The run directory: the unit of record, and the one module that knows its layout (docs/run-directory.md).

Everything that writes or reads a run directory goes through here: the runner, `harness check`,
replay, nightly, the Allure attachments and the analytics job's reader. It also owns the one rule that
turns verdicts into a status and a status into an exit code.

    <run>/STATUS          incomplete | pass | fail | unknown | error (a second line may say why)
    <run>/run.json        run metadata: config, versions, settings, seed, schedule, status
    <run>/schedule.json   the schedule this run ran, for replay
    <run>/history/        the history (docs/history.md): harness.jsonl, producer.jsonl, member-<id>.jsonl,
                          brokers.jsonl, output.jsonl; control-<id>.json, the live members' control files
    <run>/logs/           member logs (member-<id>.log), harness-error.txt
    <run>/cluster/        broker logs (broker-<id>/broker.log), toxiproxy.log and data when the run had a
                          cluster of its own
    <run>/verdicts.json   one entry per invariant
    <run>/timeline.svg    the ownership timeline chart, drawn after judging
    <run>/shrunk-schedule.json  a failing nightly run's shortest schedule that still fails
    <run>/state/          Kafka Streams runs: each slot's state directory and the start gate
    <run>/connect/        Kafka Connect runs: each slot's worker properties

No other module spells these names (tests/unit/test_rundir_names.py holds that line); the file and
directory names are the constants below, the per-member and per-broker ones the functions.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from harness.base.errors import BadInput, HistoryNotWhole
from harness.base.steps import planned
from harness.record.format import SUFFIX

STATUS = "STATUS"
RUN_JSON = "run.json"
SCHEDULE_JSON = "schedule.json"
VERDICTS_JSON = "verdicts.json"
HISTORY = "history"
LOGS = "logs"
CLUSTER = "cluster"
TIMELINE = "timeline.svg"
SHRUNK_SCHEDULE_JSON = "shrunk-schedule.json"
STREAMS_STATE = "state"
CONNECT_CONFIG = "connect"
#: the history files the harness writes (a member's is member_history's)
HARNESS_HISTORY = "harness" + SUFFIX
PRODUCER_HISTORY = "producer" + SUFFIX
BROKERS_HISTORY = "brokers" + SUFFIX
OUTPUT_HISTORY = "output" + SUFFIX
HARNESS_ERROR = "harness-error.txt"
#: in the cluster's directory (the run's cluster/, or a shared cluster's own): what the report attaches
BROKER_LOG = "broker.log"
TOXIPROXY_LOG = "toxiproxy.log"


def member_history(history_dir: Path, member_id: str) -> Path:
    """A member's history file: HARNESS_HISTORY of the member contract."""
    return Path(history_dir) / f"member-{member_id}{SUFFIX}"


def member_histories(history_dir: Path) -> list[Path]:
    """Every member's history file in a history directory, by name."""
    return sorted(Path(history_dir).glob(member_history(Path(), "*").name))


def member_control(history_dir: Path, member_id: str) -> Path:
    """A member's control file: HARNESS_CONTROL of the member contract."""
    return Path(history_dir) / f"control-{member_id}.json"


def member_log(logs_dir: Path, member_id: str) -> Path:
    """A member's stdout and stderr."""
    return Path(logs_dir) / f"member-{member_id}.log"


def broker_dir(cluster_dir: Path, broker_id: int | str) -> Path:
    """One broker's directory in a cluster's directory: its BROKER_LOG, configuration and data."""
    return Path(cluster_dir) / f"broker-{broker_id}"


def broker_logs(cluster_dir: Path) -> list[Path]:
    """Every broker's log in a cluster's directory, in the order of their directories' names."""
    return sorted(Path(cluster_dir).glob(str(broker_dir(Path(), "*") / BROKER_LOG)))

#: every STATUS value, and the CLI's exit code for it
EXIT_CODES = {"pass": 0, "fail": 1, "unknown": 1, "error": 2, "incomplete": 2}


def status_of(verdict_statuses) -> str:
    """The run's status from its verdicts' statuses: fail on any invalid; pass when none is unknown and at least
    one is valid (the rest `skipped`: each one the plan said does not apply, as `invariants.judge` decides it);
    else unknown. No verdict at all, or only skips, is unknown: an unjudged run is never a pass."""
    statuses = set(verdict_statuses)
    if "invalid" in statuses:
        return "fail"
    return "pass" if "valid" in statuses and statuses <= {"valid", "skipped"} else "unknown"


#: the run-level invariant that each step of the schedule happened (harness/invariants/performed.py)
SCHEDULE_PERFORMED = "schedule_performed"


def did_not_exercise(status: str, verdicts: dict) -> bool:
    """Whether an unknown run is one that did not exercise its scenario: a step of its schedule did not happen
    (its `schedule_performed` is unknown). Repeats and nightly count such runs apart, never as passes. `verdicts`:
    name -> Verdict, or verdicts.json's dicts."""
    v = (verdicts or {}).get(SCHEDULE_PERFORMED)
    return status == "unknown" and (getattr(v, "status", None) or (v or {}).get("status")) == "unknown"


def exit_code(status: str) -> int:
    """The exit code of a run with this status (2 for anything not judged)."""
    return EXIT_CODES.get(status, 2)


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass
class RunResult:
    """What a run ended with: its directory, status, verdicts (name -> Verdict) and any error."""

    run_dir: Path
    status: str
    verdicts: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def exit_code(self) -> int:
        return exit_code(self.status)


class RunDir:
    """One run directory. `create` makes a new one (STATUS incomplete from the first moment); `open`
    checks an existing one and refuses anything else with one line."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    # -- making and finding
    @classmethod
    def create(cls, runs_root: str | os.PathLike, name: str) -> "RunDir":
        """A new, unique run directory under runs_root, marked incomplete."""
        root = Path(runs_root)
        path, n = root / name, 1
        while path.exists():
            n += 1
            path = root / f"{name}-{n}"
        path.mkdir(parents=True)
        d = cls(path)
        d.history_dir.mkdir()
        d.logs_dir.mkdir()
        d.set_status("incomplete")
        return d

    @classmethod
    def open(cls, path: str | os.PathLike) -> "RunDir":
        """An existing run directory; BadInput when path is not one."""
        p = Path(path)
        if not p.is_dir():
            raise BadInput(f"{path} is not a run directory (no such directory)")
        if not (p / RUN_JSON).is_file() or not (p / HISTORY).is_dir():
            raise BadInput(f"{path} is not a run directory (it needs {RUN_JSON} and {HISTORY}/; "
                           "see docs/run-directory.md)")
        return cls(p)

    @staticmethod
    def is_run_dir(path: str | os.PathLike) -> bool:
        p = Path(path)
        return (p / RUN_JSON).is_file() and (p / HISTORY).is_dir()

    # -- places
    @property
    def name(self) -> str:
        return self.path.name

    @property
    def history_dir(self) -> Path:
        return self.path / HISTORY

    @property
    def logs_dir(self) -> Path:
        return self.path / LOGS

    @property
    def timeline_path(self) -> Path:
        return self.path / TIMELINE

    @property
    def cluster_dir(self) -> Path:
        """Where the run's own cluster keeps its brokers' logs and data."""
        return self.path / CLUSTER

    @property
    def state_dir(self) -> Path:
        """A Kafka Streams run's state directories and start gate."""
        return self.path / STREAMS_STATE

    @property
    def connect_dir(self) -> Path:
        """A Kafka Connect run's worker properties."""
        return self.path / CONNECT_CONFIG

    @property
    def error_path(self) -> Path:
        return self.logs_dir / HARNESS_ERROR

    def history_file(self, name: str) -> Path:
        """One of the harness's history files: HARNESS_HISTORY, PRODUCER_HISTORY, BROKERS_HISTORY, OUTPUT_HISTORY."""
        return self.history_dir / name

    def __fspath__(self) -> str:
        return str(self.path)

    # -- writing (each file replaced atomically)
    def write_json(self, name: str, obj) -> None:
        tmp = self.path / (name + ".tmp")
        tmp.write_text(json.dumps(obj, indent=2, default=str))
        tmp.replace(self.path / name)

    def set_status(self, status: str, reason: str | None = None) -> None:
        if status not in EXIT_CODES:
            raise ValueError(f"unknown run status {status!r}")
        tmp = self.path / (STATUS + ".tmp")
        tmp.write_text(status + ("\n" + reason if reason else "") + "\n")
        tmp.replace(self.path / STATUS)

    def write_meta(self, meta: dict) -> None:
        self.write_json(RUN_JSON, meta)

    def write_schedule(self, schedule: list) -> None:
        self.write_json(SCHEDULE_JSON, schedule)

    def write_shrunk_schedule(self, schedule: list) -> Path:
        self.write_json(SHRUNK_SCHEDULE_JSON, schedule)
        return self.path / SHRUNK_SCHEDULE_JSON

    def write_error(self, text: str) -> Path:
        p = self.error_path
        p.write_text(text)
        return p

    def write_verdicts(self, verdicts: dict) -> str:
        """verdicts.json from name -> Verdict; returns the run's status."""
        self.write_json(VERDICTS_JSON, {k: v.to_dict() for k, v in verdicts.items()})
        return status_of(v.status for v in verdicts.values())

    # -- reading
    def status(self) -> str:
        try:
            return (self.path / STATUS).read_text().split("\n", 1)[0].strip() or "incomplete"
        except FileNotFoundError:
            return "incomplete"

    def status_reason(self) -> str | None:
        """The second line of STATUS (why a run ended `error` or `incomplete`), or None."""
        try:
            lines = (self.path / STATUS).read_text().strip().split("\n", 1)
        except FileNotFoundError:
            return None
        return lines[1].strip() if len(lines) > 1 and lines[1].strip() else None

    def meta(self) -> dict:
        try:
            return json.loads((self.path / RUN_JSON).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise BadInput(f"{self.path}: {RUN_JSON} cannot be read: {e}") from None

    def verdicts(self) -> dict:
        p = self.path / VERDICTS_JSON
        return json.loads(p.read_text()) if p.exists() else {}

    def _plan_of_older(self, h) -> None:
        """A run recorded before run_start carried its plan: the schedule its run.json recorded beside the history is
        its plan (`plan_source`), so that a step whose lines are gone from the history's end is seen."""
        start = h.run_start()
        if start is None or "plan" in start or not (self.path / RUN_JSON).is_file():
            return
        try:
            schedule = json.loads((self.path / RUN_JSON).read_text()).get("schedule")
        except (OSError, ValueError, AttributeError):
            return  # no schedule to read: judged on the steps the history shows, as the checker says
        if isinstance(schedule, list) and all(isinstance(a, dict) and isinstance(a.get("kind"), str) for a in schedule):
            start["plan"], start["plan_source"] = planned(schedule), RUN_JSON

    def history(self):
        """The run's history (harness.record.history.History), whole (harness/record/intact.py): else BadInput
        naming the file, and the run is not judged."""
        from harness.record import intact
        from harness.record.history import History, HistoryFormatError
        try:
            intact.check_files(self.history_dir, harness_file=HARNESS_HISTORY)  # a FIFO is refused, never read
            h = History.load(self.history_dir, strict=True)
            intact.check_whole(self.history_dir, [e for _, e in h.control()],
                               acked=h.bulk("acked").n + len(h.of_type("acked_unplaced")),
                               producer_file=PRODUCER_HISTORY, member_file=member_history)
            intact.check_partitions(h)
            self._plan_of_older(h)
            return h
        except HistoryFormatError as e:  # HistoryIncomplete too: torn, missing, cut, malformed
            said = "" if "incomplete" in str(e) else ": the history cannot be read, the run is incomplete"
            raise HistoryNotWhole(f"{self.path}: {e}{said}") from None
        except OSError as e:
            raise HistoryNotWhole(f"{self.path}: the history cannot be read, the run is incomplete: {e}") from None
