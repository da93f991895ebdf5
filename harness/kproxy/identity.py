"""Which member sent a request, from the client id in its header.

Every member kind is given its member id (`HARNESS_MEMBER_ID`, `m<n>`, harness/members/pool.py) and sets
its client ids from it:

- Python members (confluent-kafka) and Java members: `client.id` = the member id, on every connection.
- Kafka Streams instances: `client.id` = `<application.id>-<member id>` (StreamsMember.java); Kafka Streams
  derives its clients' ids from it: `...-StreamThread-<n>-consumer`, `...-StreamThread-<n>-restore-consumer`,
  `...-StreamThread-<n>-producer`, `...-admin`, `...-GlobalStreamThread-global-consumer`.
- Kafka Connect workers: `client.id` = the member id (HarnessWorker.java sets it unless the worker config
  names one); Connect uses it for the worker's group membership and derives `<group.id>-<member id>-offsets`
  (`-configs`, `-statuses`, `-shared-admin`, ...) for its internal topics' clients. The connectors' task clients are named
  by the task (`connector-consumer-<connector>-<task>`), not the worker: they move between workers, so no
  member is named for them (a rule for one member does not match them; a rule for all members does).

So the member is the last dash-separated part of the client id of the form `m<n>`, after the run's group id
when it is known (`group_id`: then a group id holding such a part cannot mislead). A client id that names no
member (the harness's own admin client, the workload producer, a Connect task's clients) gives None.
"""
from __future__ import annotations

import re

MEMBER_ID = re.compile(r"m\d+")


def member_of(client_id: str | None, *, group_id: str | None = None) -> str | None:
    """The member id a client id belongs to (see the module's docstring), or None."""
    if not client_id:
        return None
    if group_id and client_id.startswith(group_id + "-"):
        client_id = client_id[len(group_id) + 1:]
    return next((part for part in reversed(client_id.split("-")) if MEMBER_ID.fullmatch(part)), None)
