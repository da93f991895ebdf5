"""Invariants of Kafka Streams runs: task exclusivity, warmups (KIP-441), probing, standbys (KIP-708), balance.

A package, a module per concern: `view` (settings and the derived views every checker reads), `tasks` (1, 2),
`topology` (3, 3b), `bounds` (the zombie tolerance of 1 and 3, per instance), `placement` (4, 5), `output` (6),
`state` (7), `cause` (8), `settled` (`group_settled`: the group settles within its bound, the rule of every kind,
harness/invariants/settled.py). The public face is this module's.

Times are `mono` seconds on the shared clock; E, the end of the history, is the last `run_end` (else the
last event); nothing after E is read. A member's *life* runs from its `member_start` (or first own event)
to the first of its `member_exit` and `stopped`; its events outside it are not read. A *fault* runs from
`fault_start` to the `fault_end` of its fault_id (past E if never lifted) and affects its
`members_affected`. A member's *snapshot* at t is its latest `tasks` event at or before t; the *active
assignment* at t maps each task to the live members whose snapshot lists it active. A task missing from
`lags` is never caught up. A *rebalance* is a cluster of `stream_state` transitions to REBALANCING (any
member, each less than 2 s after the previous). A *stable point* ends a stretch of at least `settle_s`
with no fault active, no member starting or ending, every live member RUNNING and no change of any
member's active or standby task set (lags may change); it is judged at the stretch's end.

1. `task_exclusive_active`: a task's *run* on a member lasts from `task_active` to its `task_active_end`
   or the member's end of life. Runs of one task on two members may not overlap, except that the older
   may outlast the newer one's start by up to twice its member's session timeout then (`bounds`: from the
   member's own `started` settings, else the run's `zombie_tolerance_s`) when its member was under a fault that
   had started by then (a paused zombie) or its run was ended by a kill/crash. A `processed` event of a
   task outside every run of it on that member is a violation too. Measurements: `tasks_seen`,
   `activations`, `overlaps` (overlapping pairs, tolerated or not), `max_overlap_s`.
2. `warmup_before_active` (KIP-441): `restore_start` events of one task on one member within 1 s of the
   first are one *episode* of the sum of their `end - start` records. An episode of more than
   `acceptable_recovery_lag` records starting at t is a violation when another member, alive, under no
   fault and not shutting down (PENDING_SHUTDOWN, NOT_RUNNING, PENDING_ERROR, ERROR) at t, held the task
   (active or standby) with a lag within `acceptable_recovery_lag` in any snapshot from the start of the
   latest rebalance, or from `handoff_window_s` before t if that is earlier, up to t (the old owner has
   dropped the task by t: cooperatively, and under the streams protocol members learn an assignment at
   their own heartbeats, seconds apart): Streams should have kept that copy active and warmed this member
   up. Without one (a first start, every copy lost) the cold restore is justified. `skipped` when nothing
   was restored and no task was ever active on two members, and under the `streams` protocol, whose
   assignor has no warmups yet: its cold restores are counted in `violations`, not judged. Measurements:
   `activations_with_restore`, `warm`, `cold_justified`, `violations`, `max_restored_records` (by
   `restore_end`, else as planned).
3. `probing_convergence`: a *topology change* is a `member_start`, or a `member_exit` (from the member's
   first shutting-down state if it logged one), after all live members were first RUNNING; its window
   lasts until the next change or E, and converges at the last change of the active assignment in it.
   `moves`: tasks whose active owners then differ from those just before the change (a task without a
   live owner just before, its owner killed or gone, counts when it has one then). With
   w = ceil(moves / max_warmup_replicas), invalid when more
   than 2 (w + 1) rebalances: two per round, the change's own and w probing rounds (an assignment that takes an
   active task from an instance makes it rejoin at once, and the task reaches its new owner in that second
   rebalance: cooperative rebalancing, KIP-429) (+ 1 for each instance killed from twice its own session timeout
   (`bounds`) before the change on: its session expiry is a rebalance of its own) start from the change to the
   convergence, or when it
   takes longer than (w + 1) * `probing_interval_s` + 60 s. `skipped` without a change, `unknown` when the
   members were never all RUNNING. Measurements: `windows` (`change_s`, `moves`, `rebalances`, `bound`,
   `seconds_to_converge` each).
3b. `bounded_task_moves` (3 carried to tasks): in each window of 3, the active tasks moved are at most
   2 x fewest + `max_warmup_replicas`, where fewest is the fewest moves from the assignment before the
   change to one in which each of the final instances holds floor or ceil of tasks / instances.
   The tolerance is wide on purpose: KIP-441's assignor balances actives and standbys together and
   swaps tasks between instances that stay (seen: 4 moves where 2 would balance). Moves are counted
   per member process, so a static instance's restart moves its tasks to the new process. `skipped`
   and `unknown` as 3. Measurements: `moves`, `fewest_moves`, `max_excess`.
4. `standby_placement` (KIP-708), at every stable point: no task has a standby on the client running it;
   every task has at least min(`standby_replicas`, live clients - 1) standbys; those beyond
   `standby_replicas` (warmups, also when it is 0) number at most `max_warmup_replicas` in all; with
   `rack_aware`, `standby_replicas` >= 1 and live clients on >= 2 racks (`started`.rack, else
   `member_start`.rack), each task's copies span >= 2 racks, so one rack outage never loses every copy
   (under the `streams` protocol, whose broker-side assignor ignores racks, counted in
   `rack_spread_unmet` and not judged).
   `skipped` when `standby_replicas` is 0 and no standby was ever seen; `unknown` without a stable point.
   Measurements: `stable_points`, `tasks_checked`, `rack_spread_ok` (None when racks are not judged).
5. `task_balance`, at the last stable point: each task (0_0 .. 0_{tasks-1}; all seen if `tasks` is 0) has
   exactly one active owner among the live members; active counts per client differ by at most
   `active_balance_slack`, active + standby counts by at most `stateful_balance_slack` (`balance.streams`, the
   rule the runner's stable wait calls too). `unknown` without a stable point, and when that point had not
   settled: a task with more standbys than min(`standby_replicas`, live clients - 1) (a warmup left) or fewer.
   Measurements: `at_s`, `active_per_client`, `stateful_per_client` (and `warmups` when not settled).
6. `output_integrity` (6 carried to Streams): after the run the harness reads the output topic back with
   read_committed (`output` events naming the input partition and offset each record came from, then
   `output_read`). Every `acked` input record must be in it; with `exactly_once` (exactly_once_v2) none
   twice. `unknown` when the read did not reach the topic's end or nothing was acknowledged.
   Measurements: `acked`, `output_records`, `missing`, `duplicated`, `exactly_once`.
7. `state_kept`: a task's *start* is its `task_active` event, whose `store_keys` counts the keys its store
   holds once restored (the counter's store only gains keys). Every start must hold at least `seeded_keys`
   (the state written into the changelog before the run) and at least the keys of the task's largest
   earlier start, on whichever instance, protocol or restart: a restart, a move or a protocol migration
   keeps a task's state. `skipped` when no start reports `store_keys` (an application of the team's own).
   Measurements: `starts`, `tasks`, `short_starts`, `seeded_keys`, `fewest_keys`.
8. `streams_rebalance_cause` (`cause`): every generation (classic) or streams group epoch the coordinator logged has a
   cause of the run's one model (`causes`) within its reach (its window and `group_settled`'s bound after it), and
   between two cause starts no more rebalances than the causes in effect may set off: threads x 2 x
   (ceil(tasks / max.warmup.replicas) + 1) each. Measurements: `rebalances`, `uncaused`, `storms`, `budget`, `causes`.
"""
from __future__ import annotations

from typing import Callable, Iterable

from harness.record.history import History
from harness.invariants.core import CheckSettings, Verdict, run_checkers, verdict
from harness.invariants.streams.cause import check_streams_rebalance_cause
from harness.invariants.streams.output import check_output_integrity
from harness.invariants.streams.placement import check_standby_placement, check_task_balance
from harness.invariants.streams.settled import check_group_settled
from harness.invariants.streams.state import check_state_kept
from harness.invariants.streams.tasks import check_task_exclusive_active, check_warmup_before_active
from harness.invariants.streams.topology import check_bounded_task_moves, check_probing_convergence
from harness.invariants.streams.view import DOWN_STATES, STREAMS_EVENT_TYPES, StreamsCheckSettings, _empty, \
    has_streams_events

__all__ = ["DOWN_STATES", "STREAMS_CHECKERS", "STREAMS_EVENT_TYPES", "StreamsCheckSettings", "check_bounded_task_moves",
           "check_output_integrity", "check_probing_convergence", "check_state_kept", "check_standby_placement", "check_streams",
           "check_streams_rebalance_cause",
           "check_task_balance", "check_task_exclusive_active", "check_warmup_before_active", "has_streams_events",
           "judge_streams"]

STREAMS_CHECKERS: dict[str, Callable[[History, StreamsCheckSettings], Verdict]] = {
    "task_exclusive_active": check_task_exclusive_active,
    "warmup_before_active": check_warmup_before_active,
    "probing_convergence": check_probing_convergence,
    "bounded_task_moves": check_bounded_task_moves,
    "standby_placement": check_standby_placement,
    "task_balance": check_task_balance,
    "group_settled": check_group_settled,
    "output_integrity": check_output_integrity,
    "state_kept": check_state_kept,
    "streams_rebalance_cause": check_streams_rebalance_cause,
}


def check_streams(history: History, settings: StreamsCheckSettings,
                  names: Iterable[str] | None = None) -> dict[str, Verdict]:
    """Run the named Streams checkers (all by default); one that raises is `unknown`, never valid."""
    return run_checkers(STREAMS_CHECKERS, history, settings, names, precheck=lambda n: _empty(n, history))


def judge_streams(history: History, streams_settings: StreamsCheckSettings, settings: CheckSettings) -> dict[str, Verdict]:
    """The verdicts of a Streams run: the Streams invariants, then `record_integrity` of the input topic. That one
    allows duplicates whatever the processing guarantee: the input's `processed` events include aborted
    transactions (`output_integrity` judges exactly-once on the committed output). Then `commit_durability` of the
    application's group."""
    from dataclasses import replace

    from harness.invariants import durability, integrity
    verdicts = check_streams(history, streams_settings)
    try:
        verdicts["record_integrity"] = integrity.check(history, replace(settings, exactly_once=False))
    except Exception as e:  # a checker that fails decides nothing
        verdicts["record_integrity"] = verdict("record_integrity", "unknown", f"checker raised {type(e).__name__}: {e}")
    verdicts[durability.NAME] = durability.judged(history, settings)
    return verdicts
