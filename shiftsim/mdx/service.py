"""What the Mdx middleware and effector services share: the event log and the signal-driven run.

Each service writes its log as JSON lines, one event per line:
``{"event": "<name>", "time": <unix seconds>, ...fields}``, flushed at once so
a reader (a test, ``tail -f``) sees every event as it happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from typing import IO, Any, Protocol

from ..errors import ShiftsimError
from ..jsonio import dumps


DEFAULT_CLIENT_PORT = 10002
DEFAULT_EFFECTOR_PORT = 10003
DEFAULT_WATCH_PORT = 10004


class ServiceError(ShiftsimError):
    """A service could not start or keep running (port in use, effector unreachable, ...)."""

    exit_code = 1


LOG_RATE_PER_S = 10.0
"""Events of one throttled kind (:data:`THROTTLED_EVENTS`) written per second, on average."""

LOG_BURST = 100
"""Events of one throttled kind that may be written at once before :data:`LOG_RATE_PER_S` applies."""

THROTTLED_EVENTS = frozenset({"rejected", "client_refused", "effector_message"})
"""Events a peer can cause with a few bytes each (a junk line, a connection attempt): throttled."""

MAX_LOG_BYTES = 256 * 2**20
"""Bytes an event log writes at most; then one ``log_full`` event, and only ``stopped`` after it."""


class EventLog:
    """JSON-lines event log on a text stream, bounded in rate and size.

    Events a peer causes cheaply (:data:`THROTTLED_EVENTS`) pass a token bucket
    per kind (:data:`LOG_BURST` at once, :data:`LOG_RATE_PER_S` per second after
    that); the ones dropped are counted, and the count is written as
    ``"suppressed": n`` on the next event of that kind that passes and, for all
    kinds, on the ``stopped`` event. After :data:`MAX_LOG_BYTES` bytes the log
    writes one ``log_full`` event and then only ``stopped``.
    """

    def __init__(self, stream: IO[str], clock: Any = time.time, monotonic: Any = time.monotonic,
                 rate_per_s: float = LOG_RATE_PER_S, burst: int = LOG_BURST, max_bytes: int = MAX_LOG_BYTES):
        self._stream = stream
        self._clock = clock
        self._monotonic = monotonic
        self._rate_per_s, self._burst, self._max_bytes = rate_per_s, burst, max_bytes
        self._tokens: dict[str, tuple[float, float]] = {}  # kind -> (tokens, monotonic time of the count)
        self._suppressed: dict[str, int] = {}
        self._written = 0
        self._full = False

    def write(self, event: str, **fields: Any) -> None:
        if event in THROTTLED_EVENTS and not self._take_token(event):
            self._suppressed[event] = self._suppressed.get(event, 0) + 1
            return
        if event == "stopped":
            if self._suppressed:
                fields["suppressed"] = dict(self._suppressed)
        elif event in self._suppressed:
            fields["suppressed"] = self._suppressed.pop(event)
        if self._full and event != "stopped":
            return
        record = {"event": event, "time": round(self._clock(), 6), **fields}
        text = dumps(record, indent=False).decode("utf-8")
        if not self._full and self._written + len(text) > self._max_bytes and event != "stopped":
            self._full = True
            text = dumps({"event": "log_full", "time": round(self._clock(), 6), "max_bytes": self._max_bytes},
                         indent=False).decode("utf-8")
        self._written += len(text)
        self._stream.write(text)
        self._stream.flush()

    def _take_token(self, event: str) -> bool:
        now = self._monotonic()
        tokens, then = self._tokens.get(event, (float(self._burst), now))
        tokens = min(float(self._burst), tokens + (now - then) * self._rate_per_s)
        if tokens < 1.0:
            self._tokens[event] = (tokens, now)
            return False
        self._tokens[event] = (tokens - 1.0, now)
        return True


class Service(Protocol):
    async def start(self) -> None: ...

    async def close(self) -> None: ...


STOP_GRACE_S = 5.0
FORCED_EXIT_CODE = 1


async def run_until_signalled(service: Service, grace_s: float = STOP_GRACE_S) -> None:
    """Start ``service``, run until SIGINT or SIGTERM, then close it cleanly.

    The signal handlers are plain Python ones, which run between any two
    bytecodes of the main thread even while the event loop is busy; each asks
    the loop to stop and arms a timer: should the service not have closed
    ``grace_s`` seconds later (a handler stuck, a peer holding ``close`` up),
    the process ends with exit code :data:`FORCED_EXIT_CODE` and a line on
    stderr. A signal therefore always stops the service.
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    timers: list[threading.Timer] = []

    def request_stop(number: int, _frame: object) -> None:
        loop.call_soon_threadsafe(stop.set)
        timer = threading.Timer(grace_s, _force_exit, (signal.Signals(number).name, grace_s))
        timer.daemon = True
        timer.start()
        timers.append(timer)

    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, request_stop) for number in signals}
    try:
        await service.start()
        await stop.wait()
    finally:
        try:
            await service.close()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
            for timer in timers:
                timer.cancel()


def _force_exit(name: str, grace_s: float) -> None:
    sys.stderr.write(f"shiftsim mdx: the service did not stop within {grace_s:g} s of {name}; exiting\n")
    sys.stderr.flush()
    os._exit(FORCED_EXIT_CODE)


def bound_port(server: asyncio.Server) -> int:
    """The port a listening server got (useful after asking for port 0)."""
    return int(server.sockets[0].getsockname()[1])


def peer_name(writer: asyncio.StreamWriter) -> str:
    """``host:port`` of a connection's other end."""
    peer = writer.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)


CLOSE_TIMEOUT_S = 1.0
"""Seconds a closing connection may take to send what is buffered before it is aborted."""


async def close_writer(writer: asyncio.StreamWriter) -> None:
    """Close a connection, ignoring a peer that already went away; abort it if a peer that does not read holds
    its buffered bytes up for :data:`CLOSE_TIMEOUT_S`."""
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), CLOSE_TIMEOUT_S)
    except ConnectionError:
        pass
    except asyncio.TimeoutError:
        writer.transport.abort()


class Connections:
    """The handler tasks of a server's open connections, with their writers, so that a service can close them.

    :meth:`close_all` aborts every connection's transport, so each handler sees its stream end (an empty read or
    a ``ConnectionError``) and returns as it does when a peer leaves. Cancelling the handlers instead makes
    asyncio's stream callback print a ``CancelledError`` traceback for each (Python 3.11).
    """

    def __init__(self) -> None:
        self._writers: dict[asyncio.Task[Any], asyncio.StreamWriter] = {}

    def track(self, writer: asyncio.StreamWriter) -> None:
        """Register the running handler task and its connection's writer."""
        task = asyncio.current_task()
        assert task is not None
        self._writers[task] = writer
        task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task[Any]) -> None:
        self._writers.pop(task, None)

    async def close_all(self, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """Abort every open connection and wait for its handler; cancel a handler still running after
        ``timeout_s``."""
        tasks = list(self._writers)
        for writer in list(self._writers.values()):
            writer.transport.abort()
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=timeout_s)
        for task in pending:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class LineTooLong(Exception):
    """A line longer than the stream's limit arrived; it has been discarded."""


async def read_line(reader: asyncio.StreamReader) -> bytes:
    """The next line (with its newline; the last may lack one); b"" at the end of the stream.

    A line longer than the reader's limit is read to its end and discarded,
    then :class:`LineTooLong` is raised, so the next call starts on a fresh line.
    """
    try:
        return await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as end:
        return end.partial
    except asyncio.LimitOverrunError as overrun:
        consumed = overrun.consumed
    while True:
        await reader.readexactly(consumed)
        try:
            await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError:
            pass
        except asyncio.LimitOverrunError as overrun:
            consumed = overrun.consumed
            continue
        raise LineTooLong
