"""The plan's checks of a schedule's request faults (harness/plan/actions.py, harness/nemesis/requests.py), before
anything starts: every one a single BadInput line naming the step.

An API by a name the protocol has, an error by a name Kafka has and an API the proxy can answer with it (with a
`partition`: one of the APIs whose answers have per-partition errors at every version kio knows, checked on the
response schema, and an error a broker puts in such an entry: harness.kproxy.partition_errors), a
`slot`/`until_slot` that is a member slot, a `broker` the cluster has, a rule the proxy would take (a positive
count, duration and timeout, a delay range lo <= hi, `then` stall or pass), and a shared cluster that was
started with the request proxy. Pure but for the cluster object it is given (its `kproxy` attribute).
"""
from __future__ import annotations

import difflib

from harness.base.steps import REQUEST_STEPS
from harness.plan.actions import ACTIONS, needs_requests
from harness.plan.backends import ABILITIES
from harness.base.errors import BadInput
from harness.kproxy import rules
from harness.kproxy.answers import Unanswerable, check_answerable, kio_versions
from harness.kproxy.partition_errors import schema_has_partition_errors
from harness.kproxy.wire import API_KEYS
from harness.base.steps import Step

_BUILD = {Step.DELAY_REQUEST: rules.delay_request, Step.HOLD_REQUEST: rules.hold_request,
          Step.DROP_REQUEST: rules.drop_request, Step.DROP_RESPONSE: rules.drop_response,
          Step.ERROR_RESPONSE: rules.error_response, Step.DISCONNECT: rules.disconnect}
#: the parameters of a step that are not the rule's own
_OURS = ("slot", "broker", "until_api", "until_slot", "until_step", "wait_s")


#: the APIs a rebalancing race is mostly about, named in a refusal of a name Kafka does not have
GROUP_APIS = ("JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit", "OffsetFetch",
              "ConsumerGroupHeartbeat", "StreamsGroupHeartbeat", "ShareGroupHeartbeat", "Fetch", "FindCoordinator",
              "Metadata")


def _api(name) -> str | None:
    """Why `name` is no Kafka API (the close names, else the group APIs), or None."""
    if name in API_KEYS:
        return None
    close = difflib.get_close_matches(str(name), list(API_KEYS), n=2)
    return (f"unknown Kafka API {name!r}; " + (f"did you mean {' or '.join(close)}?" if close else
            f"names as in the protocol: {', '.join(GROUP_APIS)}, ... (any API Kafka has)"))


def _slot(v, *, word: str, name: str) -> str | None:
    if v == word or (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
        return None
    return f"{name} is a member slot (0 or more) or \"{word}\", not {v!r}"


def _why(a, *, brokers: int) -> str | None:
    """Why one request-fault step cannot work, or None."""
    p = {q.name: q.default for q in ACTIONS[a.kind].params if not q.required} | dict(a.params)  # as performed
    if why := _api(p.get("api")) or (p.get("until_api") is not None and _api(p["until_api"])):
        return why
    why = _slot(p.get("slot", "all"), word="all", name="slot")
    b = p.get("broker", "all")
    if why is None and b != "all" and not (isinstance(b, int) and not isinstance(b, bool) and 1 <= b <= brokers):
        why = f"broker is 1 to {brokers} (the cluster's brokers) or \"all\", not {b!r}"
    if why is None and (p.get("wait_s") is not None and p["wait_s"] < 0):
        why = f"wait_s is 0 or more, not {p['wait_s']!r}"
    if why is None and a.kind == Step.HOLD_REQUEST:
        why = _slot(p.get("until_slot", "other"), word="other", name="until_slot")
        if why is None and p.get("until_step") is not None and (not isinstance(p["until_step"], int)
                                                                or p["until_step"] < 1):
            why = f"until_step counts steps after this one (1: the next), not {p['until_step']!r}"
        if why is None and p.get("until_api") is not None:
            why = _rule_error(lambda: rules.Seen(p["until_api"]))
    if why is None:
        kw = {k: v for k, v in p.items() if k not in _OURS}
        if isinstance(kw.get("delay_s"), list):
            kw["delay_s"] = tuple(kw["delay_s"])
        why = _rule_error(lambda: _BUILD[a.kind](**kw))
    if why is None and a.kind == Step.ERROR_RESPONSE:
        why = _rule_error(lambda: check_answerable(rules.api_key_of(p["api"]), None))
    if why is None and a.kind == Step.ERROR_RESPONSE and p.get("partition") is not None:
        why = _partition_entries(p["api"])
    return why


def _partition_entries(api: str) -> str | None:
    """Why `api`'s answers cannot carry an error in one partition's entry at some version kio knows, or None."""
    key = rules.api_key_of(api)
    lacking = [v for v in kio_versions(key) if not schema_has_partition_errors(key, v)]
    return (f"error_response with a partition: {api}'s answer has no partition entry with an error code at "
            f"v{', v'.join(map(str, lacking))}") if lacking else None


def _rule_error(build) -> str | None:
    try:
        build()
    except (Unanswerable, ValueError, TypeError) as e:
        return str(e)
    return None


def check_backend(sc, backend: str) -> None:
    """Refuse (BadInput) a scenario whose steps put faults on requests on a backend without the request proxy,
    before any backend is asked to start (the plan's later check of every step says the same of a schedule)."""
    lacking = sc.needs - ABILITIES.get(backend, sc.needs)
    if "requests" in lacking:
        raise BadInput(f"scenario {sc.name} puts faults on Kafka requests (the request proxy), which the {backend} "
                       f"backend cannot; run it with --backend local")


def check(schedule, *, brokers: int, shared=None) -> None:
    """Refuse (BadInput) a request fault that could not work, or a shared cluster without the request proxy."""
    for i, a in enumerate(schedule):
        if a.kind in REQUEST_STEPS and (why := _why(a, brokers=brokers)):
            raise BadInput(f"step {i} ({a.kind}): {why}")
    if shared is not None and getattr(shared, "backend", None) != "fake" and needs_requests(schedule) \
            and getattr(shared, "kproxy", None) is None:
        raise BadInput("the schedule puts faults on Kafka requests and the shared cluster was started without the "
                       "request proxy; run it on its own cluster, or start the shared one with request faults")
