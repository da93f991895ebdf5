"""The matrix of correct runs: every cell a release the harness claims should pass, run once, and each outcome judged.

Three parts (issue 44, "The matrix of correct runs"):

    clients  member-kill on the newest patch of each confluent-kafka minor from 2.0, and with the Java member on
             kafka-clients 2.4, 2.8, 3.0 and each minor from 3.3 (on the newest Kafka)
    kafka    member-kill, rolling-bounce, static-bounce and scale-out-in on each Kafka minor from 3.3 (`x.y`: its
             newest patch), on each protocol that release runs (the consumer protocol from PROTOCOL_SINCE)
    newest   every built-in scenario once on each protocol it runs, on the newest Kafka (the nightly's own gates:
             a migration only where the brokers run both protocols, a scenario's own release needs)

Each cell is one `harness run` (a process of its own, so a refusal is the CLI's own one line and exit 2), under its
own folder of the runs root, so the matrix resumes: a cell whose run directory has a final STATUS (or whose
refusal was recorded) is not run again. Its outcome is one of

    pass      the run passed
    known     it failed as a known finding, matched on its witnesses (harness/findings/registry.py, as the suite's
              xfail and the nightly decide)
    refused   the plan refused it before anything started (exit 2, no run directory): the reason is kept
    fail, unknown, error, incomplete   none of these: to be settled by a person from its run directory

`matrix.json` in the runs root holds every cell run (with the load average at its start); `table` is its Markdown.
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from harness.base.errors import BadInput
from harness.base.versions import PROTOCOL_SINCE, is_release, newest_major_minor, version_key
from harness.base.vocabulary import CONSUMER_PROTOCOLS
from harness.record.rundir import RunDir

PARTS = ("clients", "kafka", "newest")
#: the scenarios of the `kafka` part, run on every Kafka minor the harness claims
KAFKA_SCENARIOS = ("member-kill", "rolling-bounce", "static-bounce", "scale-out-in")
#: the scenario of the `clients` part
CLIENT_SCENARIO = "member-kill"
#: its protocol: the default one, which every client release runs
CLIENT_PROTOCOL = "classic-cooperative"
#: the oldest Kafka minor the matrix runs (the oldest the README's claim covers)
OLDEST_KAFKA = (3, 3)
#: the oldest confluent-kafka minor (2.0.2: the first with wheels for this Python)
OLDEST_CONFLUENT = (2, 0)
#: the kafka-clients minors before the run of every minor from JAVA_EVERY_MINOR_FROM
JAVA_OLD_MINORS = ((2, 4), (2, 8), (3, 0))
JAVA_EVERY_MINOR_FROM = (3, 3)
#: the newest Kafka, as the resolver names it
NEWEST = "latest"
#: a cell's run longer than this is stopped (its process group) and counted as an error
CELL_TIMEOUT_S = 1500.0
MATRIX_JSON = "matrix.json"
#: the note a refused cell leaves in its folder, so a resumed matrix does not ask again
REFUSED_NOTE = "refused.txt"
FINAL = ("pass", "fail", "unknown")


@dataclass(frozen=True)
class Cell:
    """One run of the matrix: a scenario on one protocol, Kafka version, member kind and client version."""

    part: str
    scenario: str
    protocol: str
    kafka_version: str = NEWEST
    client_version: str | None = None
    member: str = "python"
    backend: str | None = None

    @property
    def id(self) -> str:
        """A name that is also the cell's folder under the runs root."""
        client = f"-{self.member}{self.client_version}" if self.client_version else \
            ("-java" if self.member == "java" else "")
        return f"{self.part}-{self.scenario}-{self.protocol}-kafka{self.kafka_version}{client}"

    def argv(self, *, seed: int, runs_root: Path) -> list[str]:
        """The `harness run` arguments of the cell."""
        a = ["run", self.scenario, "--protocol", self.protocol, "--kafka-version", self.kafka_version,
             "--seed", str(seed), "--runs-root", str(runs_root / self.id), "--quiet"]
        if self.member != "python":
            a += ["--member", self.member]
        if self.client_version:
            a += ["--client-version", self.client_version]
        if self.backend:
            a += ["--backend", self.backend]
        return a


def newest_patches(versions: Iterable[str], *, since: tuple[int, int]) -> dict[tuple[int, int], str]:
    """The newest release of each (major, minor) from `since` on, among `versions` (x.y.z, or x.y.z.postN)."""
    best: dict[tuple[int, int], str] = {}
    for v in versions:
        if not is_release(v, post=True):
            continue
        mm = tuple(version_key(v)[:2])
        if mm >= since and (mm not in best or _full_key(v) > _full_key(best[mm])):
            best[mm] = v  # type: ignore[index]
    return dict(sorted(best.items()))


def _full_key(v: str) -> tuple[int, ...]:
    post = re.search(r"\.post(\d+)$", v)
    return version_key(v) + (int(post.group(1)) if post else -1,)


def java_client_minors(versions: Iterable[str]) -> list[str]:
    """The kafka-clients releases of the matrix: the newest patch of 2.4, 2.8, 3.0 and of each minor from 3.3."""
    newest = newest_patches(versions, since=JAVA_OLD_MINORS[0])
    return [v for mm, v in newest.items() if mm in JAVA_OLD_MINORS or mm >= JAVA_EVERY_MINOR_FROM]


def kafka_minors(versions: Iterable[str]) -> list[str]:
    """The Kafka minors of the matrix (`x.y`, resolved to their newest patch by the run): each from OLDEST_KAFKA."""
    return [f"{a}.{b}" for a, b in newest_patches(versions, since=OLDEST_KAFKA)]


def protocols_on(kafka_version: str) -> list[str]:
    """The consumer-group protocols brokers of that version run (PROTOCOL_SINCE)."""
    newest = newest_major_minor(kafka_version) or (0, 0)
    return [p for p in CONSUMER_PROTOCOLS if newest >= PROTOCOL_SINCE.get(p, (0, 0))]


def client_cells(confluent: Iterable[str], kafka_clients: Iterable[str]) -> list[Cell]:
    """The `clients` part: member-kill on each confluent-kafka minor's newest patch, then on each kafka-clients
    release of java_client_minors with the Java member; on the newest Kafka."""
    py = [Cell("clients", CLIENT_SCENARIO, CLIENT_PROTOCOL, client_version=v)
          for v in newest_patches(confluent, since=OLDEST_CONFLUENT).values()]
    return py + [Cell("clients", CLIENT_SCENARIO, CLIENT_PROTOCOL, client_version=v, member="java")
                 for v in java_client_minors(kafka_clients)]


def kafka_cells(kafka: Iterable[str]) -> list[Cell]:
    """The `kafka` part: KAFKA_SCENARIOS on each Kafka minor, on each protocol it runs."""
    return [Cell("kafka", sc, p, kafka_version=kv)
            for kv in kafka_minors(kafka) for sc in KAFKA_SCENARIOS for p in protocols_on(kv)]


def newest_cells(specs: dict, *, allowed: Callable[[str, str], bool]) -> list[Cell]:
    """The `newest` part: every scenario of `specs` (name -> spec) once on each protocol it names that `allowed`
    (scenario, protocol) lets run on the newest Kafka; a scenario made for the docker backend runs on it."""
    return [Cell("newest", name, p, backend=getattr(sc, "backend", None))
            for name, sc in specs.items() for p in sc.protocols if allowed(name, p)]


def newest_allows(name: str, protocol: str) -> bool:
    """Whether the newest Kafka runs a built-in scenario on that protocol, as the nightly draws it: brokers that run
    the protocol and every protocol its steps move members to, and the scenario's own release needs."""
    from harness.drive.nightly import kafka_since, moved_to
    newest = newest_major_minor(NEWEST) or (0, 0)
    return all(newest >= PROTOCOL_SINCE.get(p, (0, 0)) for p in {protocol} | moved_to(name)) \
        and newest >= kafka_since(name)


def confluent_releases() -> list[str]:
    """The confluent-kafka releases PyPI offers this Python (pip's own index query)."""
    r = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "confluent-kafka"],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r"Available versions:\s*(.+)", r.stdout)
    if r.returncode != 0 or not m:
        raise BadInput(f"could not read confluent-kafka's releases from PyPI: {(r.stderr or r.stdout).strip()[-200:]}")
    return [v.strip() for v in m.group(1).split(",")]


def enumerate_cells(parts: Iterable[str]) -> list[Cell]:
    """Every cell of the parts asked, in the order clients, kafka, newest (release lists looked up as needed)."""
    cells: list[Cell] = []
    parts = set(parts)
    if "clients" in parts:
        from harness.kafka import dist as kafka_dist
        cells += client_cells(confluent_releases(), kafka_dist.published_versions("kafka-clients"))
    if "kafka" in parts:
        from harness.kafka import dist as kafka_dist
        cells += kafka_cells(kafka_dist.published_versions())
    if "newest" in parts:
        from harness.plan.scenarios import SCENARIOS
        cells += newest_cells(SCENARIOS, allowed=newest_allows)
    return cells


# -- judging a cell's outcome

@dataclass
class Outcome:
    """What one cell came to, as matrix.json keeps it."""

    cell: dict
    outcome: str  # pass | known | refused | fail | unknown | error | incomplete
    status: str | None = None  # the run's STATUS (None: no run directory)
    run_dir: str | None = None
    reason: str | None = None  # a refusal's line, an error's reason, or the known finding's id
    invalid: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    seed: int | None = None
    load_at_start: list[float] | None = None
    started: str | None = None
    elapsed_s: float | None = None
    #: the cell's earlier runs (a rerun's first attempt), each as {outcome, run_dir, reason, invalid, unknown, ...}
    earlier: list[dict] = field(default_factory=list)

    @property
    def explained(self) -> bool:
        """Passed, known or refused: a cell nobody has to settle."""
        return self.outcome in ("pass", "known", "refused")


def run_dirs_of(folder: Path) -> list[Path]:
    """The run directories in a cell's folder, oldest first by name."""
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if RunDir.is_run_dir(p)), key=lambda p: p.name)


def judge_run(run_dir: Path, *, known=None) -> tuple[str, str, str | None, list[str], list[str]]:
    """(outcome, status, reason, invalid, unknown) of one run directory: a failure is `known` when a known finding
    matches it on its witnesses (`known`: harness.findings.registry.known by default)."""
    rd = RunDir.open(run_dir)
    status = rd.status()
    if status not in FINAL:
        return status, status, rd.status_reason(), [], []
    verdicts = {n: (v.get("status") if isinstance(v, dict) else v) for n, v in _verdicts(rd).items()}
    invalid = sorted(n for n, s in verdicts.items() if s == "invalid")
    unknown = sorted(n for n, s in verdicts.items() if s == "unknown")
    if status == "pass":
        return "pass", status, None, invalid, unknown
    if known is None:
        from harness.findings.registry import known
    excuse = known(run_dir)
    if excuse is None and (now := _judged_now(run_dir)) is not None:
        excuse = known(run_dir, now)  # today's checkers may name what the recorded verdicts left bare
    if excuse is not None:
        return "known", status, excuse.finding.id, invalid, unknown
    return status, status, None, invalid, unknown


def _judged_now(run_dir: Path) -> dict | None:
    """A failed run's verdicts judged again from its history by today's checkers (None: it cannot be read); only
    for a known finding's match: the cell's outcome is never made better than its run recorded."""
    from harness.invariants import judge
    try:
        return judge(RunDir.open(run_dir).history())
    except Exception:  # noqa: BLE001 - an unreadable history matches nothing; the recorded verdicts stand
        return None


def _verdicts(rd: RunDir) -> dict:
    try:
        return rd.verdicts()
    except (OSError, ValueError):
        return {}


def recorded(cell: Cell, runs_root: Path, *, known=None) -> Outcome | None:
    """The outcome a cell already has in its folder (a run with a final STATUS, or a recorded refusal), or None:
    the cell is to be run."""
    folder = runs_root / cell.id
    if (folder / REFUSED_NOTE).exists():
        return Outcome(asdict(cell), "refused", reason=(folder / REFUSED_NOTE).read_text().strip())
    final = [d for d in run_dirs_of(folder) if RunDir.open(d).status() in FINAL]
    if not final:
        return None
    judged = [(d, *judge_run(d, known=known)) for d in final]
    d, outcome, status, reason, invalid, unknown = judged[-1]
    earlier = [dict(outcome=o, run_dir=str(e), reason=r, invalid=i, unknown=u) for e, o, _, r, i, u in judged[:-1]]
    return Outcome(asdict(cell), outcome, status, str(d), reason, invalid, unknown, earlier=earlier)


# -- running

@dataclass
class Finished:
    """What a cell's process left: its exit code and its stderr's last line."""

    code: int
    last_line: str


def run_cell_process(argv: list[str], *, timeout_s: float = CELL_TIMEOUT_S, log_path: Path | None = None,
                     program: tuple[str, ...] = (sys.executable, "-m", "harness")) -> Finished:
    """`harness run ARGV` (`program` ARGV) in a process group of its own; one past `timeout_s` is stopped (SIGINT,
    then SIGKILL), as is one running when the matrix is interrupted."""
    log = open(log_path, "w") if log_path else subprocess.DEVNULL
    try:
        p = subprocess.Popen([*program, *argv], stdout=log, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
        with _RUNNING_LOCK:
            _RUNNING.add(p)
        try:
            _, err = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(p)
            return Finished(-1, f"stopped after {timeout_s:.0f}s")
        except KeyboardInterrupt:  # the matrix interrupted: its cell's run (a session of its own) stops too
            _stop(p)
            raise
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(p)
    finally:
        if log_path:
            log.close()
    lines = [ln for ln in (err or "").splitlines() if ln.strip()]
    return Finished(p.returncode, lines[-1] if lines else "")


#: the cells' processes running now (each a session of its own): Ctrl-C in the matrix stops every one of them
_RUNNING: set[subprocess.Popen] = set()
_RUNNING_LOCK = threading.Lock()


def stop_running(*, grace_s: float = 60.0) -> None:
    """Stop every cell's run still going, as Ctrl-C would (SIGINT to its process group: its run directory marked
    incomplete), then by SIGKILL after `grace_s`; the threads that wait for them see them end."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for p in running:
        _signal(p, signal.SIGINT)
    deadline = time.monotonic() + grace_s
    while any(p.poll() is None for p in running) and time.monotonic() < deadline:
        time.sleep(0.2)
    for p in running:
        if p.poll() is None:
            _signal(p, signal.SIGKILL)


def _signal(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass  # it ended meanwhile


def _stop(p: subprocess.Popen) -> None:
    """Stop a cell's run as Ctrl-C would (its run directory marked incomplete), then by SIGKILL after 60 s."""
    os.killpg(p.pid, signal.SIGINT)
    try:
        p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()


def cell_seed(seed: int, cell: Cell) -> int:
    """The run seed of a cell: the same for the same matrix seed and cell, whatever else the matrix holds."""
    return random.Random(f"{seed}:{cell.id}").randrange(1 << 31)


def run_one(cell: Cell, *, runs_root: Path, seed: int, run=run_cell_process, known=None) -> Outcome:
    """Run one cell and judge what it left."""
    folder = runs_root / cell.id
    folder.mkdir(parents=True, exist_ok=True)
    s = cell_seed(seed, cell)
    load = [round(x, 2) for x in os.getloadavg()]
    started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    t0 = time.monotonic()
    done = run(cell.argv(seed=s, runs_root=runs_root), log_path=folder / "harness.out")
    elapsed = round(time.monotonic() - t0, 1)
    dirs = run_dirs_of(folder)
    base = dict(seed=s, load_at_start=load, started=started, elapsed_s=elapsed)
    if not dirs:
        if done.code == 2:  # the plan's refusal: one line, before any run directory
            reason = done.last_line.removeprefix("harness: ")
            (folder / REFUSED_NOTE).write_text(reason + "\n")
            return Outcome(asdict(cell), "refused", reason=reason, **base)
        return Outcome(asdict(cell), "error", reason=f"exit {done.code}: {done.last_line}", **base)
    outcome, status, reason, invalid, unknown = judge_run(dirs[-1], known=known)
    if status not in FINAL and not reason:
        reason = f"exit {done.code}: {done.last_line}"
    return Outcome(asdict(cell), outcome, status, str(dirs[-1]), reason, invalid, unknown, **base)


def run_matrix(cells: list[Cell], *, runs_root: Path, seed: int, command: str, run=run_cell_process, known=None,
               stop_at: float | None = None, rerun: bool = False, progress=print, jobs: int = 1) -> list[Outcome]:
    """Run the cells, `jobs` at a time, those already recorded skipped; matrix.json is written (in cell order) after
    each ends. `stop_at` (a time.time()): no cell starts after it. `rerun`: a recorded cell that did not pass, fail
    as a known finding or get refused, with one finished run only, runs once more (a cell suspected of failing
    under the machine's load: its first run stays in `earlier`)."""
    runs_root.mkdir(parents=True, exist_ok=True)
    slots: list[Outcome | None] = []
    lock = threading.Lock()
    previous = _previous(runs_root)

    def save() -> None:
        with lock:
            write_json(runs_root, [o for o in slots if o is not None], seed=seed, command=command, cells=len(cells))

    def one(i: int, cell: Cell, first: Outcome | None) -> None:
        if stop_at is not None and time.time() >= stop_at:
            progress(f"[{i + 1}/{len(cells)}] {cell.id}: not started (stop time reached)")
            return
        again = first is not None
        progress(f"[{i + 1}/{len(cells)}] {cell.id}{' (once more)' if again else ''} "
                 f"(load {os.getloadavg()[0]:.1f}) ...")
        got = run_one(cell, runs_root=runs_root, seed=seed, run=run, known=known)
        if again:
            got.earlier = [{k: v for k, v in asdict(first).items() if k not in ("cell", "earlier")}]
        progress(f"  -> {cell.id}: {describe(got)}")
        slots[i] = got
        save()

    todo = []
    for i, cell in enumerate(cells):
        got = _recorded_with_times(cell, runs_root, previous, known)
        slots.append(got)
        if got is None or (rerun and not got.explained and got.run_dir and not got.earlier):
            todo.append((i, cell, got))
    save()
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        for f in [pool.submit(one, *t) for t in todo]:
            f.result()
    except KeyboardInterrupt:  # Ctrl-C reaches this thread only: no cell starts any more, the running ones stop
        pool.shutdown(wait=False, cancel_futures=True)
        stop_running()
        raise
    pool.shutdown()
    return [o for o in slots if o is not None]


def _recorded_with_times(cell: Cell, runs_root: Path, previous: dict[str, dict], known) -> Outcome | None:
    """A recorded cell's outcome, judged now, with the seed, load and times its run recorded."""
    got = recorded(cell, runs_root, known=known)
    if got is not None and got.load_at_start is None and (was := previous.get(cell.id)):
        got.seed, got.load_at_start, got.started, got.elapsed_s = (was.get(k) for k in (
            "seed", "load_at_start", "started", "elapsed_s"))
        if got.earlier and len(was.get("earlier") or ()) == len(got.earlier):
            got.earlier = was["earlier"]  # with their loads and times
    return got


def _previous(runs_root: Path) -> dict[str, dict]:
    f = runs_root / MATRIX_JSON
    try:
        return {Cell(**o["cell"]).id: o for o in json.loads(f.read_text()).get("outcomes", [])}
    except (OSError, ValueError, TypeError, KeyError):
        return {}


def recorded_seed(runs_root: Path) -> int | None:
    """The seed an earlier matrix in this runs root was run with (None: none)."""
    try:
        return json.loads((runs_root / MATRIX_JSON).read_text()).get("seed")
    except (OSError, ValueError):
        return None


def write_json(runs_root: Path, outcomes: list[Outcome], *, seed: int, command: str, cells: int) -> None:
    """matrix.json: the command, the seed and every outcome so far, beside the counts by part."""
    doc = {"command": command, "seed": seed, "cells_enumerated": cells, "counts": counts(outcomes),
           "outcomes": [asdict(o) for o in outcomes]}
    tmp = runs_root / (MATRIX_JSON + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2))
    tmp.replace(runs_root / MATRIX_JSON)


def describe(o: Outcome) -> str:
    """One line: the outcome and what it rests on."""
    bits = [o.outcome]
    if o.reason:
        bits.append(o.reason)
    bits += [f"{n} invalid" for n in o.invalid] + [f"{n} unknown" for n in o.unknown]
    return ": ".join(bits[:2]) + ("; " + ", ".join(bits[2:]) if len(bits) > 2 else "") + \
        (f" ({o.run_dir})" if o.run_dir else "")


# -- counting

def counts(outcomes: list[Outcome]) -> dict[str, dict]:
    """Per part (and `all`): cells, and how many of each outcome, with the unexplained ones' invalid and unknown
    verdicts by invariant."""
    out: dict[str, dict] = {}
    for key in [*dict.fromkeys(o.cell["part"] for o in outcomes), "all"]:
        mine = [o for o in outcomes if key == "all" or o.cell["part"] == key]
        by = Counter(o.outcome for o in mine)
        invalid = Counter(n for o in mine if not o.explained for n in o.invalid)
        unknown = Counter(n for o in mine if not o.explained for n in o.unknown)
        out[key] = {"cells": len(mine), **{k: by.get(k, 0) for k in ("pass", "known", "refused", "fail", "unknown")},
                    "error": by.get("error", 0) + by.get("incomplete", 0),
                    "invalid_by_invariant": dict(sorted(invalid.items())),
                    "unknown_by_invariant": dict(sorted(unknown.items()))}
    return out


def table(outcomes: list[Outcome]) -> str:
    """The Markdown table of the matrix (a row per part and one for all), then every cell that is not a pass."""
    rows = ["| part | cells | pass | known finding | refused | fail | unknown | error or incomplete | "
            "invalid verdicts (unexplained) | unknown verdicts (unexplained) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for part, c in counts(outcomes).items():
        rows.append(f"| {part} | {c['cells']} | {c['pass']} | {c['known']} | {c['refused']} | {c['fail']} | "
                    f"{c['unknown']} | {c['error']} | " + (", ".join(f"{n} {k}" for n, k in
                                                                  c["invalid_by_invariant"].items()) or "-")
                    + " | " + (", ".join(f"{n} {k}" for n, k in c["unknown_by_invariant"].items()) or "-") + " |")
    notes = [f"- `{Cell(**o.cell).id}`: {describe(o)}" + "".join(
        f"; earlier run: {describe(Outcome(o.cell, **e))}" for e in o.earlier) for o in outcomes
        if o.outcome != "pass" or o.earlier]
    return "\n".join(rows + ([""] + notes if notes else []))


def parse_parts(text: str | None) -> list[str]:
    """'clients,kafka' -> those parts in matrix order; None or 'all': every part."""
    if not text or text == "all":
        return list(PARTS)
    asked = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in asked if p not in PARTS]
    if bad or not asked:
        raise BadInput(f"--part {text!r}: use one or more of {', '.join(PARTS)} (comma-separated), or all")
    return [p for p in PARTS if p in asked]


def parse_stop_at(text: str | None, *, now: datetime | None = None) -> float | None:
    """'HH:MM' (UTC) -> a time.time(): its next coming (tomorrow's when today's has passed); None: no stop time."""
    if not text:
        return None
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", text.strip())
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise BadInput(f"--stop-at {text!r}: use HH:MM, a UTC time of day")
    now = now or datetime.now(timezone.utc)
    at = now.replace(hour=int(m.group(1)), minute=int(m.group(2)), second=0, microsecond=0)
    return (at + timedelta(days=1) if at <= now else at).timestamp()


def command_line(args) -> str:
    """The `harness matrix` command that reruns (resumes) this matrix."""
    bits = ["harness matrix", f"--part {','.join(parse_parts(args.part))}", f"--runs-root {args.runs_root}"]
    return " ".join(bits + ([f"--seed {args.seed}"] if args.seed is not None else []))


def main(args, *, progress=print) -> int:
    """`harness matrix`: list the cells, or run those not yet recorded and print the table. 0 every cell explained
    (pass, known finding or refusal); 1 otherwise."""
    parts = parse_parts(args.part)
    if getattr(args, "jobs", 1) < 1:
        raise BadInput(f"--jobs {args.jobs}: use 1 or more cells at a time")
    stop_at = parse_stop_at(args.stop_at)
    cells = enumerate_cells(parts)
    if args.list:
        for c in cells:
            print(" ".join(["harness", *c.argv(seed=0, runs_root=Path(args.runs_root))]).replace(" --seed 0", ""))
        print(f"{len(cells)} cells")
        return 0
    root = Path(args.runs_root)
    seed = args.seed if args.seed is not None else recorded_seed(root)
    seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
    args.seed = seed
    progress(f"matrix: {len(cells)} cells ({', '.join(parts)}), seed {seed}, runs root {root}")
    outcomes = run_matrix(cells, runs_root=root, seed=seed, command=command_line(args), stop_at=stop_at,
                          rerun=args.rerun_unexplained, progress=progress,
                          jobs=args.jobs)
    print(table(outcomes))
    print(f"\n{len(outcomes)} of {len(cells)} cells recorded; {root / MATRIX_JSON}")
    return 0 if all(o.explained for o in outcomes) and len(outcomes) == len(cells) else 1
