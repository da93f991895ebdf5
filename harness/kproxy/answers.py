"""Answers the proxy makes itself: a broker's error response to a request, encoded with kio.

An `error_response` rule answers a request in the broker's stead with an error code, as a broker in trouble
would (NOT_COORDINATOR, REBALANCE_IN_PROGRESS, ...). The answer is a real response of the request's API
and version: kio decodes the request and encodes the response, so the bytes follow Kafka's own message
definitions (kio generates its classes from them). What goes in it is derived from the response schema:

- every `error_code` field carries the error, and where an entity carries it, its lists are left empty
  (as a broker answering an error does: an OffsetFetch group error has no topics);
- a list of entities the request has under the same name is mirrored element by element (OffsetCommit's
  topics and partitions, FindCoordinator v4+'s coordinators from the request's coordinator_keys, DescribeConfigs'
  results from its resources: each resource answered with the error), and a
  scalar the request has under the same name is copied (group_id, member_id, name, partition_index);
- everything else is its schema default, else zero, empty or null.

`check_answerable` is what a rule runs when it is installed: an API kio does not know, or broker versions
above the newest kio encodes, is refused then (a clear error), never found out at request time.
"""
from __future__ import annotations

import dataclasses
import datetime
import io
import types
import typing
import uuid
from functools import lru_cache

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

from harness.kafka.frames import request_frame, response_body
from harness.kproxy.wire import API_NAMES

#: request list fields whose answer lists go by another name: (response field, request field) -> the answer entity's
#: field each request item fills (a request of plain keys), or None: the answer entity mirrors the request entity's
#: fields by name (DescribeConfigs' results from its resources: resource_type, resource_name)
_RENAMED = {("coordinators", "coordinator_keys"): "key", ("results", "resources"): None}


class Unanswerable(ValueError):
    """An error response kio cannot encode: an unknown API or version, an unknown error name."""


def error_code_of(error: str | int) -> ErrorCode:
    """An error by the protocol's name (NOT_COORDINATOR) or number."""
    try:
        return ErrorCode(int(error)) if isinstance(error, int) or str(error).lstrip("-").isdigit() \
            else ErrorCode[str(error).lower()]
    except (KeyError, ValueError):
        raise Unanswerable(f"unknown Kafka error {error!r} (names as in the protocol: NOT_COORDINATOR, ...)") from None


def kio_versions(api_key: int) -> range:
    """The versions of an API kio has schemas for (empty when none)."""
    name = api_key_map.get(api_key)
    vs = sorted(schema_name_map[name]) if name else []
    return range(vs[0], vs[-1] + 1) if vs else range(0)


@lru_cache(maxsize=None)
def _classes(api_key: int, version: int):
    if version not in kio_versions(api_key):
        raise Unanswerable(f"kio knows no {API_NAMES.get(api_key, api_key)} v{version} "
                           f"(it knows {_span(kio_versions(api_key))})")
    req = load_payload_module(api_key, version, EntityType.request)
    resp = load_payload_module(api_key, version, EntityType.response)
    return _payload_class(req, EntityType.request), _payload_class(resp, EntityType.response)


def payload_classes(api_key: int, version: int):
    """(request class, response class) of an API version kio knows; Unanswerable otherwise."""
    return _classes(api_key, version)


def _payload_class(module, kind):
    return next(v for v in vars(module).values()
                if isinstance(v, type) and dataclasses.is_dataclass(v) and getattr(v, "__type__", None) == kind)


def _span(r: range) -> str:
    return f"v{r.start}-{r.stop - 1}" if len(r) else "no version"


def check_answerable(api_key: int, offered: range | None) -> None:
    """Refuse (Unanswerable) an error_response on an API kio cannot answer at every version the brokers
    offer (`offered`: their ApiVersions range; None when unknown: then only the API is checked)."""
    known = kio_versions(api_key)
    name = API_NAMES.get(api_key, f"api-{api_key}")
    if not len(known):
        raise Unanswerable(f"error_response on {name}: kio has no schema of it")
    if offered is not None and offered.stop > known.stop:
        raise Unanswerable(f"error_response on {name}: the brokers offer {_span(offered)} and kio encodes "
                           f"{_span(known)}; a client may use a version whose answer kio cannot encode")
    for v in known:
        error_response(api_key, v, None, 0, ErrorCode.unknown_server_error)  # every schema builds


def split_request(api_key: int, version: int, payload: bytes):
    """A request payload decoded by kio: (header, body entity)."""
    req_cls, _ = _classes(api_key, version)
    header, n = entity_reader(req_cls.__header_schema__)(payload, 0)
    body, _ = entity_reader(req_cls)(payload, n)
    return header, body


def error_response(api_key: int, version: int, request, correlation_id: int, error: ErrorCode) -> bytes:
    """The payload (no size) of a response to `request` (a kio entity, or None: nothing mirrored)
    carrying `error` in every error_code."""
    _, resp_cls = _classes(api_key, version)
    body = _build(resp_cls, _fields_of(request), error)
    out = io.BytesIO()
    head_cls = resp_cls.__header_schema__
    entity_writer(head_cls)(out, head_cls(correlation_id=correlation_id))
    entity_writer(resp_cls)(out, body)
    return out.getvalue()


def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _strip_none(tp):
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0], True
    return tp, False


def entity_list(tp):
    """The entity class of a `tuple[Entity, ...]` field type (nullable or not), else None."""
    return _entity_list(tp)


def field_types(cls) -> dict:
    """A kio entity class's fields' types, by name."""
    return _hints(cls)


def _entity_list(tp):
    """The entity class of a `tuple[Entity, ...]` type, else None."""
    tp, _ = _strip_none(tp)
    if typing.get_origin(tp) is tuple:
        inner = typing.get_args(tp)[0]
        return inner if dataclasses.is_dataclass(inner) else None
    return None


def _fields_of(entity) -> dict:
    return {f.name: getattr(entity, f.name) for f in dataclasses.fields(entity)} if entity is not None else {}


def _build(cls, source: dict, error: ErrorCode):
    """An entity of `cls` with `error` in its error_code, mirroring `source` (the request's fields by name)."""
    hints = _hints(cls)
    fields = dataclasses.fields(cls)
    carries = any(f.name == "error_code" for f in fields)
    given = {}
    for f in fields:
        tp = hints[f.name]
        if f.name == "error_code":
            given[f.name] = error
        elif (inner := _entity_list(tp)) is not None:
            given[f.name] = () if carries else _mirror_list(f.name, inner, source, error)
        elif f.name in source and not dataclasses.is_dataclass(_strip_none(tp)[0]) and not isinstance(
                source[f.name], tuple) and (source[f.name] is not None or _strip_none(tp)[1]):
            given[f.name] = source[f.name]
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            given[f.name] = _zero(f, tp)
    return cls(**given)


def _mirror_list(name: str, inner, source: dict, error: ErrorCode) -> tuple:
    for (resp_name, req_name), key in _RENAMED.items():
        if name == resp_name and req_name in source:
            return tuple(_build(inner, {key: k} if key else _fields_of(k), error) for k in source[req_name] or ())
    items = source.get(name) or ()
    return tuple(_build(inner, _fields_of(item) if dataclasses.is_dataclass(item) else {}, error) for item in items)


_ZEROS = {"string": "", "bytes": b"", "records": b"", "bool": False, "uuid": uuid.UUID(int=0),
          "timedelta_i32": datetime.timedelta(0), "timedelta_i64": datetime.timedelta(0),
          "datetime_i64": datetime.datetime.fromtimestamp(0, datetime.timezone.utc)}


def _zero(f: dataclasses.Field, tp):
    tp, nullable = _strip_none(tp)
    if nullable:
        return None
    if typing.get_origin(tp) is tuple:
        return ()
    if dataclasses.is_dataclass(tp):
        return _build(tp, {}, ErrorCode.none)
    return _ZEROS.get(f.metadata.get("kafka_type", ""), 0)


def api_versions_request(correlation_id: int, *, client_id: str = "harness-kproxy") -> bytes:
    """An ApiVersions v3 request frame (the proxy asks a broker which versions it offers)."""
    req_cls, _ = _classes(18, 3)
    return request_frame(req_cls(client_software_name="harness-kproxy", client_software_version="1"),
                         correlation_id=correlation_id, client_id=client_id)


def offered_versions(payload: bytes) -> dict[int, range]:
    """The versions per API key an ApiVersions v3 response payload offers ({} for an error answer)."""
    _, resp_cls = _classes(18, 3)
    resp = response_body(payload, resp_cls)
    if resp.error_code != ErrorCode.none:
        return {}
    return {int(a.api_key): range(int(a.min_version), int(a.max_version) + 1) for a in resp.api_keys}
