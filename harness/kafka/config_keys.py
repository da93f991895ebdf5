"""Setting keys checked against the names a release defines: which keys pass, and the one-line refusal; and a
setting's value as the clients and brokers take it (`setting_text`).

Pure: the names come from the caller (`harness/kafka/config_names.py` reads them from a Kafka release's jars; the
Streams and Connect settings' names are the harness's own lists). A key passes when the names hold it, when it
is one of the `extra` keys, or when it starts with one of the `prefixes` (settings Kafka takes though no
ConfigDef names them: a listener's own settings, a plugin's). The refusal names the key, what would take it
and, when one is close enough, the name that was probably meant.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable

from harness.base.errors import BadInput

#: broker settings outside the brokers' ConfigDef that a broker of Kafka's own jars still takes: per-listener
#: settings (`listener.name.<listener>.<setting>`), config providers' own (`config.providers.<name>.class`,
#: `.param.`), the remote log metadata manager's and storage manager's (`rlmm.config.`, `rsm.config.`, and the
#: topic-based manager's `remote.log.metadata.*`), the JMX reporter's include/exclude (`metrics.jmx.`)
BROKER_PREFIXES = ("listener.name.", "config.providers.", "rlmm.config.", "rsm.config.", "remote.log.metadata.",
                   "metrics.jmx.")
#: and the StandardAuthorizer's own settings (`authorizer.class.name` is in the ConfigDef, these are not)
BROKER_EXTRA = ("super.users", "allow.everyone.if.no.acl.found")
#: how close a name must be to be offered as the one meant (difflib's ratio)
CLOSE = 0.8


def setting_text(v) -> str:
    """A setting's value as a client or broker takes it: TOML's booleans as `true`/`false`, the rest as written."""
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def known(key: str, names: Iterable[str], *, prefixes: tuple[str, ...] = (), extra: Iterable[str] = ()) -> bool:
    """Whether `key` is a name, an extra key, or starts with one of `prefixes`."""
    return key in set(names) or key in set(extra) or any(key.startswith(p) and len(key) > len(p) for p in prefixes)


def closest(key: str, names: Iterable[str]) -> str | None:
    """The name closest to `key` when one is close enough to be the one meant, else None."""
    match = difflib.get_close_matches(key, sorted(set(names)), n=1, cutoff=CLOSE)
    return match[0] if match else None


def refusal(what: str, key: str, names: Iterable[str], *, by: str) -> str:
    """The one line that refuses `key`: `what` it is meant as, `by` what does not define it, and the close name."""
    near = closest(key, names)
    return f"{what} {key!r} is not defined by {by}" + (f"; did you mean {near}?" if near else "")


def check(what: str, keys: Iterable[str], names: Iterable[str], *, by: str, prefixes: tuple[str, ...] = (),
          extra: Iterable[str] = ()) -> None:
    """BadInput (the refusal of the first unknown key, in the order given) when a key is not known."""
    names, extra = frozenset(names), frozenset(extra)
    for key in keys:
        if not known(key, names, prefixes=prefixes, extra=extra):
            raise BadInput(refusal(what, key, names | extra, by=by))
