"""Worker processes of ``shiftsim run --jobs N`` die with their parent, even one killed with SIGKILL (issue 17, item 9)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.scenario import REPO, beam_scenario, model_path, write_scenario

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc to find processes")

HANG_LIMIT_S = 60.0  # generous: only catches a run that never starts or workers that never go

LONG = beam_scenario(
    machines=[{"id": "fb", "model": model_path("four_bar")}],
    loads=[],
    track={"joints": ["fb:four_bar:crank_pin"]},
    sweep={"mode": "grid", "parameters": {"fb:four_bar:crank_pin": [-1.2, -1.0, -0.8, -0.6],
                                          "time": {"from": 0, "to": 1000, "steps": 4000}},
           "segment": 200},
    outputs={"csv": False, "plots": []})


def children(pid: int) -> set[int]:
    """Pids of the live processes whose parent is ``pid`` (from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + HANG_LIMIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_a_killed_parent(tmp_path, signal_number):
    path = write_scenario(tmp_path, LONG)
    parent = subprocess.Popen(
        [sys.executable, "-m", "shiftsim.cli", "run", str(path), "-o", str(tmp_path / "out"), "--jobs", "2", "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    workers: set[int] = set()
    try:
        def two_workers() -> bool:
            assert parent.poll() is None, f"the run ended early: {parent.stderr.read().decode()}"  # type: ignore
            workers.update(children(parent.pid))
            return len(workers) >= 2

        wait_for(two_workers, "two worker processes")
        parent.send_signal(signal_number)
        parent.wait(HANG_LIMIT_S)
        wait_for(lambda: not any(alive(pid) for pid in workers), f"workers {sorted(workers)} to end")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for pid in workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    if signal_number == signal.SIGKILL:
        assert not (tmp_path / "out" / "results.json").exists()  # killed outright: nothing written
