"""Hostile but well-formed Mdx traffic: gains that once froze the middleware, big JSON-RPC ids, stopping.

Issue 17, items 3 and the big-integer id: a ``config`` with ``gainYaw`` 1e17 and
two yaw moves made the yaw wrap loop run for ever, blocking the event loop so
that no client was answered and SIGTERM no longer stopped the service.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from shiftsim.mdx.geometry import CHAIR_GEOMETRY_PATH, read_platform
from shiftsim.mdx.protocol import GeometryRequest, encode_line, parse_line
from shiftsim.mdx.shaping import MAX_GAIN, ShapingConfig, Shaper, config_problems, wrap_yaw_change

ROOT = Path(__file__).resolve().parents[2]
CHAIR, _ = read_platform()
STEP_TIMEOUT_S = 20.0  # only catches hangs


def loop_wrap(delta: float) -> float:
    """The original's wrap, kept here as the reference (fine for moderate values only)."""
    while delta < -1.0:
        delta += 2.0
    while delta > 1.0:
        delta -= 2.0
    return delta


def test_the_constant_time_wrap_agrees_with_the_original_loops():
    rng = random.Random(17)
    values = [rng.uniform(-50.0, 50.0) for _ in range(2000)]
    values += [-3.0, -2.0, -1.5, -1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.999, 5.0, 1 + 2**-52, -1 - 2**-52]
    values += [k + f for k in range(-9, 10, 2) for f in (-1e-12, 0.0, 1e-12)]  # next to odd integers
    for delta in values:
        assert wrap_yaw_change(delta) == pytest.approx(loop_wrap(delta), abs=1e-12), delta
        assert -1.0 <= wrap_yaw_change(delta) <= 1.0


def test_huge_yaw_changes_wrap_at_once():
    """The reproducer itself (gainYaw 1e17, two yaw moves), run in a thread that must finish."""
    shaper = Shaper(ShapingConfig(gains=np.array([1, 1, 1, 1, 1, 1e17])))
    outputs: list[np.ndarray] = []

    def two_moves() -> None:
        outputs.append(shaper.shape(np.array([0, 0, 0, 0, 0, 0.3])))
        outputs.append(shaper.shape(np.array([0, 0, 0, 0, 0, -0.7])))
        outputs.append(shaper.shape(np.array([0, 0, 0, 0, 0, 1.0])))

    worker = threading.Thread(target=two_moves, daemon=True)
    worker.start()
    worker.join(STEP_TIMEOUT_S)
    assert not worker.is_alive(), "the yaw wrap did not finish"
    assert len(outputs) == 3 and all(abs(out[5]) <= 2.0 for out in outputs)
    assert wrap_yaw_change(1e300) in (-1.0, 0.0, 1.0)  # every double this large is a multiple of 2


def test_gains_beyond_the_bound_are_refused_with_the_bound():
    assert config_problems({"gainYaw": MAX_GAIN, "gain": -MAX_GAIN}) == []
    assert config_problems({"gainYaw": 1e17}) == [f"gainYaw is 1e+17, expected a gain from -{MAX_GAIN:g} to {MAX_GAIN:g}"]
    assert "gain is -101" in config_problems({"gain": -101})[0]


def test_a_big_integer_id_is_echoed_exactly():
    big = 123456789012345678901234567890
    line = b'{"jsonrpc": "2.0", "method": "geometry", "id": %d}' % big
    message = parse_line(line, CHAIR)
    assert isinstance(message, GeometryRequest)
    assert orjson.loads(encode_line(message))["id"] != big  # orjson reads the echo back as a float...
    assert b'"id":%d' % big in encode_line(message)  # ...but the text on the wire has every digit
    assert b'"id":-%d}' % big in encode_line({"id": parse_line(line.replace(b": %d" % big, b": -%d" % big), CHAIR).id})
    small = parse_line(b'{"method": "geometry", "id": 7}', CHAIR)
    assert small.id == 7 and isinstance(small.id, int)
    assert parse_line(b'{"method": "geometry", "id": 2.5}', CHAIR).id == 2.5


def _start_middleware() -> tuple[subprocess.Popen, dict[str, Any]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "shiftsim.cli", "mdx", "serve", "--geometry", str(CHAIR_GEOMETRY_PATH),
         "--client-port", "0", "--watch-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert process.stdout is not None
    listening = orjson.loads(process.stdout.readline())
    assert listening["event"] == "listening", listening
    return process, listening


async def _exchange(port: int, lines: list[bytes], replies: int) -> list[bytes]:
    """Send ``lines`` as one client, read ``replies`` reply lines (raw: orjson would turn a big id into a float)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), STEP_TIMEOUT_S)
    for line in lines:
        writer.write(line)
    await asyncio.wait_for(writer.drain(), STEP_TIMEOUT_S)
    answers = [await asyncio.wait_for(reader.readline(), STEP_TIMEOUT_S) for _ in range(replies)]
    writer.close()
    return answers


@pytest.mark.slow
def test_hostile_config_then_another_client_is_answered_and_sigterm_stops_the_service():
    process, listening = _start_middleware()
    try:
        port = listening["client_port"]
        config = b'{"jsonrpc": "2.0", "method": "config", "gainYaw": 1e17, "id": 1}\n'
        extreme = b'{"jsonrpc": "2.0", "method": "config", "gainYaw": 100, "gain": 100}\n'
        yaw = [b'{"jsonrpc": "2.0", "method": "xyzrpy", "args": [0, 0, 0, 0, 0, %g]}\n' % v for v in (0.123456, -0.5, 1)]
        geometry = b'{"jsonrpc": "2.0", "method": "geometry", "id": 99999999999999999999999}\n'
        refused, reply = asyncio.run(_exchange(port, [config, extreme, *yaw, geometry], 2))
        error = orjson.loads(refused)["error"]
        assert error["code"] == -32602 and "gainYaw is 1e+17, expected a gain from -100 to 100" in error["message"]
        # the largest gains and yaw changes of thousands were shaped at once and accepted (a refused move would
        # have been answered before the geometry), and the big id comes back digit for digit
        assert orjson.loads(reply)["reply"] == "geometry" and reply.endswith(b',"id":99999999999999999999999}\n')
        time.sleep(0.2)  # the middleware notices the first client left
        (second,) = asyncio.run(_exchange(port, [geometry], 1))
        assert orjson.loads(second)["reply"] == "geometry"
        process.send_signal(signal.SIGTERM)
        assert process.wait(STEP_TIMEOUT_S) == 0
        records = [orjson.loads(line) for line in process.stdout.read().splitlines()]  # type: ignore[union-attr]
        assert [r["event"] for r in records].count("client_connected") == 2 and records[-1]["event"] == "stopped"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.slow
def test_a_signal_stops_a_service_whose_loop_is_stuck():
    """Should a handler ever block the loop, SIGTERM still ends the process after the grace period."""
    script = (
        "import asyncio, sys\n"
        "from shiftsim.mdx.service import run_until_signalled\n"
        "class Stuck:\n"
        "    async def start(self):\n"
        "        asyncio.get_running_loop().call_later(0.1, self.spin)\n"
        "    def spin(self):\n"
        "        print('spinning', flush=True)\n"
        "        while True:\n"
        "            pass\n"
        "    async def close(self):\n"
        "        pass\n"
        "asyncio.run(run_until_signalled(Stuck(), grace_s=0.5))\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert process.stdout is not None and process.stdout.readline() == b"spinning\n"
        process.send_signal(signal.SIGTERM)
        assert process.wait(STEP_TIMEOUT_S) == 1
        assert "did not stop within 0.5 s of SIGTERM" in process.stderr.read().decode()  # type: ignore[union-attr]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# ----------------------------------------------- issue 25: overflowing geometry in mdx ik / serve / check
IK = ["mdx", "ik", "--xyzrpy", "0", "0", "0", "0", "0", "0"]
SERVE = ["mdx", "serve", "--client-port", "0", "--watch-port", "0", "--geometry"]


@pytest.mark.slow  # a process start each (about 3 s on the loaded machine)
@pytest.mark.parametrize("command, key, value, place", [
    (IK, "baseRadius", 1e308, "baseRadius"),
    (IK, "platformRadius", 1e200, "platformRadius"),
    (IK, "initialHeight", 1e308, "initialHeight"),
    (IK, "actuatorLen", [600, 1e308], "actuatorLen[1]"),
    (SERVE, "baseRadius", 1e308, "baseRadius"),
    (["check"], "baseRadius", 1e308, "baseRadius"),
])
def test_overflowing_geometry_is_refused_at_read_time_naming_the_key(tmp_path, command, key, value, place):
    """A 1e308 radius used to reach the leg Jacobian: numpy's overflow warning, then "singular" with no key.
    The numbers' bound (1e9 mm) is checked with the protocol's own checks, before anything is computed."""
    data = orjson.loads(CHAIR_GEOMETRY_PATH.read_bytes())
    data[key] = value
    path = tmp_path / "geometry.json"
    path.write_bytes(orjson.dumps(data))
    done = subprocess.run([sys.executable, "-m", "shiftsim.cli", *command, str(path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr
    assert f"{path}: {place}: is " in done.stderr and "at most 1e+09 mm" in done.stderr
    assert "RuntimeWarning" not in done.stderr and "overflow encountered" not in done.stderr
    assert "singular" not in done.stderr
    assert "Traceback" not in done.stderr
