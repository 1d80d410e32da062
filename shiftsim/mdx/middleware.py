"""The simulated Mdx middleware: client requests in, shaped moves out to watchers and an effector.

Links (all TCP; ports as the original unless configured; port 0 picks a free one):

* client port (10002): one client at a time sends line-delimited JSON requests;
  a second client is told so with an error reply and disconnected. Successful
  moves, configs and activations get no reply (as in the original); a
  ``geometry`` request gets the geometry reply; anything refused gets a
  JSON-RPC error reply and an event in the log. The service keeps running.
* watch port (10004): any number of watchers each receive every ``moveEvent``
  as one JSON line. Each watcher has its own bounded queue
  (:attr:`MiddlewareSettings.watcher_queue_size`); when a watcher falls behind
  the **oldest** queued events are dropped (counted, and logged when it leaves),
  so a slow watcher never delays the client, the effector or other watchers.
* effector (optional, HOST:PORT, default port 10003): the middleware connects
  first, sends the framed ``geometry`` request and waits up to
  :attr:`MiddlewareSettings.geometry_timeout_s` for the plain-line reply; the
  effector's geometry then replaces the file's (a difference is logged). Moves,
  ``activate`` and ``deactivate`` follow, each framed with a 2-byte big-endian
  length. If the effector goes away, that is logged and watchers keep receiving.

Moves: ``xyzrpy`` (normalized, or real units converted to normalized) passes
through :class:`~shiftsim.mdx.shaping.Shaper`, then inverse kinematics; ``raw``
bypasses shaping and gets its pose by forward kinematics. A move whose legs
fall outside actuatorLen, or whose raw values have no pose, is refused with an
error reply: nothing is sent (a refused ``xyzrpy`` has still passed through
the washout, whose state follows every request the client made).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .geometry import Platform
from .kinematics import forward, inverse, lengths_from_raw, normalized_pose, pose_scale, raw_from_lengths
from .protocol import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    ActivationRequest,
    ConfigRequest,
    GeometryReply,
    GeometryRequest,
    Message,
    MoveEvent,
    ProtocolError,
    RawRequest,
    XyzrpyRequest,
    encode_line,
    frame,
    parse_line,
)
from .service import (
    DEFAULT_CLIENT_PORT,
    DEFAULT_WATCH_PORT,
    EventLog,
    LineTooLong,
    Connections,
    ServiceError,
    bound_port,
    close_writer,
    peer_name,
    read_line,
)
from .shaping import Shaper

@dataclass(frozen=True)
class MiddlewareSettings:
    """Where the middleware listens and connects, and its time and queue limits."""

    host: str = "127.0.0.1"
    client_port: int = DEFAULT_CLIENT_PORT
    watch_port: int = DEFAULT_WATCH_PORT
    effector: tuple[str, int] | None = None
    geometry_timeout_s: float = 5.0
    effector_timeout_s: float = 5.0
    watcher_queue_size: int = 64


class _Watcher:
    """One watcher connection with a bounded drop-oldest queue and its own sender task."""

    def __init__(self, writer: asyncio.StreamWriter, queue_size: int):
        self.writer = writer
        self.peer = peer_name(writer)
        self.queue: asyncio.Queue[bytes] = asyncio.Queue(queue_size)
        self.dropped = 0
        self.sender = asyncio.create_task(self._send_all())

    def offer(self, line: bytes) -> None:
        if self.queue.full():
            self.queue.get_nowait()
            self.dropped += 1
        self.queue.put_nowait(line)

    async def _send_all(self) -> None:
        with contextlib.suppress(ConnectionError):
            while True:
                self.writer.write(await self.queue.get())
                await self.writer.drain()


class Middleware:
    """The middleware service; :meth:`start` it, :meth:`close` it (see the module docstring)."""

    def __init__(
        self,
        platform: Platform,
        log: EventLog,
        settings: MiddlewareSettings = MiddlewareSettings(),
        clock: Callable[[], float] = time.monotonic,
    ):
        self.platform = platform
        self.settings = settings
        self.shaper = Shaper(clock=clock)
        self._log = log
        self._client: asyncio.StreamWriter | None = None
        self._watchers: set[_Watcher] = set()
        self._connections = Connections()
        self._servers: list[asyncio.Server] = []
        self._effector: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._effector_monitor: asyncio.Task[None] | None = None

    @property
    def client_port(self) -> int:
        return bound_port(self._servers[0])

    @property
    def watch_port(self) -> int:
        return bound_port(self._servers[1])

    async def start(self) -> None:
        if self.settings.effector is not None:
            await self._connect_effector(*self.settings.effector)
        host = self.settings.host
        try:
            self._servers.append(await asyncio.start_server(self._serve_client, host, self.settings.client_port))
            self._servers.append(await asyncio.start_server(self._serve_watcher, host, self.settings.watch_port))
        except OSError as error:
            raise ServiceError(f"middleware cannot listen on {host}: {error.strerror or error}") from None
        self._log.write("listening", host=host, client_port=self.client_port, watch_port=self.watch_port)

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        await self._connections.close_all()
        if self._effector_monitor is not None:
            self._effector_monitor.cancel()
            await asyncio.gather(self._effector_monitor, return_exceptions=True)
        if self._effector is not None:
            await close_writer(self._effector[1])
            self._effector = None
        for server in self._servers:
            await server.wait_closed()
        self._log.write("stopped")

    # -- effector ---------------------------------------------------------

    async def _connect_effector(self, host: str, port: int) -> None:
        timeout = self.settings.geometry_timeout_s
        where = f"effector at {host}:{port}"
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, asyncio.TimeoutError) as error:
            raise ServiceError(f"cannot connect to the {where}: {getattr(error, 'strerror', None) or 'timed out'}") from None
        try:
            writer.write(frame(encode_line(GeometryRequest())))
            await writer.drain()
            line = await asyncio.wait_for(read_line(reader), timeout)
        except asyncio.TimeoutError:
            await close_writer(writer)
            raise ServiceError(f"the {where} did not answer the geometry request within {timeout:g} s") from None
        except (ConnectionError, LineTooLong) as error:
            await close_writer(writer)
            reason = "its reply is too long" if isinstance(error, LineTooLong) else str(error)
            raise ServiceError(f"the {where} failed while answering the geometry request: {reason}") from None
        try:
            if not line:
                raise ProtocolError(INVALID_REQUEST, "the connection closed without a reply")
            reply = parse_line(line, self.platform)
            if not isinstance(reply, GeometryReply):
                raise ProtocolError(INVALID_REQUEST, f"expected a geometry reply, got {line[:200]!r}")
        except ProtocolError as error:
            await close_writer(writer)
            raise ServiceError(f"the {where} gave no valid geometry: {error.message}") from None
        for warning in reply.warnings:
            self._log.write("warning", message=warning)
        if dataclasses.replace(reply.platform, name=self.platform.name) != self.platform:
            self._log.write(
                "geometry_mismatch",
                message="the effector's geometry differs from the file's; using the effector's",
                file=self.platform.reply_fields(),
                effector=reply.platform.reply_fields(),
            )
        self.platform = reply.platform
        self._effector = (reader, writer)
        self._effector_monitor = asyncio.create_task(self._monitor_effector(reader))
        self._log.write("effector_connected", address=f"{host}:{port}", geometry=self.platform.reply_fields())

    async def _monitor_effector(self, reader: asyncio.StreamReader) -> None:
        """Log whatever the effector sends after its geometry, and its disconnection."""
        with contextlib.suppress(ConnectionError):
            while True:
                try:
                    line = await read_line(reader)
                except LineTooLong:
                    self._log.write("effector_message", line="(a line too long to keep)")
                    continue
                if not line:
                    break
                self._log.write("effector_message", line=line.decode("utf-8", "replace").strip()[:500])
        self._log.write("effector_disconnected")
        await self._drop_effector()

    async def _drop_effector(self) -> None:
        if self._effector is not None:
            writer = self._effector[1]
            self._effector = None
            await close_writer(writer)

    async def _send_to_effector(self, message: Message) -> bool:
        if self._effector is None:
            return False
        writer = self._effector[1]
        try:
            writer.write(frame(encode_line(message)))
            await asyncio.wait_for(writer.drain(), self.settings.effector_timeout_s)
        except (ConnectionError, asyncio.TimeoutError) as error:
            self._log.write("effector_lost", reason=type(error).__name__)
            await self._drop_effector()
            return False
        return True

    # -- watchers ---------------------------------------------------------

    async def _serve_watcher(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.track(writer)
        watcher = _Watcher(writer, self.settings.watcher_queue_size)
        self._watchers.add(watcher)
        self._log.write("watcher_connected", peer=watcher.peer)
        try:
            # Watchers only listen; anything they send is read and discarded.
            with contextlib.suppress(ConnectionError):
                while await reader.read(4096):
                    pass
        finally:
            self._watchers.discard(watcher)
            watcher.sender.cancel()
            await asyncio.gather(watcher.sender, return_exceptions=True)
            await close_writer(writer)
            self._log.write("watcher_disconnected", peer=watcher.peer, dropped_events=watcher.dropped)

    async def _publish(self, event: MoveEvent) -> None:
        line = encode_line(event)
        for watcher in self._watchers:
            watcher.offer(line)
        sent = await self._send_to_effector(event)
        self._log.write(
            "move", rawArgs=list(event.raw_args), xyzrpyArgs=list(event.xyzrpy_args),
            watchers=len(self._watchers), effector=sent,
        )

    # -- client -----------------------------------------------------------

    async def _serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.track(writer)
        peer = peer_name(writer)
        if self._client is not None:
            self._log.write("client_refused", peer=peer, reason="another client is connected")
            error = ProtocolError(INVALID_REQUEST, "another client is connected; the middleware serves one at a time")
            with contextlib.suppress(ConnectionError):
                writer.write(encode_line(error.reply()))
                await writer.drain()
            await close_writer(writer)
            return
        self._client = writer
        self._log.write("client_connected", peer=peer)
        try:
            while True:
                try:
                    line = await read_line(reader)
                except LineTooLong:
                    reply: dict[str, Any] | None = self._refuse(
                        ProtocolError(INVALID_REQUEST, "line too long; expected one short JSON object per line"), b""
                    )
                else:
                    if not line:
                        break
                    if not line.strip():
                        continue
                    reply = await self.handle_line(line)
                if reply is not None:
                    writer.write(encode_line(reply))
                    await writer.drain()
                # a line already buffered is read without suspending: let a stop, the watchers and the effector
                # run between a flooding client's lines
                await asyncio.sleep(0)
        except ConnectionError:
            pass
        finally:
            self._client = None
            await close_writer(writer)
            self._log.write("client_disconnected", peer=peer)

    async def handle_line(self, line: bytes) -> dict[str, Any] | None:
        """Act on one client line; the reply to send back, if any."""
        try:
            message = parse_line(line, self.platform)
            if isinstance(message, XyzrpyRequest):
                await self._publish(self._xyzrpy_move(message))
                return None
            self.shaper.message_received()
            if isinstance(message, RawRequest):
                await self._publish(self._raw_move(message))
            elif isinstance(message, ConfigRequest):
                self.shaper.configure(message.settings)
                self._log.write("config", settings=message.settings)
            elif isinstance(message, ActivationRequest):
                sent = await self._send_to_effector(message)
                self._log.write("activate" if message.active else "deactivate", effector=sent)
            elif isinstance(message, GeometryRequest):
                return GeometryReply(self.platform, message.id).to_json()
            else:
                raise ProtocolError(
                    INVALID_REQUEST,
                    f"a client cannot send {type(message).__name__}; expected xyzrpy, raw, config, "
                    "activate, deactivate or geometry",
                )
        except ProtocolError as error:
            return self._refuse(error, line)
        return None

    def _refuse(self, error: ProtocolError, line: bytes) -> dict[str, Any]:
        self._log.write(
            "rejected", code=error.code, reason=error.message, line=line.decode("utf-8", "replace").strip()[:500]
        )
        return error.reply()

    def _xyzrpy_move(self, request: XyzrpyRequest) -> MoveEvent:
        args = np.asarray(request.args)
        normalized = args / pose_scale(self.platform) if request.units == "real" else args
        shaped = self.shaper.shape(normalized)
        legs = inverse(self.platform, shaped)
        if not legs.in_range.all():
            low, high = self.platform.actuator_min_mm, self.platform.actuator_max_mm
            out = ", ".join(f"leg {i} {legs.lengths_mm[i]:.1f} mm" for i in np.flatnonzero(~legs.in_range))
            raise ProtocolError(
                INVALID_PARAMS,
                f"move refused: after gains and washout the pose {np.round(shaped, 4).tolist()} needs {out}, "
                f"outside actuatorLen [{low:g}, {high:g}] mm",
            )
        return MoveEvent(tuple(legs.raw.tolist()), tuple(shaped.tolist()), tuple(self.platform.extents()))

    def _raw_move(self, request: RawRequest) -> MoveEvent:
        args = np.asarray(request.args)
        lengths = args if request.units == "real" else lengths_from_raw(self.platform, args)
        solution = forward(self.platform, lengths)
        if not solution.converged:
            raise ProtocolError(INVALID_PARAMS, f"raw move refused: {solution.message()}")
        pose = normalized_pose(self.platform, solution.xyzrpy_real)
        raw = raw_from_lengths(self.platform, lengths)
        return MoveEvent(tuple(raw.tolist()), tuple(pose.tolist()), tuple(self.platform.extents()))
