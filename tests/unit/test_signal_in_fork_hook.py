"""The harness's Ctrl-C handler: a signal that lands in one of logging's fork hooks is delivered again after it.

A clean clone's `./dev test` once had `harness run member-kill --repeat 3` ignore its Ctrl-C for 120 s: the SIGINT
arrived while a member was being started, inside logging's `_releaseLock` (a fork hook: `Proc.spawn` passes a
preexec_fn), where Python ignores the KeyboardInterrupt ("Exception ignored in: <function _releaseLock>") and
logging's lock stays held.
"""
import signal
import sys

import pytest

from harness.base import procs


def _frame_in(name: str, module: str):
    """A real frame of a function called `name` whose globals are module `module`'s."""
    code = f"def {name}():\n    return sys._getframe()\n"
    scope = {"__name__": module, "sys": sys}
    exec(code, scope)
    return scope[name]()


def test_a_signal_in_loggings_fork_hook_is_delivered_again_after_it(monkeypatch):
    again = []
    monkeypatch.setattr(procs._thread, "interrupt_main", lambda signum: again.append(signum))
    for hook in ("_releaseLock", "_acquireLock"):
        procs.interrupt(signal.SIGINT, _frame_in(hook, "logging"))  # no KeyboardInterrupt raised in the hook
    assert again == [signal.SIGINT, signal.SIGINT]
    procs.interrupt(signal.SIGTERM, _frame_in("_releaseLock", "logging"))
    assert again[-1] == signal.SIGTERM


def test_a_signal_anywhere_else_raises_keyboardinterrupt_at_once(monkeypatch):
    again = []
    monkeypatch.setattr(procs._thread, "interrupt_main", lambda signum: again.append(signum))
    with pytest.raises(KeyboardInterrupt):
        procs.interrupt(signal.SIGINT, sys._getframe())
    with pytest.raises(KeyboardInterrupt, match="signal 15"):
        procs.interrupt(signal.SIGTERM, _frame_in("_releaseLock", "mine"))  # a function of that name elsewhere
    with pytest.raises(KeyboardInterrupt):
        procs.interrupt(signal.SIGINT, None)
    assert again == []


def test_the_redelivered_signal_reaches_the_main_thread_once_the_hook_returned():
    """Real delivery: the handler installed, a SIGINT 'landing' in logging's hook is raised after it returns."""
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        procs.install_signal_handlers()
        with pytest.raises(KeyboardInterrupt):
            procs.interrupt(signal.SIGINT, _frame_in("_releaseLock", "logging"))
            for _ in range(1000):  # the pending signal is handled at the next check of the eval loop
                sum(range(10))
    finally:
        for s, h in old.items():
            signal.signal(s, h)
