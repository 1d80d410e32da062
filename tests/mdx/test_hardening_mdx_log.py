"""Issue 25 item 11: the Mdx services' event log is bounded in rate and size, and SIGTERM with connections open
stops a service cleanly (exit 0, no asyncio traceback).

Junk is sent over a real socket to ``shiftsim mdx serve`` in a child process; the log's bounds are checked
against the documented limits with the log's own timestamps, and every junk line is accounted for (written or
counted as suppressed).
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from shiftsim.mdx.geometry import CHAIR_GEOMETRY_PATH
from shiftsim.mdx.service import LOG_BURST, LOG_RATE_PER_S, EventLog

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60  # only catches hangs


class Steps:
    """A monotonic clock set by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def events(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def test_throttled_events_follow_the_token_bucket_and_are_counted():
    stream, clock = io.StringIO(), Steps()
    log = EventLog(stream, monotonic=clock, rate_per_s=10.0, burst=100)
    for _ in range(1000):
        log.write("rejected", reason="junk")
    clock.now = 5.0  # 50 tokens back
    for _ in range(1000):
        log.write("rejected", reason="junk")
    log.write("move")  # not throttled
    log.write("stopped")
    written = events(stream.getvalue())
    rejected = [e for e in written if e["event"] == "rejected"]
    assert len(rejected) == 150
    assert rejected[100]["suppressed"] == 900  # the first written after the gap carries the count
    assert written[-1] == {**written[-1], "event": "stopped", "suppressed": {"rejected": 950}}
    assert len(rejected) + 900 + 950 == 2000
    assert [e["event"] for e in written].count("move") == 1


def test_the_log_stops_at_its_size_then_writes_only_stopped():
    stream = io.StringIO()
    log = EventLog(stream, max_bytes=2000)
    for i in range(100):
        log.write("move", index=i)
    log.write("stopped")
    written = events(stream.getvalue())
    assert [e["event"] for e in written][-2:] == ["log_full", "stopped"]
    assert [e["event"] for e in written].count("log_full") == 1
    text = stream.getvalue()
    before_full = text[: text.index('{"event":"log_full"')]
    assert 2000 - 60 < len(before_full) <= 2000  # events stop within one event of the size


def start_middleware() -> tuple[subprocess.Popen, dict]:
    process = subprocess.Popen(
        [sys.executable, "-m", "shiftsim.cli", "mdx", "serve", "--geometry", str(CHAIR_GEOMETRY_PATH),
         "--client-port", "0", "--watch-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())


@pytest.mark.slow  # about 6 s on the loaded machine
def test_junk_from_a_real_client_grows_the_log_within_its_rate_and_sigterm_exits_0():
    process, listening = start_middleware()
    try:
        lines = 20_000
        with socket.create_connection(("127.0.0.1", listening["client_port"]), timeout=TIMEOUT_S) as client:
            # the junk, then a geometry request whose reply marks that every junk line was handled
            client.sendall(b"x\n" * lines + b'{"jsonrpc": "2.0", "method": "geometry", "id": 7}\n')
            replies = client.makefile("rb")
            errors = 0
            while True:
                reply = json.loads(replies.readline())
                if reply.get("id") == 7 and "error" not in reply:
                    break
                errors += 1
            assert errors == lines  # every junk line is answered with an error reply
            process.send_signal(signal.SIGTERM)
            out, err = process.communicate(timeout=TIMEOUT_S)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 0, err
    assert "Traceback" not in err.decode() and "CancelledError" not in err.decode()
    written = [listening] + events(out.decode())
    rejected = [e for e in written if e["event"] == "rejected"]
    seconds = written[-1]["time"] - written[0]["time"]
    assert len(rejected) <= LOG_BURST + LOG_RATE_PER_S * seconds + 1
    suppressed = sum(e.get("suppressed", 0) for e in rejected) + written[-1]["suppressed"]["rejected"]
    assert len(rejected) + suppressed == lines
    # 40,000 bytes of junk used to write about 100 bytes of log per byte
    assert len(out) < 200 * (LOG_BURST + LOG_RATE_PER_S * seconds) + 10_000


@pytest.mark.slow  # about 5 s on the loaded machine
def test_sigterm_with_a_client_that_does_not_read_a_watcher_and_a_refused_client_exits_0():
    process, listening = start_middleware()
    sockets = []
    try:
        client = socket.create_connection(("127.0.0.1", listening["client_port"]), timeout=TIMEOUT_S)
        sockets.append(client)
        sockets.append(socket.create_connection(("127.0.0.1", listening["watch_port"]), timeout=TIMEOUT_S))
        refused = socket.create_connection(("127.0.0.1", listening["client_port"]), timeout=TIMEOUT_S)
        sockets.append(refused)
        assert b"another client is connected" in refused.makefile("rb").readline()
        # 200,000 error replies (about 20 MB) pile up unread in the client's socket: closing must not wait for them
        client.sendall(b"x\n" * 200_000)
        seen = [json.loads(process.stdout.readline())["event"] for _ in range(4)]
        while seen[-1] != "rejected":  # the service is answering the junk
            seen.append(json.loads(process.stdout.readline())["event"])
        assert {"client_connected", "watcher_connected", "client_refused"} <= set(seen)
        process.send_signal(signal.SIGTERM)
        process.wait(TIMEOUT_S)
        # read through the file objects: communicate() would skip what readline() has buffered
        out, err = process.stdout.read(), process.stderr.read()
    finally:
        for s in sockets:
            s.close()
        process.kill()
        process.wait()
    assert process.returncode == 0, err
    assert err.decode() == ""
    assert events(out.decode())[-1]["event"] == "stopped"
