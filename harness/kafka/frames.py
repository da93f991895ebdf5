"""Kafka request frames and response bodies through kio (Python classes generated from Kafka's own message
definitions): a request is a 4-byte size, then its header and body as kio writes them; a response payload (the size
already read) is its header, then its body. The request proxy's own questions (ApiVersions) and the share group's
assignment watch (FindCoordinator, ShareGroupDescribe) are built and read here."""
from __future__ import annotations

import io

from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32


def request_frame(req, *, correlation_id: int, client_id: str) -> bytes:
    """`req` (a kio request entity, its API key and version its class's) as a frame to send."""
    cls, out = type(req), io.BytesIO()
    head = cls.__header_schema__
    entity_writer(head)(out, head(request_api_key=i16(cls.__api_key__), request_api_version=i16(cls.__version__),
                                  correlation_id=i32(correlation_id), client_id=client_id))
    entity_writer(cls)(out, req)
    return len(out.getvalue()).to_bytes(4, "big") + out.getvalue()


def response_body(payload: bytes, resp_cls):
    """The body of a response payload (no size) of kio class `resp_cls`, its header skipped."""
    _, n = entity_reader(resp_cls.__header_schema__)(payload, 0)
    body, _ = entity_reader(resp_cls)(payload, n)
    return body
