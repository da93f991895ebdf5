"""LocalCluster.start: a start that failed because a picked port was bound by another process before the broker's
JVM bound it is made again on other ports (CI's ./dev test, 2026-11-28: "broker 2 exited during start-up", its log
"Socket server failed to bind to 127.0.0.1:55737: Address already in use"); any other failure is raised at once, and
the port failure too after PORT_ATTEMPTS. The attempt itself is stood in for (no Kafka here): the loop is judged."""
import pytest

from harness.base.errors import SetupError
from harness.cluster import local
from harness.cluster.local import PORT_ATTEMPTS, LocalCluster, startup_failure

TAKEN = "broker 2 exited during start-up: Socket server failed to bind to 127.0.0.1:55737: Address already in use."


class Scripted(LocalCluster):
    """Each start attempt raises the next error of `script` (None: the attempt succeeds)."""

    def __init__(self, tmp_path, script):
        super().__init__(work_dir=tmp_path)
        self.script, self.attempts, self.stops, self.said = list(script), 0, 0, []
        self.progress = self.said.append

    def _start_once(self, timeout_s):
        self.attempts += 1
        err = self.script.pop(0)
        if err is not None:
            raise err

    def stop(self):
        self.stops += 1


def test_a_port_taken_before_the_broker_bound_it_is_started_again_on_other_ports(tmp_path):
    c = Scripted(tmp_path, [SetupError(TAKEN), None])
    c.start()
    assert (c.attempts, c.stops) == (2, 1)
    assert "taken before it was bound" in c.said[0] and "attempt 2 of 3" in c.said[0], c.said


def test_any_other_start_failure_is_raised_at_once(tmp_path):
    c = Scripted(tmp_path, [SetupError("broker 1 exited during start-up: ConfigException: Invalid value"), None])
    with pytest.raises(SetupError, match="ConfigException"):
        c.start()
    assert c.attempts == 1 and c.said == []


def test_a_port_taken_at_every_attempt_is_raised_after_the_last(tmp_path):
    c = Scripted(tmp_path, [SetupError(TAKEN)] * PORT_ATTEMPTS)
    with pytest.raises(SetupError, match="Address already in use"):
        c.start()
    assert c.attempts == PORT_ATTEMPTS


def test_the_brokers_bind_failure_is_its_start_up_reason(tmp_path):
    log = tmp_path / "broker.log"
    log.write_text("[main] ERROR kafka.network.DataPlaneAcceptor - Unable to start acceptor for CLIENT\n"
                   "org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:55737: Address "
                   "already in use.\n")
    assert startup_failure(log) == "Socket server failed to bind to 127.0.0.1:55737: Address already in use."
    assert local.startup_failure(tmp_path / "none.log") == ""
