"""The Kafka wire format as far as a proxy needs it to forward: frames, request headers, API names.

Every request and response is a frame: a 4-byte big-endian size, then that many bytes. A request frame
starts with its header, whose first four fields have the same layout in every header version (v0 to v2)
and every API: api_key (int16), api_version (int16), correlation_id (int32), client_id (nullable string,
int16 length; v0 has no client_id). A response frame starts with the correlation id (int32) of the request
it answers. That is all the proxy reads of a frame it forwards, by hand, so that it forwards requests of
every API and version, also those its codec (kio) does not know; bodies are decoded and encoded by kio
only where a rule needs one (`harness.kproxy.answers`).
"""
from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass

from kio.schema.index import api_key_map

#: the largest frame the proxy reads (the brokers' socket.request.max.bytes default is 100 MiB)
MAX_FRAME = 100 * 1024 * 1024

_SIZE = struct.Struct(">i")
_HEAD = struct.Struct(">hhih")


def api_name(snake: str) -> str:
    """The protocol's own name of an API from kio's module name: join_group -> JoinGroup."""
    return "".join(part.title() for part in snake.split("_"))


#: API key -> name, as the protocol names them (JoinGroup, ConsumerGroupHeartbeat, ...), from kio's index
API_NAMES: dict[int, str] = {key: api_name(snake) for key, snake in api_key_map.items()}
API_KEYS: dict[str, int] = {name: key for key, name in API_NAMES.items()}


def api_key_of(name: str) -> int:
    """The API key of a name (JoinGroup); ValueError naming the known ones otherwise."""
    try:
        return API_KEYS[name]
    except KeyError:
        raise ValueError(f"unknown Kafka API {name!r}; known: {', '.join(sorted(API_KEYS))}") from None


@dataclass(frozen=True, slots=True)
class RequestHead:
    """The header fields of one request the proxy reads."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None

    @property
    def api(self) -> str:
        return API_NAMES.get(self.api_key, f"api-{self.api_key}")


class FrameError(ValueError):
    """Bytes that are not a Kafka frame (a size out of range, a header cut short)."""


def parse_request_head(payload: bytes) -> RequestHead:
    """The header of a request frame's payload (the bytes after the size)."""
    if len(payload) < 8:
        raise FrameError(f"a request of {len(payload)} bytes has no header")
    key, version, corr = struct.unpack_from(">hhi", payload)
    client_id = None
    if len(payload) >= 10 and not (key == 7 and version == 0):  # ControlledShutdown v0: header v0
        (n,) = struct.unpack_from(">h", payload, 8)
        if n >= 0:
            if len(payload) < 10 + n:
                raise FrameError(f"client_id of {n} bytes cut short at {len(payload)}")
            client_id = payload[10:10 + n].decode("utf-8", "replace")
    return RequestHead(key, version, corr, client_id)


def response_correlation(payload: bytes) -> int:
    """The correlation id a response frame's payload answers."""
    if len(payload) < 4:
        raise FrameError(f"a response of {len(payload)} bytes has no correlation id")
    return _SIZE.unpack_from(payload)[0]


def frame(payload: bytes) -> bytes:
    """A payload with its size in front."""
    return _SIZE.pack(len(payload)) + payload


def request_bytes(key: int, version: int, correlation_id: int, client_id: str | None, body: bytes = b"",
                  *, flexible: bool = False) -> bytes:
    """A request frame (header v1, or v2 when `flexible`: with an empty tagged-field section) around a body;
    for tests and for the proxy's own ApiVersions question."""
    cid = b"" if client_id is None else client_id.encode()
    head = _HEAD.pack(key, version, correlation_id, len(cid) if client_id is not None else -1) + cid
    return frame(head + (b"\x00" if flexible else b"") + body)


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next frame's payload, or None at a clean end of stream (no partial frame)."""
    try:
        size_b = await reader.readexactly(4)
    except asyncio.IncompleteReadError as e:
        if e.partial:
            raise FrameError(f"stream ended inside a frame's size ({len(e.partial)} of 4 bytes)") from None
        return None
    (size,) = _SIZE.unpack(size_b)
    if size < 0 or size > MAX_FRAME:
        raise FrameError(f"frame size {size} out of range")
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError as e:
        raise FrameError(f"stream ended inside a frame ({len(e.partial)} of {size} bytes)") from None
