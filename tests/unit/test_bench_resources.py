"""Verify: bench/resources.py's pure parts: a process's kind from its command line; JmxTool's CSV read into rows (a row
torn by the stop left out); per request type, the requests handled between two times and their mean total time from
Kafka's running mean and count, the worst interval's mean and the highest 99th percentile; the lowest idle shares;
each kind of process's CPU per phase and its share of the cores.

Setup: the bench module loaded from its file; hand-made command lines, CSV and samples.
"""
import benchmod
import pytest


@pytest.fixture(scope="module")
def res():
    return benchmod.load("resources")


def test_kind_of_names_brokers_members_the_watch_and_jmxtool(res):
    assert res.kind_of(["java", "-Xmx768m", "-cp", "x", "kafka.Kafka", "b.properties"]) == "broker"
    assert res.kind_of(["java", "-cp", "x", "org.apache.kafka.tools.JmxTool", "--jmx-url", "u"]) == "jmx"
    assert res.kind_of(["/v/bin/python", "/c/harness/members/python_member.py"]) == "member"
    assert res.kind_of(["/v/bin/python", "-m", "harness.kinds.group_watch_proc", "b", "g", "2"]) == "group_watch"
    assert res.kind_of(["/c/toxiproxy-server", "-port", "1"]) == "toxiproxy"
    assert res.kind_of(["sleep", "1"]) == "other"


HB = "kafka.network:type=RequestMetrics,name=TotalTimeMs,request=ConsumerGroupHeartbeat"
IDLE = "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent"


def report(time, count, mean, p99=None, idle=None) -> str:
    """One report as JmxTool's csv format writes it: a `name,"value"` line per attribute, the time first."""
    lines = [f'time,"{time}"', f'{HB}:Count,"{count}"', f'{HB}:Mean,"{mean}"']
    lines += [f'{HB}:99thPercentile,"{p99}"'] if p99 is not None else []
    lines += [f'{IDLE}:OneMinuteRate,"{idle}"', f'{IDLE}:RateUnit,"SECONDS"'] if idle is not None else []
    return "\n".join(lines) + "\n"


CSV = (report(1000, 100, 2.0, 5.0, 0.9)
       + report(11000, 300, 4.0, 40.0, 0.5)     # 200 more at (300*4 - 100*2) / 200 = 5 ms
       + report(21000, 400, 4.25, 12.0, 0.7)    # 100 more at (400*4.25 - 1200) / 100 = 5 ms
       + f'time,"31000"\n{HB}:Count,"500"\n')  # torn by the stop


def test_jmxtool_rows_are_read_and_a_torn_row_left_out(res):
    rows = res.read_rows(CSV)
    assert [r["time"] for r in rows] == [1000, 11000, 21000]
    assert rows[1][f"{HB}:Mean"] == 4.0


def test_request_summary_takes_the_span_from_the_running_mean_and_count(res):
    rows = res.read_rows(CSV)
    s = res.request_summary(rows)["ConsumerGroupHeartbeat"]
    assert s == {"requests": 300, "mean_ms": 5.0, "worst_interval_mean_ms": 5.0, "p99_max_ms": 40.0}
    later = res.request_summary(rows, wall_from=11000)["ConsumerGroupHeartbeat"]
    assert later["requests"] == 100 and later["p99_max_ms"] == 12.0
    assert res.request_summary(rows, wall_to=1000) == {}  # one report: no span


def test_the_worst_interval_is_the_slowest_not_the_mean(res):
    text = report(0, 0, 0) + report(10, 100, 1.0) + report(20, 110, 10.0)
    s = res.request_summary(res.read_rows(text))["ConsumerGroupHeartbeat"]
    assert s["mean_ms"] == 10.0 and s["worst_interval_mean_ms"] == pytest.approx(100.0)  # (1100 - 100) / 10


def test_idle_summary_is_the_lowest_and_mean_share(res):
    assert res.idle_summary(res.read_rows(CSV)) == {"RequestHandlerAvgIdlePercent": {"min": 0.5, "mean": 0.7}}


def test_cpu_summary_per_phase_and_share_of_the_cores(res):
    samples = [{"mono": 0.0, "runner": 0.0, "broker": 0.0, "member": 0.0},
               {"mono": 10.0, "runner": 1.0, "broker": 8.0, "member": 6.0},
               {"mono": 20.0, "runner": 3.0, "broker": 12.0, "member": 16.0}]
    out = res.cpu_summary(samples, 2, {"joining": (0.0, 10.0), "after": (10.0, 20.0), "empty": (9.0, 11.0)})
    assert out["joining"]["cpu_s"] == {"broker": 8.0, "member": 6.0, "runner": 1.0}
    assert out["joining"]["share_of_cores"]["broker"] == 0.4 and out["joining"]["all_share_of_cores"] == 0.75
    assert out["after"]["cpu_s"]["member"] == 10.0 and out["after"]["wall_s"] == 10.0
    assert "empty" not in out  # both ends nearest the same sample: no span
