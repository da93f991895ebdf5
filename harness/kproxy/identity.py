"""Which member sent a request, from the client id in its header.

Every member kind is given its member id (`HARNESS_MEMBER_ID`, `m<n>`, harness/members/pool.py) and sets
its client ids from it:

- Python members (confluent-kafka) and Java members: `client.id` = the member id, on every connection.
- Kafka Streams instances: `client.id` = `<application.id>-<member id>` (StreamsMember.java); Kafka Streams
  derives its clients' ids from it: `...-StreamThread-<n>-consumer`, `...-StreamThread-<n>-restore-consumer`,
  `...-StreamThread-<n>-producer`, `...-admin`, `...-GlobalStreamThread-global-consumer`.
- Kafka Connect workers: `client.id` = the member id (HarnessWorker.java sets it unless the worker config
  names one); Connect
  uses it for the worker's group membership and derives `<group.id>-<member id>-offsets` (`-configs`,
  `-statuses`, `-shared-admin`, ...) for its internal topics' clients. The connectors' task clients are named
  by the task (`connector-consumer-<connector>-<task>`), not the worker: they move between workers, so no
  member is named for them (a rule for one member does not match them; a rule for all members does).

A client id that names no member (the harness's own admin client, the workload producer) gives None.
"""
from __future__ import annotations

import re

MEMBER_ID = re.compile(r"m\d+")


def member_of(client_id: str | None, *, group_id: str | None = None) -> str | None:
    """The member id a client id belongs to (see the module's list), or None."""
    if not client_id:
        return None
    if MEMBER_ID.fullmatch(client_id):
        return client_id
    if group_id and client_id.startswith(group_id + "-"):
        head = client_id[len(group_id) + 1:].split("-", 1)[0]
        if MEMBER_ID.fullmatch(head):
            return head
    return None
