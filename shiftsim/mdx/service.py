"""What the Mdx middleware and effector services share: the event log and the signal-driven run.

Each service writes its log as JSON lines, one event per line:
``{"event": "<name>", "time": <unix seconds>, ...fields}``, flushed at once so
a reader (a test, ``tail -f``) sees every event as it happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
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


async def run_until_signalled(service: Service) -> None:
    """Start ``service``, run until SIGINT or SIGTERM, then close it cleanly."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)
    for number in signals:
        loop.add_signal_handler(number, stop.set)
    try:
        await service.start()
        await stop.wait()
    finally:
        for number in signals:
            loop.remove_signal_handler(number)
        await service.close()


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
