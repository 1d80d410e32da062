"""Stopping a run: Ctrl-C / SIGTERM while solving keeps the solved steps; signals and SIGKILL while
writing never leave a mixed or half-written result set. Real subprocesses, real signals."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from helpers.scenario import beam_scenario, folder_bytes, write_scenario

import shiftsim
from shiftsim.output.store import open_store
from shiftsim.output.writers import PAUSE_ENV, STAGING_PREFIX
from shiftsim.scenario.schema import load_schema

HANG_LIMIT_S = 120  # only catches hangs; nothing below depends on how fast a step is
STEPS = 30_000  # far more than are solved before the signal arrives (and than results.json lists: JSON_STEP_LIMIT)


def _start(args: list, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "shiftsim", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})


def _long_beam(tmp_path: Path) -> Path:
    return write_scenario(tmp_path, beam_scenario(sweep={"parameters": {"load:tip": {"from": 0, "to": 1, "steps": STEPS}}}),
                          "long.json")


def _stop_after_steps(process: subprocess.Popen, signum: int, steps: int = 5) -> tuple[str, str]:
    """Read the -v step lines until ``steps`` were solved, send ``signum``, return (stdout, stderr)."""
    seen = []
    while len(seen) < steps:
        line = process.stderr.readline()
        assert line, "the run ended before the signal was sent"
        if line.startswith("step "):
            seen.append(line)
    process.send_signal(signum)
    out, err = process.communicate(timeout=HANG_LIMIT_S)
    return out, "".join(seen) + err


@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_while_solving_writes_the_solved_steps_marked_partial(tmp_path, signum, code):
    folder = tmp_path / "out"
    process = _start(["run", _long_beam(tmp_path), "-o", folder, "-v"])
    out, err = _stop_after_steps(process, signum)
    assert process.returncode == code, err
    name = signal.Signals(signum).name
    results = json.loads((folder / "results.json").read_text())
    jsonschema.Draft202012Validator(load_schema("results")).validate(results)
    kept = sorted(open_store(folder).step_table().column("step").to_pylist())
    solved = len(kept)  # over JSON_STEP_LIMIT planned: the steps are in the store, results.json has the summary
    assert results["partial"] is True and results["interrupted"] == name and results["steps_planned"] == STEPS
    assert "steps" not in results and results["summary"]["steps"] == solved
    assert 5 <= solved < STEPS
    assert kept == list(range(solved))  # one chain: a prefix of the sweep
    steps_csv = list(csv.reader(io.StringIO((folder / "steps.csv").read_text())))
    assert len(steps_csv) == solved + 1
    assert f"stopped by {name} after {solved} of {STEPS} steps" in err and str(folder) in err
    assert f"PARTIAL: stopped by {name} after {solved} of {STEPS} steps" in out
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]
    loaded = shiftsim.load_results(folder)  # the Python view says so too
    assert loaded.partial and len(loaded.steps) == solved


def _complete_set(tmp_path: Path, folder: Path) -> dict[str, bytes]:
    first = write_scenario(tmp_path, beam_scenario(), "first.json")
    done = subprocess.run([sys.executable, "-m", "shiftsim", "run", str(first), "-o", str(folder), "-q"],
                          timeout=HANG_LIMIT_S)
    assert done.returncode == 0
    return folder_bytes(folder)


def _wait_for_staging(folder: Path, process: subprocess.Popen) -> Path:
    """The staging folder of the run, once its first file after the store is written (the run then pauses: test
    hook)."""
    deadline = time.monotonic() + HANG_LIMIT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        staged = [p for p in folder.glob(f"{STAGING_PREFIX}*") if (p / "results.json").exists()]
        if staged:
            return staged[0]
        time.sleep(0.05)
    raise AssertionError("the write phase never started")


def _changed(tmp_path: Path) -> Path:
    return write_scenario(tmp_path, beam_scenario(loads=[{"name": "tip", "frame": "beam:link10:tip",
                                                          "force": [0.0, 0.0, -99.0]}]), "changed.json")


@pytest.mark.slow
def test_sigterm_while_writing_keeps_the_old_set_whole(tmp_path):
    folder = tmp_path / "out"
    before = _complete_set(tmp_path, folder)
    process = _start(["run", _changed(tmp_path), "-o", folder, "--force"], {PAUSE_ENV: str(HANG_LIMIT_S)})
    staging = _wait_for_staging(folder, process)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=HANG_LIMIT_S)
    assert process.returncode == 143 and "stopped by SIGTERM while writing" in err
    assert not staging.exists()
    assert folder_bytes(folder) == before  # the old set, nothing else


@pytest.mark.slow
def test_sigkill_while_writing_leaves_the_old_set_and_the_next_run_cleans_up(tmp_path):
    folder = tmp_path / "out"
    before = _complete_set(tmp_path, folder)
    process = _start(["run", _changed(tmp_path), "-o", folder, "--force"], {PAUSE_ENV: str(HANG_LIMIT_S)})
    staging = _wait_for_staging(folder, process)
    process.kill()
    process.communicate(timeout=HANG_LIMIT_S)
    left = folder_bytes(folder, hidden=False)
    assert left == before and staging.is_dir()  # the killed run's staging folder stays behind ...
    again = subprocess.run([sys.executable, "-m", "shiftsim", "run", str(_changed(tmp_path)), "-o", str(folder),
                            "--force", "-q"], timeout=HANG_LIMIT_S)
    assert again.returncode == 0
    assert not staging.exists() and not list(folder.glob(".*"))  # ... until the next run into the folder
    after = folder_bytes(folder)
    assert set(after) == set(before) and after["results.json"] != before["results.json"]


def test_signals_during_the_swap_are_delivered_after_it(tmp_path, monkeypatch):
    """The renames that swap a set in are not cut by SIGTERM: it arrives once the new set is whole."""
    from shiftsim.interrupts import Interrupted, signals_raise
    from shiftsim.output import writers as outputs

    folder = tmp_path / "out"
    outputs.write_files(folder, {"results.json": b"old", "results.csv": b"old"})
    replace = os.replace
    calls = []

    def replace_and_signal(source, target):
        calls.append(target)
        if len(calls) == 1:
            signal.raise_signal(signal.SIGTERM)  # after the first rename of the set
        replace(source, target)

    monkeypatch.setattr(outputs.os, "replace", replace_and_signal)
    with signals_raise(), pytest.raises(Interrupted) as stopped:
        outputs.write_files(folder, {"results.json": b"new", "results.csv": b"new"})
    assert stopped.value.exit_code == 143 and len(calls) == 2
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == {"results.json": b"new", "results.csv": b"new"}


def _group_alive(group: int) -> list[int]:
    """Processes still in process group ``group`` (Linux /proc)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                alive.append(int(entry.name))
    return alive


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("signum, whole_group", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_a_parallel_run_stops_with_its_workers_and_keeps_finished_chains(tmp_path, signum, whole_group):
    """--jobs 2: Ctrl-C reaches the whole process group (workers too), SIGTERM only the run; either way
    the run exits with 128 + signal, writes the chains finished so far, and leaves no process behind."""
    document = beam_scenario(sweep={"parameters": {"load:tip": {"from": 0, "to": 1, "steps": STEPS}}, "segment": 50})
    folder = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "shiftsim", "run", str(write_scenario(tmp_path, document)),
                                "-o", str(folder), "--jobs", "2", "-v"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen = 0
    while seen < 60:  # -v prints the steps of each finished chain: two chains done
        line = process.stderr.readline()
        assert line, "the run ended before the signal was sent"
        seen += line.startswith("step ")
    if whole_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    _, err = process.communicate(timeout=HANG_LIMIT_S)
    assert process.returncode == 128 + signum, err
    results = json.loads((folder / "results.json").read_text())
    solved = set(open_store(folder).step_table().column("step").to_pylist())  # results.json: the summary only
    assert results["partial"] and 60 <= len(solved) < STEPS and results["summary"]["steps"] == len(solved)
    for start in range(0, STEPS, 50):  # of each chain, the steps from its start (finished chains whole)
        kept = [i for i in range(start, start + 50) if i in solved]
        assert kept == list(range(start, start + len(kept)))
    deadline = time.monotonic() + HANG_LIMIT_S
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _group_alive(process.pid) == []
