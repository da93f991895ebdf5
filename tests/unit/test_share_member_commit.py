"""The Python share member's commit: a failure the client raises, or returns for a partition, is written as a
non-fatal `error` and the member goes on (docs/share.md, "Lost answers"). A fake client stands in for the share
consumer's commit_sync alone; what the member writes is read back from its history."""
import json

import confluent_kafka as ck

from harness.record.history import HistoryWriter
from harness.members.share_member import ShareMember


def test_the_python_member_records_a_partition_whose_commit_failed_and_goes_on(tmp_path):
    """commit_sync returns a partition's failure rather than raising it (confluent-kafka 2.16): the member writes
    it as a non-fatal error, as it does a raised one, and goes on."""
    class Client:
        def __init__(self, answer):
            self.answer = answer

        def commit_sync(self, timeout):
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    m = ShareMember.__new__(ShareMember)
    m.member_id = "m1"
    with HistoryWriter(tmp_path / "member-m1.jsonl", source="member", member="m1") as m.hist:
        timed_out = ck.KafkaException(ck.KafkaError(ck.KafkaError._TIMED_OUT))
        for answer in ({ck.TopicPartition("t", 1): timed_out, ck.TopicPartition("t", 0): None}, {}, None,
                       ck.KafkaException(ck.KafkaError(ck.KafkaError._TRANSPORT))):
            m.sc = Client(answer)
            m._commit()
    errors = [json.loads(line) for line in (tmp_path / "member-m1.jsonl").read_text().splitlines()[1:]]
    assert [e["type"] for e in errors] == ["error", "error"] and not any(e["fatal"] for e in errors)
    assert errors[0]["error"].startswith("commit_sync: t-1: ") and "_TIMED_OUT" in errors[0]["error"]
    assert "_TRANSPORT" in errors[1]["error"]
