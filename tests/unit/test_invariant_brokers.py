"""harness/invariants/brokers.py: the `expected_refusal` check, and what the brokers said cited beside a
failing verdict (its message and witnesses)."""
from __future__ import annotations

from histbuild import broker_said, ev, history, join, member_exit, run_end, run_start

from harness.invariants import CheckSettings, brokers, judge
from harness.invariants.core import verdict

G = "g-run-refused-1"
REFUSAL = f"[GroupCoordinator id=2 topic=__consumer_offsets partition=5] Cannot upgrade classic group {G} to " \
          "consumer group: userData from a custom assignor would be lost."
WANT = r"Cannot upgrade classic group \S+ to consumer group"
BROKER_HEADER = {"type": "header", "source": "broker-log", "group_id": G, "member": None}


def _run(*extra, with_log=True):
    evs = [run_start(0.0, settings={"topic": "t", "partitions": 6, "expect_broker": WANT}), *join("a", 1.0, [0, 1, 2]),
           *join("b", 1.2, [3, 4, 5]), *extra, member_exit("a", 20.0), member_exit("b", 20.0), run_end(21.0)]
    h = history(evs)
    if with_log:
        h.headers.append(BROKER_HEADER)
    return h


def test_valid_when_the_expected_refusal_is_there_with_it_as_the_witness():
    v = brokers.check(_run(broker_said(5.0, REFUSAL, level="WARN")), CheckSettings(expect_broker=WANT))
    assert v.status == "valid" and "userData from a custom assignor would be lost" in v.message
    assert v.witnesses[0]["type"] == "broker" and v.witnesses[0]["message"] == REFUSAL


def test_invalid_when_the_brokers_did_not_refuse():
    v = brokers.check(_run(broker_said(5.0, f"Stabilized group {G} generation 2 with 2 members.")),
                      CheckSettings(expect_broker=WANT))
    assert v.status == "invalid" and "no broker said so" in v.message


def test_unknown_without_the_brokers_logs_when_a_refusal_is_expected_skipped_when_none_is():
    assert brokers.check(_run(with_log=False), CheckSettings(expect_broker=WANT)).status == "unknown"
    assert brokers.check(_run(with_log=False), CheckSettings()).status == "skipped"


def _unread(t: float, broker: int = 2) -> dict:
    """What harness/cluster/broker_log.py writes for a broker log it could not read."""
    return ev("broker_log_unread", t, "broker-log", broker=broker, error="PermissionError: [Errno 13] denied")


def test_an_unread_broker_log_makes_no_refusal_unknown_not_valid():
    """Broker 2's log could not be read: its silence is not 'no refusal'."""
    v = brokers.check(_run(broker_said(5.0, f"Stabilized group {G} generation 2 with 2 members."), _unread(21.0)),
                      CheckSettings())
    assert v.status == "unknown", v.message
    assert "broker 2's log could not be read (PermissionError" in v.message


def test_an_unread_broker_log_makes_a_missing_expected_refusal_unknown_not_invalid():
    v = brokers.check(_run(_unread(21.0)), CheckSettings(expect_broker=WANT))
    assert v.status == "unknown" and "broker 2's log could not be read" in v.message


def test_a_refusal_in_a_log_that_was_read_decides_whatever_another_log_did():
    assert brokers.check(_run(broker_said(5.0, REFUSAL), _unread(21.0)), CheckSettings(expect_broker=WANT)).status \
        == "valid"
    assert brokers.check(_run(broker_said(5.0, REFUSAL), _unread(21.0)), CheckSettings()).status == "invalid"


def test_a_refusal_the_scenario_does_not_expect_is_invalid():
    """protocol-migration under group.consumer.migration.policy=disabled must not pass."""
    disabled = f"Cannot upgrade classic group {G} to consumer group because online upgrade is disabled."
    v = brokers.check(_run(broker_said(5.0, disabled)), CheckSettings())
    assert v.status == "invalid" and "online upgrade is disabled" in v.message
    assert v.witnesses[0]["message"] == disabled
    ok = brokers.check(_run(broker_said(5.0, f"Stabilized group {G} generation 2 with 2 members.")), CheckSettings())
    assert ok.status == "valid"


def test_a_classic_member_turned_away_from_a_consumer_group_is_a_refusal():
    """Kafka 4.4.0 under group.consumer.migration.policy=disabled (KAFKA-20640): the classic member waits with
    nothing assigned and no error of its own; only the coordinator says why."""
    line = f"Cannot join the consumer group {G} with the classic protocol because the group migration is disabled."
    v = brokers.check(_run(broker_said(5.0, line)), CheckSettings())
    assert v.status == "invalid" and "group migration is disabled" in v.message and v.witnesses[0]["message"] == line


def test_judge_reads_the_expectation_from_the_run_start():
    assert judge(_run(broker_said(5.0, REFUSAL, level="WARN")))["expected_refusal"].status == "valid"


def test_a_failing_verdict_cites_the_brokers_notable_line_nearest_its_witnesses():
    h = _run(broker_said(2.0, f"Stabilized group {G} generation 1 with 2 members."),
             broker_said(5.0, REFUSAL, level="WARN"),
             broker_said(400.0, f"[GroupCoordinator id=2] Member x of {G} fenced: far away", level="INFO"))
    failing = verdict("convergence_balance", "invalid", "unbalanced", [{"type": "assigned", "mono": 6.0}])
    v = brokers.with_broker_context(failing, h)
    assert "broker 1 said: [GroupCoordinator id=2" in v.message and "would be lost" in v.message
    assert [w["message"] for w in v.witnesses if w["type"] == "broker"] == [REFUSAL]
    assert brokers.with_broker_context(verdict("x", "valid", "fine"), h).message == "fine"  # valid: untouched


def test_the_group_id_in_a_line_does_not_make_it_notable():
    """The group id holds the scenario's name (protocol-migration-refused): 'refused' there is no refusal."""
    line = broker_said(3.0, f"Preparing to rebalance group {G} in state PreparingRebalance")
    assert not brokers.notable(line, G)
    assert brokers.notable(broker_said(3.0, "anything", level="WARN"), G)
    assert not brokers.notable(broker_said(3.0, "Cannot do x", logger="kafka.log.UnifiedLog"), G)
