"""How ``--jobs N`` workers get the run's scenario: a forked worker inherits the built scenario (nothing is built
again), a worker started afresh (spawn) builds it from the file path and parsed document and holds BLAS to one
thread; either way the steps are those one process solves, value for value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.scenario import beam_scenario, write_scenario

from shiftsim.scenario import LocalExecutor, execute, executors, load_scenario

ROOT = Path(__file__).resolve().parents[2]


def _chained(tmp_path: Path):
    """The cantilever's tip load swept over 40 steps in 4 chains, read from a file (as ``shiftsim run`` reads it)."""
    sweep = {"parameters": {"load:tip": {"from": 0.0, "to": 1.0, "steps": 40}}, "segment": 10}
    return load_scenario(write_scenario(tmp_path, beam_scenario(sweep=sweep, outputs={"plots": []})))


def _numbers(steps) -> list[tuple[int, int, np.ndarray]]:
    """Per step: its index, Newton iterations and every machine's equilibrium coordinates, one array."""
    return [(step.index, step.iterations, np.concatenate([q for _, q in sorted(step.q.items())])) for step in steps]


def _same(a, b) -> bool:
    return len(a) == len(b) and all(i == j and n == m and np.array_equal(p, q) for (i, n, p), (j, m, q) in zip(a, b))


@pytest.mark.slow
def test_forked_workers_solve_the_parents_scenario_without_building_it_again(tmp_path, monkeypatch):
    scenario = _chained(tmp_path)
    one = _numbers(execute(scenario, LocalExecutor(1)))

    def built_again(*args, **kwargs):
        raise AssertionError("a forked worker built the scenario again")

    monkeypatch.setattr(executors, "build_scenario", built_again)  # forked workers inherit this process's modules
    two = _numbers(execute(scenario, LocalExecutor(2, "fork")))
    assert len(one) == 40 and _same(one, two)


@pytest.mark.slow
def test_spawned_workers_build_the_scenario_and_solve_the_same_steps(tmp_path):
    scenario = _chained(tmp_path)
    assert executors._for_workers(scenario, "spawn") == (scenario.source, scenario.document)
    assert executors._for_workers(scenario, "fork") is scenario
    one = _numbers(execute(scenario, LocalExecutor(1)))
    assert len(one) == 40 and _same(one, _numbers(execute(scenario, LocalExecutor(2, "spawn"))))


@pytest.mark.slow
def test_a_worker_started_afresh_holds_blas_to_one_thread(tmp_path):
    """The pool's initializer in a fresh interpreter (as a spawned worker runs it): the scenario built from its path
    and document, BLAS at one thread afterwards (more before, on a machine with several cores and no thread setting
    in the environment)."""
    scenario = _chained(tmp_path)
    program = f"""
import json, multiprocessing, os, sys
from pathlib import Path
import numpy
from threadpoolctl import threadpool_info
from shiftsim.scenario import executors

def blas():
    return max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=0)

before = blas()
stop, counts = multiprocessing.Value("b", 0, lock=False), multiprocessing.Array("q", 2)
executors._start_worker(os.getppid(), (Path({str(scenario.source)!r}), json.loads(sys.stdin.read())), stop, counts)
print(json.dumps([before, blas(), executors._worker["scenario"].sweep.size]))
"""
    done = subprocess.run([sys.executable, "-c", program], input=json.dumps(scenario.document), capture_output=True,
                          text=True, timeout=120, cwd=ROOT,
                          env={k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")})
    assert done.returncode == 0, done.stderr
    before, after, steps = json.loads(done.stdout)
    assert steps == 40 and after == 1
    if (os.cpu_count() or 1) > 1:
        assert before > 1  # the limit had something to limit
