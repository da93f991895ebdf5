"""What the brokers said (the `broker` events of history/brokers.jsonl), beside the members' view.

- `expected_refusal`, a checker: the brokers refused the group when, and only when, the scenario expects it.
  A scenario that expects a refusal (CheckSettings.expect_broker, a regular expression: a migration path
  Kafka does not support, say) is valid when a broker's line matches it, with that line as the witness,
  and invalid when none does (unknown without the brokers' logs in the history). Without an expectation
  it is invalid when a group coordinator refused to convert the group or to let a member of the other
  protocol into it (REFUSED: "Cannot upgrade ..." / "Cannot downgrade ..." / "Cannot join the consumer
  group ... with the classic protocol ..."), since the members that asked for it were turned away (a migration under
  `group.consumer.migration.policy=disabled` must not pass), valid when none did, skipped without the
  brokers' logs. A broker whose log could not be read (`broker_log_unread`, harness/cluster/broker_log.py) leaves its
  silence unjudged: `unknown` where it would otherwise decide (no refusal seen, or the expected one not seen).
- `with_broker_context(verdict, history)`: a verdict that is not valid gets the brokers' notable lines
  about the group (warnings, errors, refusals, fencing) nearest its witnesses as further witnesses, and
  the first refusal or error named in its message, so a report shows the broker's reason.
"""
from __future__ import annotations

import re
from dataclasses import replace

from harness.record.history import History
from harness.invariants.core import CheckSettings, Verdict, empty, verdict, witness

NAME = "expected_refusal"
#: a group coordinator refusing to convert a group between protocols, or (Kafka 4.4+, KAFKA-20640) to let a
#: member of the other protocol into it (Kafka 4.x GroupMetadataManager)
REFUSED = re.compile(r"Cannot (upgrade|downgrade) (the )?(classic|consumer) group |"
                     r"Cannot join the (consumer|classic|streams) group \S+ with the \w+ protocol")
#: a broker line worth citing beside a failing verdict even at INFO level
NOTABLE = re.compile(r"Cannot |cannot |refuse|fenced|Fenced|GROUP_ID_NOT_FOUND|UNKNOWN_MEMBER_ID|"
                     r"ILLEGAL_GENERATION|INCONSISTENT_GROUP_PROTOCOL|expired|Exception|failed")
#: how many broker lines a verdict cites at most, and how far from its witnesses (seconds)
MAX_CITED = 4
#: the `why` of a broker line `with_broker_context` appends to a failing verdict: context near its witnesses, not one
#: of them (harness/findings/match.py does not ask it to lie inside a known finding's mark)
BROKER_CONTEXT = "what the broker said about the group near this"
NEAR_S = 30.0


def said(history: History) -> list[dict]:
    """The brokers' lines about the group, in time order."""
    return history.derived("broker_said", lambda: [e for _, e in history.control() if e.get("type") == "broker"])


def unread(history: History) -> list[dict]:
    """The `broker_log_unread` events: brokers whose log file could not be read after the run."""
    return [e for _, e in history.control() if e.get("type") == "broker_log_unread"]


def _unread_said(gone: list[dict]) -> str:
    return "; ".join(f"broker {e.get('broker')}'s log could not be read ({e.get('error')})" for e in gone)


def collected(history: History) -> bool:
    """Whether the history holds the brokers' logs at all (a `broker-log` file, even with no line in it)."""
    return any(h.get("source") == "broker-log" for h in history.headers) or bool(said(history))


def group_of(history: History) -> str | None:
    """The group id the brokers' lines were selected by (the broker-log file's header)."""
    return next((h.get("group_id") for h in history.headers if h.get("source") == "broker-log"), None)


def notable(e: dict, group_id: str | None = None) -> bool:
    """A warning or error, or a group coordinator's line that refuses, fences or expires (the group id, which
    holds the scenario's name, is left out of the match)."""
    if e.get("level") in ("WARN", "ERROR"):
        return True
    msg = e.get("message", "")
    msg = msg.replace(group_id, "") if group_id else msg
    return ".coordinator." in e.get("logger", "") and NOTABLE.search(msg) is not None


def check(history: History, settings: CheckSettings) -> Verdict:
    """Valid when the refusal the scenario expects is in a broker's log; see the module docstring."""
    if (e := empty(NAME, history)) is not None:
        return e
    want = settings.expect_broker
    if not want:
        if not collected(history):
            return verdict(NAME, "skipped", "the history holds no broker log (no file of source broker-log)")
        refused = [e for e in said(history) if REFUSED.search(e.get("message", ""))]
        if refused:
            return verdict(NAME, "invalid", f"the scenario expects no refusal, but broker {refused[0]['broker']} "
                                            f"refused: {refused[0]['message']}",
                           [witness(e, "a refusal the scenario does not expect") for e in refused],
                           {"refusals": len(refused)})
        if gone := unread(history):  # its silence is no answer: a refusal there would not be seen
            return verdict(NAME, "unknown", f"no refusal in the logs that were read, but {_unread_said(gone)}: "
                                            f"a refusal there would not be seen", (),
                           {"refusals": 0, "unread": len(gone)})
        return verdict(NAME, "valid", "no broker refused the group, as the scenario expects", (), {"refusals": 0})
    if not collected(history):
        return verdict(NAME, "unknown", f"the scenario expects the brokers to refuse ({want!r}) but the history "
                                        "holds no broker log (no file of source broker-log)")
    pattern = re.compile(want)
    hits = [e for e in said(history) if pattern.search(e.get("message", ""))]
    if not hits and (gone := unread(history)):
        return verdict(NAME, "unknown", f"the scenario expects the brokers to refuse ({want!r}); no log that was read "
                                        f"says so, but {_unread_said(gone)}", (), {"refusals": 0, "unread": len(gone)})
    if not hits:
        return verdict(NAME, "invalid", f"the scenario expects the brokers to refuse ({want!r}); no broker said so "
                                        f"({len(said(history))} lines about the group)")
    first = hits[0]
    return verdict(NAME, "valid", f"broker {first['broker']} refused as expected: {first['message']}",
                   [witness(e, "the broker's refusal the scenario expects") for e in hits],
                   {"refusals": len(hits)})


def _span(v: Verdict) -> tuple[float, float] | None:
    monos = [w["mono"] for w in v.witnesses if isinstance(w.get("mono"), (int, float)) and w.get("type") != "broker"]
    return (min(monos), max(monos)) if monos else None


def with_broker_context(v: Verdict, history: History) -> Verdict:
    """The verdict with the brokers' notable lines near its witnesses (only when it is invalid or unknown)."""
    if v.status not in ("invalid", "unknown") or v.name == NAME:
        return v
    gid = group_of(history)
    lines = [e for e in said(history) if notable(e, gid)]
    if not lines:
        return v
    span = _span(v)
    if span is not None:
        near = [e for e in lines if span[0] - NEAR_S <= e["mono"] <= span[1] + NEAR_S]
        lines = near or lines
    cited = lines[:MAX_CITED]
    first = cited[0]
    return replace(v, message=f"{v.message}; broker {first['broker']} said: {first['message'][:300]}",
                   witnesses=v.witnesses + tuple(witness(e, BROKER_CONTEXT) for e in cited))
