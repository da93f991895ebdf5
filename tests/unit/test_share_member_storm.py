"""The Python share member's `share-rejoin-storm` self-test: from its first records its client is closed and made
anew (a new member id) every STORM_EVERY_S for STORM_FOR_S, and nothing else; fake clients stand in for the share
consumer and the clock."""
from harness.members import share_member
from harness.members.share_member import STORM_EVERY_S, STORM_FOR_S, ShareMember


class Client:
    made: list = []

    def __init__(self):
        self.closed, self.topics = False, None
        Client.made.append(self)

    def commit_sync(self, timeout):
        return {}

    def close(self):
        self.closed = True

    def subscribe(self, topics):
        self.topics = topics


def test_the_storm_makes_the_client_anew_every_second_for_its_span(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(share_member.time, "monotonic", lambda: now[0])
    m = ShareMember.__new__(ShareMember)
    m.storm, m.topics, m.implicit, m.asked = None, ["t"], [], {}
    m._client = Client
    m.sc = Client()
    for _ in range(int(STORM_FOR_S * 4) + 50):  # polls every 0.25 s (exact in binary), past the storm's end
        m._storm()
        now[0] += 0.25
    made = Client.made[1:]
    assert len(made) == int(STORM_FOR_S / STORM_EVERY_S) + 1  # one at its start, then one a second while it lasts
    assert all(c.closed for c in Client.made[:-1]) and not Client.made[-1].closed
    assert all(c.topics == ["t"] for c in made)
