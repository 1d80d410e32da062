"""The simulated Mdx effector: answers the geometry request, accepts moves, logs leg lengths and forces.

It listens on one TCP port (10003 unless configured; 0 picks a free one) for
the middleware. Every message from the middleware is framed: a 2-byte
big-endian length, then that many bytes holding one JSON line. The geometry
reply goes back at once as a plain JSON line.

Moves and activations are processed in arrival order by one worker, so
reading never waits for a force computation (which runs in a worker thread).
For each accepted ``moveEvent`` the log gets a ``move`` event with the raw
values, the leg lengths they mean (mm), the platform pose found by forward
kinematics (mm, degrees) and, when a force model is given, the axial forces
(N, positive = the leg pushes the platform) the six actuators need to hold
the payload at rest (``forces_error`` says why when they cannot be found).
Refused messages are logged as ``rejected`` events with the reason; nothing
is sent back (the original channel is one-way). The effector starts active;
after ``deactivate`` moves are logged as ``ignored`` until ``activate``. If
more than :data:`QUEUE_SIZE` messages wait, the oldest is dropped and logged.
A frame longer than :data:`MAX_MESSAGE_BYTES` means the stream is not framed
Mdx traffic: it is logged and that connection is closed.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from ..errors import ShiftsimError
from .geometry import Platform
from .kinematics import forward, lengths_from_raw
from .protocol import (
    FRAME_HEADER,
    ActivationRequest,
    GeometryReply,
    GeometryRequest,
    MoveEvent,
    ProtocolError,
    encode_line,
    parse_line,
)
from .service import DEFAULT_EFFECTOR_PORT, Connections, EventLog, ServiceError, bound_port, close_writer, peer_name

MAX_MESSAGE_BYTES = 4096
QUEUE_SIZE = 256
EXTENTS_TOLERANCE = 0.5  # the original middleware rounds extents to whole numbers

ForceModel = Callable[[np.ndarray], np.ndarray]
"""Leg lengths (6,) in mm -> actuator forces (6,) in N that hold the payload there."""


class Effector:
    """The effector service; :meth:`start` it, :meth:`close` it (see the module docstring)."""

    def __init__(
        self,
        platform: Platform,
        log: EventLog,
        host: str = "127.0.0.1",
        port: int = DEFAULT_EFFECTOR_PORT,
        forces: ForceModel | None = None,
        payload_kg: float | None = None,
    ):
        self.platform = platform
        self.active = True
        self._log = log
        self._host = host
        self._port = port
        self._forces = forces
        self._payload_kg = payload_kg
        self._server: asyncio.Server | None = None
        self._connections = Connections()
        self._queue: asyncio.Queue[tuple[MoveEvent | ActivationRequest, bytes]] = asyncio.Queue(QUEUE_SIZE)
        self._worker: asyncio.Task[None] | None = None
        self._threads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mdx-forces")

    @property
    def port(self) -> int:
        assert self._server is not None
        return bound_port(self._server)

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(self._serve, self._host, self._port)
        except OSError as error:
            raise ServiceError(f"effector cannot listen on {self._host}:{self._port}: {error.strerror or error}") from None
        self._worker = asyncio.create_task(self._work())
        self._log.write(
            "listening", host=self._host, port=self.port, geometry=self.platform.reply_fields(),
            payload_kg=self._payload_kg,
        )

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._connections.close_all()
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
        self._threads.shutdown(wait=False, cancel_futures=True)
        if self._server is not None:
            await self._server.wait_closed()
        self._log.write("stopped")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.track(writer)
        peer = peer_name(writer)
        self._log.write("connected", peer=peer)
        try:
            while True:
                header = await reader.readexactly(FRAME_HEADER.size)
                (size,) = FRAME_HEADER.unpack(header)
                if size > MAX_MESSAGE_BYTES:
                    self._log.write(
                        "rejected",
                        reason=f"frame length {size} exceeds {MAX_MESSAGE_BYTES} bytes: the stream is not framed "
                        "Mdx messages (expected a 2-byte big-endian length, then a JSON line); closing",
                        peer=peer,
                    )
                    break
                reply = self.handle_message(await reader.readexactly(size))
                if reply is not None:
                    writer.write(reply)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            await close_writer(writer)
            self._log.write("disconnected", peer=peer)

    def handle_message(self, payload: bytes) -> bytes | None:
        """Act on one framed message; the bytes to send back, if any."""
        try:
            message = parse_line(payload, self.platform)
        except ProtocolError as error:
            self._reject(error.message, payload)
            return None
        if isinstance(message, GeometryRequest):
            self._log.write("geometry_request")
            return encode_line(GeometryReply(self.platform, message.id))
        if isinstance(message, (ActivationRequest, MoveEvent)):
            if self._queue.full():
                _, oldest = self._queue.get_nowait()
                self._reject(f"more than {QUEUE_SIZE} messages waiting; dropped the oldest", oldest)
            self._queue.put_nowait((message, payload))
        else:
            self._reject(
                f"the effector does not accept {type(message).__name__}; expected moveEvent, geometry, "
                "activate or deactivate",
                payload,
            )
        return None

    async def _work(self) -> None:
        """Process queued moves and activations in arrival order."""
        while True:
            message, payload = await self._queue.get()
            if isinstance(message, ActivationRequest):
                self.active = message.active
                self._log.write("activate" if message.active else "deactivate")
            else:
                await self._move(message, payload)

    async def _move(self, event: MoveEvent, payload: bytes) -> None:
        expected = np.array(self.platform.extents())
        if not np.allclose(event.extents, expected, rtol=0.0, atol=EXTENTS_TOLERANCE):
            self._reject(f"extents {list(event.extents)} do not match this effector's {expected.tolist()}", payload)
            return
        if not self.active:
            self._log.write("ignored", reason="deactivated", rawArgs=list(event.raw_args))
            return
        lengths = lengths_from_raw(self.platform, np.array(event.raw_args))
        pose = forward(self.platform, lengths)
        record: dict[str, object] = {
            "rawArgs": list(event.raw_args),
            "xyzrpyArgs": list(event.xyzrpy_args),
            "lengths_mm": lengths.tolist(),
            "pose_mm_deg": pose.xyzrpy_real.tolist() if pose.converged else None,
            "pose_status": pose.status,
        }
        if self._forces is not None and pose.converged:
            loop = asyncio.get_running_loop()
            try:
                forces = await loop.run_in_executor(self._threads, self._forces, lengths)
                record["forces_N"] = np.asarray(forces).tolist()
            except ShiftsimError as error:
                record["forces_error"] = str(error)
            except Exception as error:  # a failing force model must not stop the effector
                record["forces_error"] = f"{type(error).__name__}: {error}"
        self._log.write("move", **record)

    def _reject(self, reason: str, payload: bytes) -> None:
        self._log.write("rejected", reason=reason, message=payload.decode("utf-8", "replace").strip()[:500])
