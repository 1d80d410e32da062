"""Local pool workers end with the process that started them (``executors._die_with_parent``), even when that
process is killed without cleaning up."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for a parent that will not reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_ends_when_its_parent_is_gone():
    parent = textwrap.dedent("""
        import os, subprocess, sys
        worker = subprocess.Popen(
            [sys.executable, "-c",
             "import sys, time\\n"
             "from shiftsim.scenario.executors import _die_with_parent\\n"
             "_die_with_parent(int(sys.argv[1]))\\n"
             "print('ready', flush=True)\\n"
             "time.sleep(60)\\n", str(os.getpid())],
            stdout=subprocess.PIPE, text=True)
        assert worker.stdout.readline().strip() == "ready"
        print(worker.pid, flush=True)
        os._exit(0)  # gone without waiting for or signalling the worker
    """)
    done = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    worker = int(done.stdout.strip())
    deadline = time.monotonic() + 10.0
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)


@pytest.mark.slow
def test_a_worker_whose_parent_is_already_gone_ends_at_once():
    worker = subprocess.run(
        [sys.executable, "-c", "from shiftsim.scenario.executors import _die_with_parent\n"
                               "_die_with_parent(-1)\nprint('still here')\n"],
        capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert worker.returncode == 1 and "still here" not in worker.stdout
