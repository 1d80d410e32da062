"""The memory guard respects the address-space limit and is part of the library too (issue 25 items 2 and 9).

Under ``ulimit -v`` a solve whose dense matrices cannot fit used to pass the guard (it compared with physical
memory) and die in the compiled core; the library had no guard at all. Each limit is set with
``resource.setrlimit`` in a subprocess, so this process keeps its own.
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from shiftsim.core import memory
from shiftsim.loading import load_model
from shiftsim.statics import SolverOptions, solve, solve_batch

FOUR_BAR = Path(__file__).resolve().parents[2] / "models" / "shift" / "four_bar.json"
LIMIT = 1 << 30  # RLIMIT_AS in the subprocesses: 1 GiB
BODIES = 4000  # a flat model with a loop, whose solve needs 10 x 8 x 4010 x 4011 bytes = 1.2 GiB


def flat_claraty(path: Path, bodies: int) -> Path:
    """``bodies`` one-kilogram links, each on its own revolute joint to the ground."""
    pose = '<Transform><Position x="0.1" y="0" z="0" /><Quaternion qi="0" qj="0" qk="0" qs="1" /></Transform>'
    links = "".join(
        f'<ME_Body name="b{i}"><ME_Joint name="j{i}" type="revolute" actuated="false" offset="0"></ME_Joint>'
        f'<Frame name="r{i}" type="reference">{pose}</Frame><Mass_Properties mass="1.0"><CM>{pose}</CM>'
        '<Inertia xx="0.001" yy="0.001" zz="0.001" /></Mass_Properties></ME_Body>\n'
        for i in range(bodies))
    path.write_text(f'<?xml version="1.0"?>\n<Mechanism_Model name="flat" version="1.0">\n{links}</Mechanism_Model>\n')
    return path


def flat_with_a_loop(path: Path, bodies: int) -> Path:
    """The four-bar (one loop) with a weak spring between two of its frames (a frame-pair restraint: the dense path)
    beside ``bodies`` one-kilogram links, each on its own revolute joint to the ground (without the pair spring the
    model is factorized in tree order, loop included, in memory linear in its size)."""
    document = json.loads(FOUR_BAR.read_text())
    assembly = document["assemblies"][0]
    assembly["restraints"].append({"name": "pair_spring", "type": "spring",
                                   "body_frame_pair": [["coupler", "origin"], ["rocker", "origin"]],
                                   "knot_points": [], "coefficients": [[1.0, 0.0]]})
    for i in range(bodies):
        assembly["bodies"].append({"name": f"b{i}", "mass": 1.0, "center_of_mass": [0.1, 0.0, 0.0],
                                   "moment_of_inertia": {"Ixx": 1e-3, "Iyy": 1e-3, "Izz": 1e-3, "Ixy": 0.0,
                                                         "Iyz": 0.0, "Izx": 0.0}})
        assembly["joints"].append({"name": f"j{i}", "type": "Rz", "body_frame_pairs": [["fixed", "origin"],
                                                                                         [f"b{i}", "origin"]]})
    path.write_text(json.dumps(document))
    return path


def limited(arguments: list[str], limit: int = LIMIT) -> subprocess.CompletedProcess:
    """Run ``python arguments`` with its address space limited to ``limit`` bytes."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return subprocess.run([sys.executable, *arguments], capture_output=True, text=True, timeout=300, preexec_fn=cap)


def test_the_usable_memory_stays_under_the_address_space_limit():
    done = limited(["-c", "from shiftsim.core import memory; import resource; "
                          "print(memory.usable_bytes(), memory._kib_entry('/proc/self/status', 'VmSize'))"])
    assert done.returncode == 0, done.stderr
    usable, mapped = map(float, done.stdout.split())
    assert 0 < usable <= LIMIT - mapped < LIMIT  # the room above what is mapped, not the machine's memory
    assert memory.usable_bytes() <= memory.physical_bytes()


@pytest.mark.slow
def test_the_cli_refuses_a_solve_beyond_the_address_space_limit_with_exit_1(tmp_path):
    model = flat_with_a_loop(tmp_path / "flat.json", BODIES)
    need = memory.solve_bytes(BODIES + 4, 1)
    assert need > LIMIT
    done = limited(["-m", "shiftsim", "solve", str(model)])
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert f"needs about {memory.size_text(need)}" in done.stderr and "refused before starting" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.slow
def test_a_flat_model_of_as_many_bodies_without_a_loop_solves_under_the_same_limit(tmp_path):
    """Factorized in tree order, the same 4,000 links need memory linear in their number: the guard lets the solve
    run and it fits (it was refused, and died at 1 GiB before the guard)."""
    model = flat_claraty(tmp_path / "flat.xml", BODIES)
    need = memory.solve_bytes(BODIES, 0, structured=True)
    assert need < LIMIT / 2 < memory.solve_bytes(BODIES, 0)
    done = limited(["-m", "shiftsim", "solve", str(model)])
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "converged" in done.stdout


@pytest.mark.slow
def test_the_library_refuses_a_solve_beyond_the_address_space_limit(tmp_path):
    model = flat_with_a_loop(tmp_path / "flat.json", BODIES)
    script = textwrap.dedent(f"""
        import numpy as np
        from shiftsim.loading import load_model
        from shiftsim.statics import solve, solve_batch
        model = load_model({str(model)!r})
        for attempt in (lambda: solve(model), lambda: solve_batch(model, model.q0[None], np.arange(model.nq),
                                                                   [0.0, 0.0, -9.81], rows=np.zeros(0, int))):
            try:
                attempt()
                print("solved")
            except MemoryError as error:
                print("MemoryError:", error)
        """)
    done = limited(["-c", script])
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("MemoryError:") and "GiB" in line for line in lines), lines


def test_memory_limit_refuses_and_can_be_lifted():
    model = load_model(FOUR_BAR)
    need = memory.solve_bytes(model.nq, len(model.closures))
    with pytest.raises(memory.SolveTooLarge, match="memory_limit") as refused:
        solve(model, options=SolverOptions(memory_limit=need - 1))
    assert isinstance(refused.value, MemoryError) and memory.size_text(need - 1) in str(refused.value)
    lifted = solve(model, options=SolverOptions(memory_limit=math.inf))
    assert lifted.converged
    with pytest.raises(MemoryError):
        solve_batch(model, np.tile(model.q0, (3, 1)), [0], [0.0, 0.0, -9.81], threads=1,
                    options=SolverOptions(memory_limit=need - 1))
