"""One exception tree: bad input and set-up failures apart from indeterminate outcomes."""


class HarnessError(Exception):
    """Base of every error the harness raises on purpose."""

    exit_code = 2


class BadInput(HarnessError):
    """The user asked for something that does not exist or cannot work (exit 2)."""


class HistoryNotWhole(BadInput):
    """A run directory's history is torn, missing a file or unreadable (harness/record/intact.py): the run is
    incomplete, never judged (exit 2)."""


class SetupError(HarnessError):
    """A tool is missing or a part could not be set up (exit 2)."""


class Indeterminate(HarnessError):
    """The run could not reach a verdict (a part failed mid-run); never a pass."""
