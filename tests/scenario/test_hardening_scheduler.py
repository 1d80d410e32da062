"""Dask scheduler addresses: garbage refused at once (exit 2), an unreachable scheduler fails fast (exit 1).

Issue 17, item 14. Only 127.0.0.1 is ever contacted, on ports this test closed or holds itself.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest
from helpers.scenario import beam_scenario, run_cli, write_scenario

from shiftsim.errors import InputError
from shiftsim.scenario import executors
from shiftsim.scenario.executors import DaskExecutor, parse_scheduler_address

HANG_LIMIT_S = 60.0  # generous: the old code took 21 s and 41 s; this only catches hangs


@pytest.mark.parametrize("address, what", [
    ("not a url", "an address cannot hold spaces"),
    ("http://127.0.0.1:8786", "unknown scheme 'http'"),
    ("tcp://127.0.0.1", "no port"),
    ("tcp://:8786", "no host"),
    ("tcp://127.0.0.1:99999", "the port is not a number from 0 to 65535"),
    ("127.0.0.1:port", "the port is not a number from 0 to 65535"),
    ("tcp://127.0.0.1:8786/status", "only a host and a port may follow the scheme"),
    ("inproc://", "an inproc address needs its location"),
])
def test_malformed_addresses_are_refused_before_the_scenario_is_read(tmp_path, capsys, address, what):
    missing = tmp_path / "no_such_scenario.json"  # never read: the option is checked first
    started = time.monotonic()
    code, _, err = run_cli(capsys, "run", missing, "--executor", "dask", "--scheduler", address)
    assert code == 2 and f"--scheduler: {address}: {what}" in err
    assert "no_such_scenario" not in err and "Traceback" not in err
    assert time.monotonic() - started < HANG_LIMIT_S


@pytest.mark.parametrize("address, parsed", [
    ("tcp://127.0.0.1:8786", ("tcp", "127.0.0.1", 8786)), ("127.0.0.1:8786", ("tcp", "127.0.0.1", 8786)),
    ("tls://scheduler.example:8786", ("tls", "scheduler.example", 8786)), ("tcp://[::1]:1", ("tcp", "::1", 1)),
    ("inproc://192.0.2.2/21512/1", ("inproc", None, None)),
])
def test_well_formed_addresses_are_accepted(address, parsed):
    assert parse_scheduler_address(address) == parsed
    assert DaskExecutor(address).address == address


def test_an_empty_address_is_refused():
    with pytest.raises(InputError, match="--scheduler: the address is empty"):
        DaskExecutor("")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_a_closed_port_fails_at_once_with_exit_1(tmp_path, capsys):
    path = write_scenario(tmp_path, beam_scenario())
    address = f"tcp://127.0.0.1:{_closed_port()}"
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "out", "--executor", "dask", "--scheduler", address)
    assert code == 1 and f"cannot reach the Dask scheduler at {address}: Connection refused" in err
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.mark.slow
def test_a_silent_listener_fails_after_the_connect_timeout(tmp_path, capsys, monkeypatch):
    """A port that accepts but never speaks Dask: the handshake times out (shortened here) with exit 1."""
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 1.0)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        path = write_scenario(tmp_path, beam_scenario())
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        started = time.monotonic()
        code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "out", "--executor", "dask", "--scheduler", address)
        assert code == 1 and f"cannot reach the Dask scheduler at {address}" in err, err
        assert time.monotonic() - started < HANG_LIMIT_S
    finally:
        stop.set()
        thread.join(5)
        for connection in accepted:
            connection.close()
        server.close()
