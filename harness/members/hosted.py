"""Hosted members: one Python member process runs several consumers, each its own member (docs/member-contract.md,
"Hosted members"), so that a group of hundreds of members does not need hundreds of interpreters.

`HARNESS_HOSTED` is a JSON list, one object per consumer: `member_id`, `history`, `control`, and optional
`instance_id` and `rack`. Each consumer is a `python_member.Member` with the process's other HARNESS_* settings and
these of its own; each writes its own history file and takes its own control file. Each runs its poll loop in a
thread of its own (librdkafka releases the GIL while it waits). The process's signals act on all of them: SIGTERM
stops every consumer gracefully, SIGUSR1 makes each read its control file (a control names its consumer by the
file it is written to, and its `seq`); a SIGKILL or SIGSTOP of the process kills or freezes every consumer in it.
One consumer alone leaves through the `stop` control (it then closes, as on SIGTERM, while the others go on).
Imports only the standard library (the member is given in), so it runs under an isolated client install.
"""
from __future__ import annotations

import json
import signal
import threading

#: the keys of each consumer's entry in HARNESS_HOSTED, and the HARNESS_* variable each stands for
ENTRY_VARS = {"member_id": "HARNESS_MEMBER_ID", "history": "HARNESS_HISTORY", "control": "HARNESS_CONTROL",
              "instance_id": "HARNESS_INSTANCE_ID", "rack": "HARNESS_RACK"}


def hosted_envs(env: dict) -> list[dict]:
    """Each hosted consumer's environment: the process's, with its own entry's values; exits with one line when
    HARNESS_HOSTED is not a non-empty list of entries with `member_id` and `history`."""
    try:
        entries = json.loads(env["HARNESS_HOSTED"])
    except ValueError as e:
        raise SystemExit(f"member: HARNESS_HOSTED is not JSON: {e}") from None
    if not isinstance(entries, list) or not entries or not all(
            isinstance(x, dict) and x.get("member_id") and x.get("history") for x in entries):
        raise SystemExit("member: HARNESS_HOSTED must be a non-empty list of {member_id, history, ...} objects")
    if len({x["member_id"] for x in entries}) < len(entries):
        raise SystemExit("member: HARNESS_HOSTED names a member twice")
    return [{**env, **{var: str(x.get(key) or "") for key, var in ENTRY_VARS.items()}} for x in entries]


def run_hosted(env: dict, member_class) -> int:
    """Run every consumer of HARNESS_HOSTED in its own thread until each stopped; 0 when every one ended cleanly."""
    members = [member_class(e) for e in hosted_envs(env)]

    def stop(*_):
        for m in members:
            m.running = False

    def control(*_):
        for m in members:
            m.control_pending = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGUSR1, control)
    codes: dict[str, object] = {}

    def one(m) -> None:
        try:
            codes[m.member_id] = m.loop()
        except BaseException as e:  # noqa: BLE001 - one consumer's end is its own; the process says so at exit
            codes[m.member_id] = e
            raise

    threads = [threading.Thread(target=one, args=(m,), name=m.member_id, daemon=True) for m in members]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):  # the main thread keeps taking signals
        for t in threads:
            t.join(0.2)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # every consumer ended: a late SIGTERM must not turn the exit
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # into a death by signal (-15, read as a crash)
    bad = {k: v for k, v in codes.items() if v != 0}
    for k, v in sorted(bad.items()):
        print(f"member {k}: ended with {v!r}", flush=True)
    return 1 if bad or len(codes) < len(members) else 0
