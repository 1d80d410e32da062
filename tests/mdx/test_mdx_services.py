"""The simulated middleware and effector on loopback: moves, watchers, the effector's log, bad input.

Every network wait is bounded (``asyncio.wait_for``), and each test's whole
coroutine runs under :data:`TEST_TIMEOUT_S`, so nothing here can hang.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import math
import os
import signal
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

import numpy as np
import orjson
import pytest

from shiftsim.formats.mdx import platform_model_spec
from shiftsim.mdx.effector import Effector
from shiftsim.mdx.geometry import CHAIR_GEOMETRY_PATH, read_platform
from shiftsim.mdx.kinematics import inverse
from shiftsim.mdx.middleware import Middleware, MiddlewareSettings, _Watcher
from shiftsim.mdx.protocol import encode_line, frame
from shiftsim.mdx.service import EventLog, LineTooLong, ServiceError, read_line
from shiftsim.commands._mdx_statics import ActuatorStatics

CHAIR, _ = read_platform()
TEST_TIMEOUT_S = 60.0
STEP_TIMEOUT_S = 10.0
RB, RP, H = 176.0, 216.0, 728.0
BASE_DEG = [140, 207, 226, 314, 334, 40]
TOP_DEG = [147, 154, 266, 274, 26, 33]
PAYLOAD_KG = 80.0


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), TEST_TIMEOUT_S))


def heave_legs(heave_mm: float) -> np.ndarray:
    """Legs of a platform raised by heave_mm (law of cosines, as in the kinematics tests)."""
    return np.array(
        [
            math.sqrt(RP**2 + RB**2 - 2 * RP * RB * math.cos(math.radians(TOP_DEG[i] - BASE_DEG[i])) + (H + heave_mm) ** 2)
            for i in range(6)
        ]
    )


def heave_forces(heave_mm: float) -> np.ndarray:
    """Two-force legs holding PAYLOAD_KG at the platform centre, raised by heave_mm (6x6 solve)."""
    top = np.array(
        [[RP * math.cos(math.radians(a)), RP * math.sin(math.radians(a)), H + heave_mm] for a in TOP_DEG]
    ) / 1000
    base = np.array([[RB * math.cos(math.radians(a)), RB * math.sin(math.radians(a)), 0.0] for a in BASE_DEG]) / 1000
    u = (top - base) / np.linalg.norm(top - base, axis=1, keepdims=True)
    centre = np.array([0.0, 0.0, (H + heave_mm) / 1000])
    matrix = np.vstack([u.T, np.cross(top - centre, u).T])
    return np.linalg.solve(matrix, [0.0, 0.0, PAYLOAD_KG * 9.81, 0.0, 0.0, 0.0])


def events(log: io.StringIO, name: str | None = None) -> list[dict[str, Any]]:
    records = [orjson.loads(line) for line in log.getvalue().splitlines()]
    return [r for r in records if name is None or r["event"] == name]


async def until(condition: Callable[[], bool], what: str, timeout_s: float = STEP_TIMEOUT_S) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    try:
        await asyncio.wait_for(poll(), timeout_s)
    except asyncio.TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def read_json(reader: asyncio.StreamReader) -> dict[str, Any]:
    line = await asyncio.wait_for(reader.readline(), STEP_TIMEOUT_S)
    assert line, "connection closed"
    return orjson.loads(line)


async def send(writer: asyncio.StreamWriter, message: dict[str, Any] | bytes) -> None:
    writer.write(message if isinstance(message, bytes) else encode_line(message))
    await asyncio.wait_for(writer.drain(), STEP_TIMEOUT_S)


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), STEP_TIMEOUT_S)


def xyzrpy(*args: float, **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "xyzrpy", "args": list(args), **extra}


class Services:
    """An effector and a middleware wired together on free loopback ports."""

    def __init__(self, **settings: Any):
        self.effector_log, self.middleware_log = io.StringIO(), io.StringIO()
        forces = ActuatorStatics(platform_model_spec(CHAIR, payload_kg=PAYLOAD_KG))
        self.effector = Effector(CHAIR, EventLog(self.effector_log), port=0, forces=forces, payload_kg=PAYLOAD_KG)
        self.settings = settings

    async def __aenter__(self) -> Services:
        await self.effector.start()
        settings = MiddlewareSettings(
            client_port=0, watch_port=0, effector=("127.0.0.1", self.effector.port), **self.settings
        )
        self.middleware = Middleware(CHAIR, EventLog(self.middleware_log), settings)
        await self.middleware.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.wait_for(self.middleware.close(), STEP_TIMEOUT_S)
        await asyncio.wait_for(self.effector.close(), STEP_TIMEOUT_S)


def test_moves_reach_watchers_and_the_effector_logs_lengths_and_forces():
    async def scenario() -> None:
        async with Services() as services:
            middleware = services.middleware
            assert events(services.effector_log, "geometry_request")
            watcher_reader, watcher = await connect(middleware.watch_port)
            client_reader, client = await connect(middleware.client_port)
            await until(lambda: events(services.middleware_log, "watcher_connected"), "the watcher")

            await send(client, xyzrpy(0, 0, 0, 0, 0, 0))
            await send(client, {"jsonrpc": "2.0", "method": "config", "washoutZ": 0.5})
            await send(client, xyzrpy(0, 0, 0.1, 0, 0, 0))  # z: 0.5*0 + 1.2*(0.1 - 0) = 0.12
            await send(client, xyzrpy(0, 0, 0.1, 0, 0, 0))  # z: 0.5*0.12 + 0 = 0.06
            await send(client, xyzrpy(0, 0, 4.0, 0, 0, 0, units="real"))  # 4 mm = 0.1: z = 0.03
            await send(client, {"jsonrpc": "2.0", "method": "raw", "args": [0, 0, 0, 0, 0, 0]})
            await send(client, {"jsonrpc": "2.0", "method": "deactivate"})
            await send(client, xyzrpy(0, 0, 0.1, 0, 0, 0))  # z: 0.015, sent but ignored by the effector
            await send(client, {"jsonrpc": "2.0", "method": "activate"})

            shaped_z = [0.0, 0.12, 0.06, 0.03]
            received = [await read_json(watcher_reader) for _ in range(6)]
            assert all(r["method"] == "moveEvent" and r["extents"] == [40, 25, 666, 790] for r in received)
            for event, z in zip(received, shaped_z):
                assert event["xyzrpyArgs"] == pytest.approx([0, 0, z, 0, 0, 0], abs=1e-12)
                legs = heave_legs(z * 40.0)
                assert event["rawArgs"] == pytest.approx(-1 + 2 * (legs - 666) / 124, abs=1e-12)
            raw_event = received[4]
            assert raw_event["rawArgs"] == [0.0] * 6
            assert inverse(CHAIR, np.array(raw_event["xyzrpyArgs"])).lengths_mm == pytest.approx([728.0] * 6, abs=1e-6)
            assert received[5]["xyzrpyArgs"][2] == pytest.approx(0.015)

            await until(lambda: events(services.effector_log, "activate"), "the effector to catch up")
            log = [e for e in events(services.effector_log) if e["event"] in ("move", "ignored", "activate", "deactivate")]
            assert [e["event"] for e in log] == ["move"] * 5 + ["deactivate", "ignored", "activate"]
            for record, z in zip(log, shaped_z):
                assert record["lengths_mm"] == pytest.approx(heave_legs(z * 40.0), abs=1e-9)
                assert record["pose_mm_deg"] == pytest.approx([0, 0, z * 40.0, 0, 0, 0], abs=1e-7)
                assert record["forces_N"] == pytest.approx(heave_forces(z * 40.0), rel=1e-7)
            assert log[4]["lengths_mm"] == pytest.approx([728.0] * 6)
            assert sum(log[4]["forces_N"]) > 0 and "forces_error" not in log[4]

            # the middleware answers a geometry request with the effector's geometry
            await send(client, {"jsonrpc": "2.0", "method": "geometry", "id": 5})
            reply = await read_json(client_reader)
            assert reply["reply"] == "geometry" and reply["id"] == 5
            assert {k: reply[k] for k in ("baseRadius", "platformAngles", "actuatorLen")} == {
                "baseRadius": 176, "platformAngles": [147, 154, 266, 274, 26, 33], "actuatorLen": [666, 790]
            }
            for stream in (client, watcher):
                stream.close()

    run(scenario)


def test_bad_messages_get_error_replies_and_the_service_keeps_running():
    async def scenario() -> None:
        async with Services() as services:
            middleware = services.middleware
            watcher_reader, watcher = await connect(middleware.watch_port)
            reader, client = await connect(middleware.client_port)
            await until(lambda: events(services.middleware_log, "watcher_connected"), "the watcher")
            bad = [
                (b"this is not json\n", -32700, "not valid JSON"),
                (b"\xff\xfe\x00garbage\n", -32700, "not valid JSON"),
                (encode_line(xyzrpy(0, 0, 0.1)), -32602, "expected an array of 6 numbers"),
                (encode_line(xyzrpy(0, 0, "up", 0, 0, 0)), -32602, "args[2] is 'up'"),
                (encode_line(xyzrpy(0, 0, 1.5, 0, 0, 0)), -32602, "args[2] is 1.5, outside [-1, 1]"),
                (encode_line({"jsonrpc": "2.0", "method": "teleport"}), -32601, "unknown method 'teleport'"),
                (encode_line({"method": "moveEvent", "rawArgs": [0] * 6, "xyzrpyArgs": [0] * 6, "extents": [40, 25, 666, 790]}),
                 -32600, "a client cannot send MoveEvent"),
                (encode_line({"method": "config", "washoutZ": 3}), -32602, "washoutZ is 3"),
                # shaped out of reach: x..pitch pass 1.2 x the change, so heave 1 and roll 1 need legs > 790 mm
                (encode_line(xyzrpy(0, 0, 1.0, 1.0, 0, 0)), -32602, "outside actuatorLen [666, 790] mm"),
            ]
            for line, code, text in bad:
                await send(client, line)
                reply = await read_json(reader)
                assert reply["error"]["code"] == code, line
                assert text in reply["error"]["message"], (line, reply)
            # a line longer than the stream limit is refused once, without losing the connection
            await send(client, b"x" * 70_000)
            await asyncio.sleep(0.05)
            await send(client, b"x" * 10_000 + b"\n")
            assert "line too long" in (await read_json(reader))["error"]["message"]
            await send(client, {"jsonrpc": "2.0", "method": "geometry"})
            assert (await read_json(reader))["reply"] == "geometry"
            # still serving: a good move reaches the watcher, and it is the first thing it gets
            await send(client, xyzrpy(0, 0, 0, 0, 0, 0))
            event = await read_json(watcher_reader)
            assert event["method"] == "moveEvent" and event["xyzrpyArgs"] == [0.0] * 6
            rejected = events(services.middleware_log, "rejected")
            assert len(rejected) == len(bad) + 1
            assert all(e["code"] < 0 and e["reason"] for e in rejected)
            # a client that leaves in the middle of a line does not disturb the next one
            client.write(b'{"jsonrpc": "2.0", "method": "xyz')
            client.close()
            await until(lambda: events(services.middleware_log, "client_disconnected"), "the disconnect")
            reader, client = await connect(middleware.client_port)
            await send(client, {"jsonrpc": "2.0", "method": "geometry"})
            assert (await read_json(reader))["reply"] == "geometry"
            client.close()
            watcher.close()

    run(scenario)


def test_a_second_client_is_refused_while_one_is_connected():
    async def scenario() -> None:
        async with Services() as services:
            port = services.middleware.client_port
            _, first = await connect(port)
            await until(lambda: events(services.middleware_log, "client_connected"), "the first client")
            second_reader, second = await connect(port)
            reply = await read_json(second_reader)
            assert "another client is connected" in reply["error"]["message"]
            assert await asyncio.wait_for(second_reader.read(), STEP_TIMEOUT_S) == b""  # closed by the middleware
            first.close()
            second.close()

    run(scenario)


@pytest.mark.slow
def test_a_watcher_that_never_reads_does_not_hold_up_the_others():
    async def scenario() -> None:
        async with Services(watcher_queue_size=4) as services:
            middleware = services.middleware
            _, stalled = await connect(middleware.watch_port)  # never reads
            good_reader, good = await connect(middleware.watch_port)
            stalled.write(b"watchers may say anything; it is discarded\n")
            await until(lambda: len(events(services.middleware_log, "watcher_connected")) == 2, "both watchers")
            _, client = await connect(middleware.client_port)
            count = 200
            for k in range(count):
                await send(client, xyzrpy(0, 0, 0, 0, 0, 0.5 * math.sin(k)))
            received = [await read_json(good_reader) for _ in range(count)]
            assert len(received) == count and all(r["method"] == "moveEvent" for r in received)
            stalled.close()
            await until(lambda: events(services.middleware_log, "watcher_disconnected"), "the stalled watcher leaving")
            assert "dropped_events" in events(services.middleware_log, "watcher_disconnected")[0]
            client.close()
            good.close()

    run(scenario)


def test_a_lagging_watcher_loses_its_oldest_events():
    class StalledWriter:
        def __init__(self) -> None:
            self.written: list[bytes] = []
            self.never = asyncio.Event()

        def write(self, data: bytes) -> None:
            self.written.append(data)

        async def drain(self) -> None:
            await self.never.wait()

        def get_extra_info(self, name: str) -> Any:
            return ("127.0.0.1", 1)

    async def scenario() -> None:
        writer = StalledWriter()
        watcher = _Watcher(writer, queue_size=4)  # type: ignore[arg-type]
        watcher.offer(b"0")
        await asyncio.sleep(0)  # the sender takes "0" and waits on drain
        for k in range(1, 10):
            watcher.offer(str(k).encode())
        assert writer.written == [b"0"]
        assert [watcher.queue.get_nowait() for _ in range(4)] == [b"6", b"7", b"8", b"9"]
        assert watcher.dropped == 5
        watcher.sender.cancel()

    run(scenario)


def test_read_line_discards_an_over_long_line_whole():
    async def scenario() -> None:
        reader = asyncio.StreamReader(limit=16)
        reader.feed_data(b"a" * 40)  # no newline yet: the overrun finds no separator
        pending = asyncio.create_task(read_line(reader))
        await asyncio.sleep(0.01)
        reader.feed_data(b"b" * 30 + b"\nnext\n" + b"c" * 40 + b"\nlast")
        reader.feed_eof()
        with pytest.raises(LineTooLong):
            await pending
        assert await read_line(reader) == b"next\n"
        with pytest.raises(LineTooLong):  # this time the separator is in the buffer
            await read_line(reader)
        assert await read_line(reader) == b"last"
        assert await read_line(reader) == b""

    run(scenario)


def test_the_effector_logs_and_survives_bad_frames():
    async def scenario() -> None:
        log = io.StringIO()
        effector = Effector(CHAIR, EventLog(log), port=0)
        await effector.start()
        try:
            reader, writer = await connect(effector.port)
            good = {"jsonrpc": "2.0", "method": "moveEvent", "rawArgs": [0.0] * 6, "xyzArgs": [0.0] * 6,
                    "extents": [40, 25, 666, 790]}
            for payload in (
                b"not json\n",
                encode_line(xyzrpy(0, 0, 0, 0, 0, 0)),
                encode_line({**good, "extents": [40, 25, 600, 800]}),
                encode_line({**good, "rawArgs": [0, 0, 0, 0, 0, 7]}),
                encode_line(good),
            ):
                await send(writer, frame(payload))
            await until(lambda: events(log, "move"), "the good move")
            reasons = [e["reason"] for e in events(log, "rejected")]
            assert len(reasons) == 4
            assert "not valid JSON" in reasons[0]
            assert "does not accept XyzrpyRequest" in reasons[1]
            assert "extents [40.0, 25.0, 600.0, 800.0] do not match" in reasons[2]
            assert "rawArgs[5] is 7" in reasons[3]
            move = events(log, "move")[0]
            assert move["lengths_mm"] == [728.0] * 6 and "forces_N" not in move  # no force model given
            # an unframed line reads as a huge length: logged, connection closed
            await send(writer, b'{"jsonrpc": "2.0", "method": "geometry"}\n')
            assert await asyncio.wait_for(reader.read(), STEP_TIMEOUT_S) == b""
            assert "not framed Mdx messages" in events(log, "rejected")[-1]["reason"]
            # and the effector still answers the next connection
            reader, writer = await connect(effector.port)
            await send(writer, frame(encode_line({"jsonrpc": "2.0", "method": "geometry"})))
            assert (await read_json(reader))["baseRadius"] == 176
            writer.close()
        finally:
            await asyncio.wait_for(effector.close(), STEP_TIMEOUT_S)

    run(scenario)


def test_the_effector_geometry_replaces_the_file_geometry():
    async def scenario() -> None:
        effector_platform = dataclasses.replace(CHAIR, max_translation_mm=50.0, name="other")
        effector = Effector(effector_platform, EventLog(io.StringIO()), port=0)
        await effector.start()
        log = io.StringIO()
        settings = MiddlewareSettings(client_port=0, watch_port=0, effector=("127.0.0.1", effector.port))
        middleware = Middleware(CHAIR, EventLog(log), settings)
        try:
            await middleware.start()
            mismatch = events(log, "geometry_mismatch")[0]
            assert mismatch["file"]["maxTranslation"] == 40 and mismatch["effector"]["maxTranslation"] == 50
            watcher_reader, watcher = await connect(middleware.watch_port)
            _, client = await connect(middleware.client_port)
            await until(lambda: events(log, "watcher_connected"), "the watcher")
            await send(client, xyzrpy(0, 0, 0.1, 0, 0, 0))
            event = await read_json(watcher_reader)
            assert event["extents"] == [50, 25, 666, 790]
            assert event["rawArgs"] == pytest.approx(-1 + 2 * (heave_legs(0.12 * 50) - 666) / 124, abs=1e-12)
            client.close()
            watcher.close()
        finally:
            await asyncio.wait_for(middleware.close(), STEP_TIMEOUT_S)
            await asyncio.wait_for(effector.close(), STEP_TIMEOUT_S)

    run(scenario)


@pytest.mark.slow
def test_middleware_start_fails_clearly_without_a_geometry_reply():
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # never answers

    async def scenario() -> None:
        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        settings = MiddlewareSettings(client_port=0, watch_port=0, effector=("127.0.0.1", port), geometry_timeout_s=0.3)
        middleware = Middleware(CHAIR, EventLog(io.StringIO()), settings)
        with pytest.raises(ServiceError, match=r"did not answer the geometry request within 0.3 s"):
            await middleware.start()
        await middleware.close()
        server.close()
        await server.wait_closed()
        # nothing listens there any more
        with pytest.raises(ServiceError, match=rf"cannot connect to the effector at 127.0.0.1:{port}"):
            await Middleware(CHAIR, EventLog(io.StringIO()), settings).start()

    run(scenario)


@pytest.mark.slow
def test_cli_services_run_as_processes_and_stop_on_sigterm_and_sigint(tmp_path: Path):
    async def start(*args: str, log: Path | None = None) -> tuple[asyncio.subprocess.Process, dict[str, Any]]:
        """Start ``shiftsim mdx ARGS``; return it and the first event of its log (stdout or ``log``)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "shiftsim.cli", "mdx", *args, *(["--log", str(log)] if log else []),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        assert process.stdout is not None
        if log is None:
            line = await asyncio.wait_for(process.stdout.readline(), 30)
        else:
            await until(lambda: log.exists() and log.read_text().endswith("\n") or process.returncode is not None,
                        "the first log line", timeout_s=30)
            line = log.read_bytes().split(b"\n")[0] if log.exists() else b""
        assert line, (await process.stderr.read()).decode()  # type: ignore[union-attr]
        return process, orjson.loads(line)

    async def scenario() -> None:
        processes: list[asyncio.subprocess.Process] = []
        try:
            log_path = tmp_path / "effector.jsonl"
            effector, listening = await start(
                "effector", "--geometry", str(CHAIR_GEOMETRY_PATH), "--port", "0", "--payload", "80", log=log_path
            )
            processes.append(effector)
            assert listening["event"] == "listening" and listening["payload_kg"] == 80
            middleware, ports = await start(
                "serve", "--geometry", str(CHAIR_GEOMETRY_PATH), "--client-port", "0", "--watch-port", "0",
                "--effector", f"127.0.0.1:{listening['port']}",
            )
            processes.append(middleware)
            assert ports["event"] == "effector_connected"
            ports = orjson.loads(await asyncio.wait_for(middleware.stdout.readline(), 30))  # type: ignore[union-attr]
            assert ports["event"] == "listening"
            watcher_reader, watcher = await connect(ports["watch_port"])
            _, client = await connect(ports["client_port"])
            await asyncio.sleep(0.2)  # let the middleware register the watcher
            await send(client, xyzrpy(0, 0, 0, 0, 0, 0))
            event = await read_json(watcher_reader)
            assert event["rawArgs"] == pytest.approx(-1 + 2 * (heave_legs(0.0) - 666) / 124)
            await until(lambda: log_path.exists() and '"event":"move"' in log_path.read_text(), "the effector's move")
            client.close()
            watcher.close()
            for process, number in ((middleware, signal.SIGTERM), (effector, signal.SIGINT)):
                process.send_signal(number)
                assert await asyncio.wait_for(process.wait(), 30) == 0
            assert '"event":"stopped"' in (await middleware.stdout.read()).decode()  # type: ignore[union-attr]
            records = [orjson.loads(line) for line in log_path.read_text().splitlines()]
            assert records[-1]["event"] == "stopped"
            move = next(r for r in records if r["event"] == "move")
            assert move["forces_N"] == pytest.approx(heave_forces(0.0), rel=1e-7)
        finally:
            for process in processes:
                if process.returncode is None:
                    process.kill()
                    await process.wait()

    run(scenario)
