"""Ctrl-C and SIGTERM as an exception, and a section they cannot cut in two.

``shiftsim run`` keeps what it solved when it is stopped: inside
:func:`signals_raise`, SIGINT and SIGTERM raise :class:`Interrupted` in the main
thread (wherever it is), the caller writes what it has and exits with
``128 + signal`` (130 for SIGINT, 143 for SIGTERM). Inside :func:`signals_deferred`
(the few renames that swap a result set into place) a signal is held back and
delivered when the section ends, so it never splits the set.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from types import FrameType
from typing import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """The run was stopped by a signal (a BaseException, like KeyboardInterrupt, so no ``except Exception``
    swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _raiser(owner: int):
    """The handler that raises :class:`Interrupted` in process ``owner``. A process forked from it (a
    worker of a local process pool) inherits the handler but not the job: there the signal takes its
    default action (the process ends), so a worker never survives the signal its pool sends to stop it."""

    def handle(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != owner:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Interrupted(signum)

    return handle


@contextmanager
def _handlers(handler) -> Iterator[None]:
    """Install ``handler`` for SIGINT and SIGTERM inside the block (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


@contextmanager
def signals_raise() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` inside the block."""
    with _handlers(_raiser(os.getpid())):
        yield


@contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM received inside the block are delivered (once each) when it ends."""
    held: list[int] = []
    with _handlers(lambda signum, frame: held.append(signum)):
        yield
    for signum in dict.fromkeys(held):
        signal.raise_signal(signum)
