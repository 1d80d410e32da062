"""Solves that would need more memory than the machine has are refused up front, with the estimate (issue 17, item 16).

The reproducer (a flat CLARAty model of 20,000 bodies: dense 20000 x 20001
matrices, a memory traceback) is sized down: the estimate is checked against
the measured peak of real solves of flat models, and the refusal is shown by
giving the check a smaller machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.scenario import beam_scenario, model_path, run_cli, write_scenario

from shiftsim import solve_memory as _limits
from shiftsim.core.memory import TREE_BYTES_PER_COORDINATE
from shiftsim.loading import load_model

FOUR_BAR = model_path("four_bar")
IDENTITY = '<Transform><Position x="0.1" y="0" z="0" /><Quaternion qi="0" qj="0" qk="0" qs="1" /></Transform>'


def flat_claraty(path: Path, bodies: int) -> Path:
    """``bodies`` one-kilogram links, each on its own revolute joint to the ground."""
    links = "\n".join(
        f'<ME_Body name="b{i}"><ME_Joint name="j{i}" type="revolute" actuated="false" offset="0"></ME_Joint>'
        f'<Frame name="r{i}" type="reference">{IDENTITY}</Frame>'
        f'<Mass_Properties mass="1.0"><CM>{IDENTITY}</CM><Inertia xx="0.001" yy="0.001" zz="0.001" /></Mass_Properties>'
        "</ME_Body>"
        for i in range(bodies))
    path.write_text(f'<?xml version="1.0"?>\n<Mechanism_Model name="flat" version="1.0">\n{links}\n</Mechanism_Model>\n')
    return path


def test_the_usable_memory_is_at_most_the_machine_memory_from_sysconf():
    assert 0 < _limits.usable_memory_bytes() <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


MEASURE = """
import sys
from pathlib import Path
from shiftsim.loading import load_model
from shiftsim.statics import solve

def status_bytes(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)

model = load_model(sys.argv[1])
solve(load_model(sys.argv[2]))  # first-use costs (imports, caches) before measuring
model.subtree
before = status_bytes("VmRSS")
Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
solve(model)
print(status_bytes("VmHWM") - before)
"""


@pytest.mark.slow
@pytest.mark.parametrize("bodies", [300, 600])
def test_the_estimate_covers_the_measured_peak_of_a_solve(tmp_path, bodies):
    """The peak is the growth of the peak resident set (VmHWM, reset through /proc/self/clear_refs) over the
    resident set before the solve: it counts the compiled core's allocations, which Python's tracemalloc
    does not see. Measured in a fresh interpreter: in the test process, other tests' threads and freed heaps
    move the resident set during the solve (a whole-suite run measured a peak below the start)."""
    flat = flat_claraty(tmp_path / "flat.xml", bodies)
    model = load_model(flat)
    assert model.nq == bodies and not model.closures
    run = subprocess.run([sys.executable, "-c", MEASURE, str(flat), str(flat_claraty(tmp_path / "warm.xml", 3))],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    peak = int(run.stdout.split()[-1])
    estimate = _limits.solve_memory_bytes(model)
    # loop-free and neutral (no springs, gravity along the axes): tree order, its stiffness written out for the
    # neutral directions as dense matrices
    assert _limits.tree_structured(model)
    assert estimate == _limits.DENSE_MATRICES * 8 * bodies * (bodies + 1) + TREE_BYTES_PER_COORDINATE * bodies
    assert estimate / 3 < peak <= estimate  # above the real peak, and not wildly so


def test_loops_count_six_equations_each():
    model = load_model(FOUR_BAR)
    n = model.nq + 6 * len(model.closures)
    assert len(model.closures) == 1 and _limits.solve_memory_bytes(model) == _limits.DENSE_MATRICES * 8 * n * (n + 1)


def test_solve_is_refused_with_the_estimate_on_a_machine_too_small(capsys, monkeypatch):
    need = _limits.solve_memory_bytes(load_model(FOUR_BAR))
    monkeypatch.setattr(_limits, "usable_memory_bytes", lambda: need - 1)
    code, out, err = run_cli(capsys, "solve", FOUR_BAR)
    assert code == 1 and out == ""
    assert f"{FOUR_BAR}: a solve of 4 coordinates and 1 loop works on dense 10 x 11 matrices and needs about " \
           f"{-(-need // 2**20)} MiB" in err and "refused before starting" in err
    monkeypatch.setattr(_limits, "usable_memory_bytes", lambda: need)
    assert run_cli(capsys, "solve", FOUR_BAR)[0] == 0


def test_run_counts_one_solve_per_local_process(tmp_path, capsys, monkeypatch):
    path = write_scenario(tmp_path, beam_scenario(machines=[{"id": "fb", "model": FOUR_BAR}], loads=[], track={},
                                                  sweep={"parameters": {"fb:four_bar:crank_pin": [1.0, 1.1, 1.2]}}))
    need = _limits.solve_memory_bytes(load_model(FOUR_BAR))
    monkeypatch.setattr(_limits, "usable_memory_bytes", lambda: 2 * need - 1)
    assert run_cli(capsys, "run", path, "-o", tmp_path / "one", "-q")[0] == 0
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "two", "--jobs", "2", "-q")
    assert code == 1 and f"machine 'fb': a solve of 4 coordinates" in err and "(2 processes at once)" in err
    assert not (tmp_path / "two").exists()


def test_run_scenario_checks_memory_as_the_command_does(tmp_path, monkeypatch):
    """``shiftsim.run_scenario`` and ``shiftsim run`` share one run(): the same refusal, before any step."""
    import shiftsim
    from shiftsim.solve_memory import SolveTooLarge

    document = beam_scenario(machines=[{"id": "fb", "model": FOUR_BAR}], loads=[], track={},
                             sweep={"parameters": {"fb:four_bar:crank_pin": [1.0, 1.1, 1.2]}})
    path = write_scenario(tmp_path, document)
    need = _limits.solve_memory_bytes(load_model(FOUR_BAR))
    monkeypatch.setattr(_limits, "usable_memory_bytes", lambda: 2 * need - 1)
    assert len(shiftsim.run_scenario(path, jobs=1).steps) == 3
    with pytest.raises(SolveTooLarge, match=r"machine 'fb': a solve of 4 coordinates .*\(2 processes at once\)"):
        shiftsim.run_scenario(path, jobs=2, output=tmp_path / "two")
    assert not (tmp_path / "two").exists()
