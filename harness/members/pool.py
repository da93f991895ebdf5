"""Member processes: spawn through the member contract, stop gracefully, kill, pause and resume."""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.base.errors import Indeterminate, SetupError
from harness.record.history import HistoryFormatError
from harness.record.intact import file_totals
from harness.record.tail import HistoryTail
from harness.base.procs import Proc
from harness.members import clients
from harness.base.vocabulary import DEFAULT_COMMIT_MODE
from harness.record.rundir import member_control, member_history, member_log

#: a control file's fields that say how to apply another control rather than being one (docs/member-contract.md)
QUALIFIES = {"subscribe_by": "subscription"}

MEMBER_SCRIPT = clients.MEMBER_SCRIPT


@dataclass(frozen=True)
class MemberSpec:
    """What to start: a protocol, optional static id and rack, and which program speaks the contract."""

    protocol: str
    instance_id: str | None = None
    rack: str | None = None
    client_path: str | None = None  # an isolated confluent-kafka install, first on PYTHONPATH
    command: tuple[str, ...] | None = None  # any program speaking the member contract; default: harness/members/python_member.py
    misbehave: str | None = None
    client_config: dict = field(default_factory=dict)
    topics: tuple[str, ...] = ()  # the subscription: topic names and ^regexes (none: the pool's topic)
    commit_mode: str = DEFAULT_COMMIT_MODE  # HARNESS_COMMIT_MODE: one of COMMIT_MODES (docs/member-contract.md)
    processing_ms: float = 0.0  # HARNESS_PROCESSING_MS: simulated work per record (docs/member-contract.md)
    revoke_delay_ms: float = 0.0  # HARNESS_REVOKE_DELAY_MS: the revoke handler's wait before its commit
    start_wait_s: float | None = None  # how long it has to write `started` (None: START_WAIT_S)
    env: dict = field(default_factory=dict)  # more HARNESS_* variables of its kind (share members: HARNESS_SHARE_*)


def _last_line(path: Path, limit: int = 300) -> str:
    """The last non-blank line of a member's log (what it said when it exited), shortened."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            lines = [ln.strip() for ln in f.read().decode(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:limit] if lines else ""


class MemberProcess:
    """One running member process and where its history goes."""

    def __init__(self, member_id: str, spec: MemberSpec, proc: Proc, history: Path) -> None:
        self.member_id = member_id
        self.spec = spec
        self.proc = proc
        self.history = history
        self.exited = False
        self.exit_how: str | None = None  # how its life ended, as its `member_exit` says (graceful, kill, crash)
        self.exit_code: int | None = None
        self.started: dict = {}  # its `started` event: its pid and the controls it takes, among others
        self.header: dict = {}  # its history's header line
        self.control_path = member_control(history.parent, member_id)
        self.control_seq = 0
        #: a hosted member: every member of its process (itself too), which share its fate on a kill or a pause
        self.hosts: list[MemberProcess] = [self]

    @property
    def pid(self) -> int:
        return self.proc.pid


class MemberPool:
    """Starts members with unique ids and records their lives in the harness history."""

    def __init__(self, *, bootstrap: str, group_id: str, topic: str, history_dir: Path, log_dir: Path,
                 on_event, merge_settings, client_config: dict | None = None) -> None:
        """`merge_settings(protocol, timings, given, client_version)` is the plan's one settings merge
        (`harness.plan.kinds.settings.client_settings`), handed in: the members do not reach up into the plan."""
        self.bootstrap = bootstrap
        self.merge_settings = merge_settings
        self.group_id = group_id
        self.topic = topic
        self.history_dir = history_dir
        self.log_dir = log_dir
        self.on_event = on_event
        self.client_config = client_config or {}
        self.members: dict[str, MemberProcess] = {}
        self._n = 0

    def live(self) -> list[MemberProcess]:
        return [m for m in self.members.values() if not m.exited]

    #: how long a member has to write its `started` event (docs/member-contract.md)
    START_WAIT_S = 30.0

    def start(self, spec: MemberSpec, *, wait_s: float = START_WAIT_S) -> MemberProcess:
        """Spawn a member and wait for its `started` event."""
        return self.start_hosted([spec], wait_s=wait_s)[0]

    def start_hosted(self, specs: list[MemberSpec], *, wait_s: float = START_WAIT_S) -> list[MemberProcess]:
        """Spawn one member process that hosts a member per spec (one spec: an ordinary member; more: the Python
        member's hosted mode, `harness/members/hosted.py`: the specs may differ only in static id and rack) and
        wait for each one's `started` event."""
        first = specs[0]
        if len(specs) > 1 and (first.command is not None or first.misbehave or any(
                replace(s, instance_id=None, rack=None) != replace(first, instance_id=None, rack=None) for s in specs)):
            raise SetupError("hosted members run the Python member, with one protocol, subscription and client "
                             "settings: only their static ids and racks may differ")
        ids = []
        for _ in specs:
            self._n += 1
            ids.append(f"m{self._n}")
        env = self._env(first, ids[0])
        if len(specs) > 1:
            env["HARNESS_HOSTED"] = json.dumps([
                {"member_id": i, "history": str(member_history(self.history_dir, i)),
                 "control": str(member_control(self.history_dir, i)), "instance_id": s.instance_id or "",
                 "rack": s.rack or ""} for i, s in zip(ids, specs)])
        cmd = list(first.command) if first.command else [sys.executable, str(MEMBER_SCRIPT)]
        proc = Proc.spawn(cmd, log_path=member_log(self.log_dir, ids[0]), name=ids[0], env=env)
        ms = []
        for member_id, spec in zip(ids, specs):
            self.on_event("member_start", member=member_id, pid=proc.pid, instance_id=spec.instance_id,
                          rack=spec.rack, misbehave=spec.misbehave,
                          **({"program": list(spec.command)} if spec.command else {}))
            m = MemberProcess(member_id, spec, proc, member_history(self.history_dir, member_id))
            self.members[member_id] = m
            ms.append(m)
        for m in ms:
            m.hosts = ms
        for m in ms:
            self._wait_started(m, first.start_wait_s or wait_s)
        return ms

    def _env(self, spec: MemberSpec, member_id: str) -> dict:
        """The member contract's environment of a member process (docs/member-contract.md)."""
        history = member_history(self.history_dir, member_id)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
        env.update({
            "HARNESS_BOOTSTRAP": self.bootstrap, "HARNESS_GROUP_ID": self.group_id,
            "HARNESS_TOPIC": (spec.topics or (self.topic,))[0], "HARNESS_TOPICS": ",".join(spec.topics or (self.topic,)),
            "HARNESS_MEMBER_ID": member_id, "HARNESS_HISTORY": str(history), "HARNESS_PROTOCOL": spec.protocol,
            "HARNESS_INSTANCE_ID": spec.instance_id or "", "HARNESS_RACK": spec.rack or "",
            "HARNESS_CLIENT_CONFIG": json.dumps(self.merge_settings(spec.protocol, self.client_config, spec.client_config,
                                                                    clients.version_at(spec.client_path))),
            "HARNESS_MISBEHAVE": spec.misbehave or "", "HARNESS_COMMIT_MODE": spec.commit_mode,
            "HARNESS_PROCESSING_MS": f"{spec.processing_ms:g}", "HARNESS_REVOKE_DELAY_MS": f"{spec.revoke_delay_ms:g}",
            "HARNESS_CONTROL": str(member_control(self.history_dir, member_id)),
            **spec.env,
        })
        if spec.client_path:
            env["PYTHONPATH"] = os.pathsep.join([spec.client_path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        return env

    def _wait_started(self, m: MemberProcess, wait_s: float) -> None:
        """Until the member's history holds a `started` event, parsed as JSON (any spacing a writer uses)."""
        deadline = time.monotonic() + wait_s
        tail = HistoryTail(m.history)
        while time.monotonic() < deadline:
            try:
                started = next((e for e in tail.new_events() if e.get("type") == "started"), None)
                if started is not None:
                    m.started, m.header = started, tail.header
                    return
            except HistoryFormatError as e:
                raise SetupError(f"member {m.member_id} writes no valid history: {e}") from None
            if not m.proc.alive():
                self._exited(m, "crash", m.proc.popen.returncode)
                why = _last_line(m.proc.log_path)
                raise SetupError(f"member {m.member_id} exited at start with code {m.proc.popen.returncode}"
                                 f"{': ' + why if why else ''} (see {m.proc.log_path})")
            time.sleep(0.05)
        raise SetupError(f"member {m.member_id} did not start within {wait_s}s (see {m.proc.log_path})")

    def _exited(self, m: MemberProcess, how: str, code: int | None) -> None:
        """Record a member's end once: how, its exit code, and its history file's totals now that its writer is done
        (`history_bytes`, `history_lines`: a file cut or deleted later is seen, docs/history.md "Totals")."""
        if not m.exited:
            m.exited, m.exit_how, m.exit_code = True, how, code
            try:
                totals = file_totals(m.history)
            except OSError:  # no file: the member never wrote one; the check says it is missing
                totals = {}
            self.on_event("member_exit", member=m.member_id, how=how, code=code, **totals)

    def stop(self, m: MemberProcess, *, timeout_s: float = 30.0) -> None:
        """Graceful stop: SIGTERM, the member leaves the group and exits. A hosted member whose process hosts
        other live members leaves alone: the `stop` control, then its `stopped` event ends its life."""
        others = [x for x in m.hosts if x is not m and not x.exited]
        if others and not m.exited:
            self.on_event("member_stop", member=m.member_id)
            tail = HistoryTail.from_now(m.history, m.header)
            self.control(m, stop=True)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and m.proc.alive():
                if any(e.get("type") == "stopped" for e in tail.new_events()):
                    self._exited(m, "graceful", 0)
                    return
                time.sleep(0.05)
            self.kill(m)  # it did not leave: its whole process goes, as a kill says
            raise Indeterminate(f"hosted member {m.member_id} did not stop within {timeout_s}s of its stop control")
        for x in [x for x in m.hosts if not x.exited and x is not m] + [m]:
            if not x.exited:
                self.on_event("member_stop", member=x.member_id)
        rc = m.proc.terminate_and_wait(timeout_s=timeout_s)
        for x in m.hosts:
            self._exited(x, "graceful" if rc == 0 else "crash", rc)

    def kill(self, m: MemberProcess) -> None:
        """SIGKILL; the exit is recorded once the signal is sent, for every member of the process (a hosted
        member's process hosts others: they die with it). Recorded after the signal, not before: a member event
        stamped after the recorded exit would read as a dead member acting (a loaded machine can hold the harness
        between the two for tens of milliseconds)."""
        m.proc.kill()
        for x in m.hosts:
            self._exited(x, "kill", -9)

    #: how long a member has to answer a control (docs/member-contract.md, "Controls")
    CONTROL_WAIT_S = 15.0

    def control(self, m: MemberProcess, *, wait_s: float = CONTROL_WAIT_S, **change) -> dict:
        """Ask a live member to change how it runs: write the change (with a new `seq`) to its control file,
        send SIGUSR1 to the process that wrote `started`, wait for its `control` event of that seq (returned).
        Indeterminate when the member does not take such a control or does not answer."""
        takes = set(m.started.get("controls") or ())
        asked = {QUALIFIES.get(k, k) for k in change}
        if not asked <= takes:
            raise Indeterminate(f"member {m.member_id} does not take the {', '.join(sorted(asked - takes))} "
                                f"control (its `started` event lists {sorted(takes) or 'none'}; docs/member-contract.md)")
        m.control_seq += 1
        tmp = m.control_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"seq": m.control_seq, **change}))
        os.replace(tmp, m.control_path)
        tail = HistoryTail.from_now(m.history, m.header)
        try:
            os.kill(int(m.started.get("pid") or m.pid), signal.SIGUSR1)
        except ProcessLookupError:
            raise Indeterminate(f"member {m.member_id} is gone: it cannot take a control") from None
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            done = next((e for e in tail.new_events() if e.get("type") == "control"
                         and e.get("seq") == m.control_seq), None)
            if done is not None:
                return done
            time.sleep(0.02)
        raise Indeterminate(f"member {m.member_id} did not answer control {m.control_seq} {change} within {wait_s}s")

    def pause(self, m: MemberProcess) -> None:
        if len(m.hosts) > 1:  # the plan refuses it first (harness/plan/config.py): SIGSTOP would freeze every host
            raise Indeterminate(f"member {m.member_id} is hosted with others: a pause would freeze them all")
        m.proc.pause()

    def resume(self, m: MemberProcess) -> None:
        m.proc.resume()

    def reap(self) -> list[MemberProcess]:
        """Record members that exited on their own; returns them."""
        gone = []
        for m in self.live():
            if not m.proc.alive():
                self._exited(m, "crash", m.proc.popen.returncode)
                gone.append(m)
        return gone

    def stop_all(self) -> None:
        """Every live member stops: one process after another, but the hosting processes all at once (stop_many)."""
        hosted = [m for m in self.live() if len(m.hosts) > 1]
        if hosted:
            self.stop_many(hosted)
        for m in self.live():
            self.stop(m)

    def stop_many(self, ms: list[MemberProcess], *, timeout_s: float = 30.0) -> None:
        """Graceful stops of several members at once: every stop begins (SIGTERM to a process all of whose live
        members go, the `stop` control to a hosted member whose process keeps others), then each is waited for."""
        go = {x.member_id for x in ms if not x.exited}
        whole, alone = {}, []
        for x in ms:
            if x.exited:
                continue
            if all(h.member_id in go or h.exited for h in x.hosts):
                whole.setdefault(id(x.proc), x)
            else:
                alone.append(x)
        for x in whole.values():
            for h in x.hosts:
                if not h.exited:
                    self.on_event("member_stop", member=h.member_id)
            x.proc.signal(signal.SIGTERM)
        for x in alone:  # one at a time: each waits for its `stopped` event (the others' processes are already told)
            self.stop(x, timeout_s=timeout_s)
        for x in whole.values():
            rc = x.proc.terminate_and_wait(timeout_s=timeout_s, signalled=True)  # told above, once
            for h in x.hosts:
                self._exited(h, "graceful" if rc == 0 else "crash", rc)

    def kill_all(self) -> None:
        for m in self.live():
            self.kill(m)
