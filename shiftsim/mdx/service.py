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


class EventLog:
    """JSON-lines event log on a text stream."""

    def __init__(self, stream: IO[str], clock: Any = time.time):
        self._stream = stream
        self._clock = clock

    def write(self, event: str, **fields: Any) -> None:
        record = {"event": event, "time": round(self._clock(), 6), **fields}
        self._stream.write(dumps(record, indent=False).decode("utf-8"))
        self._stream.flush()


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


async def close_writer(writer: asyncio.StreamWriter) -> None:
    """Close a connection, ignoring a peer that already went away."""
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


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
