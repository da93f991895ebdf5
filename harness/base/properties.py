"""Java properties files written from settings: one `key=value` line per setting, and never a setting that could
write another line (a newline or any other control character in a key or a value: `listeners` and every other
property of the file would then be anyone's to set).

The plan refuses such a setting before anything starts (harness/plan/config.py); the writers refuse it again, so a
setting that reaches them some other way never reaches a broker or a worker.
"""
from __future__ import annotations

import unicodedata

from harness.base.errors import BadInput


def control_char(text: str) -> str | None:
    """The first control character of `text` (a newline, a tab, NUL, DEL, a C1 control, a line or paragraph
    separator), as Python writes it (`'\\n'`), or None."""
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            return repr(ch)
    return None


def setting_problem(key, value) -> str | None:
    """Why `key=value` cannot be a setting line (a control character in either; a key with `=`, `:` or a space,
    which a properties reader splits), or None."""
    k, v = str(key), str(value)
    if (bad := control_char(k)) is not None:
        return f"its key holds the control character {bad}"
    if (bad := control_char(v)) is not None:
        return f"its value holds the control character {bad}"
    if any(c in k for c in "=: ") or k.startswith(("#", "!")):
        return "its key holds '=', ':', a space or starts a comment"
    return None


def properties_text(props: dict, *, what: str) -> str:
    """The properties file's text of `props` (`what` names the file in the refusal); BadInput when a setting could
    write another line."""
    for k, v in props.items():
        if (why := setting_problem(k, v)) is not None:
            raise BadInput(f"{what}: refused setting {str(k)[:60]!r}: {why}")
    return "".join(f"{k}={v}\n" for k, v in props.items())
