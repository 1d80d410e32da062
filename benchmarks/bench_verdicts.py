"""How fast the solver says what it finds: no equilibrium, and closed loops started far up the slope.

Cases (built in ``tests/statics/test_statics_robust.py``, the tests that check their answers):

* ``free500``: 500 free bodies under gravity, 3000 coordinates: no equilibrium, found from the
  start's stiffness and two probes (target: the verdict within 1 s);
* ``chair_free``: the Mdx Stewart platform with its six legs free: no equilibrium within reach
  (the legs run away in a few iterations; 6.2 s and 565 iterations before this solver);
* ``bricard`` / ``brake``: a Bricard 6R and a three-loop linkage released from the far end of the
  range their driving joint can reach, settling in their well (loops closed all the way).

Times are the best of a few repeats of the user call ``solve`` (reference solve and joint loads
included). Run: ``python benchmarks/bench_verdicts.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "statics"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kinematics import best_time  # noqa: E402
from test_statics_robust import bricard_linkage, brake_linkage, walk  # noqa: E402

from shiftsim.kinematics import assemble  # noqa: E402
from shiftsim.loading import load_model  # noqa: E402
from shiftsim.model import compile_model  # noqa: E402
from shiftsim.spec import BodySpec, ModelSpec  # noqa: E402
from shiftsim.statics import solve  # noqa: E402


def far_start(model, drive_name: str, step: float, span: float) -> np.ndarray:
    """The assembled pose at the end of the driving joint's reachable range farthest from the file pose."""
    drive = model.coordinates_of(drive_name)[0]
    q0 = assemble(model, model.q0).q
    values, configurations = walk(model, drive, q0, step, span)
    return configurations[int(np.argmax(np.abs(values - q0[drive])))]


def main() -> int:
    bodies = [BodySpec(f"b{i}", mass=1.0, com=np.zeros(3), inertia=np.eye(3) * 0.1) for i in range(500)]
    free500 = compile_model(ModelSpec("free500", "bench", "bench", gravity=np.array([0.0, 0.0, -9.81]), bodies=bodies))
    chair = load_model(ROOT / "models" / "mdx" / "chair.json")
    bricard, brake = compile_model(bricard_linkage()), compile_model(brake_linkage())
    cases = [
        ("free500", f"{free500.nq} coordinates", lambda: solve(free500)),
        ("chair_free", "legs free", lambda: solve(chair)),
        ("bricard", "far start", (lambda q=far_start(bricard, "r0", 0.01, np.pi): solve(bricard, q_start=q))),
        ("brake", "far start", (lambda q=far_start(brake, "g1", 0.005, 1.2): solve(brake, q_start=q))),
    ]
    print("Solver verdicts, ms per solve (best of 3)")
    print(f"{'case':<11} {'what':<18} {'ms':>9}  status, stability, iterations")
    for name, what, call in cases:
        seconds, sol = best_time(call, repeat=3), call()
        print(f"{name:<11} {what:<18} {1e3 * seconds:9.1f}  {sol.status}, {sol.stability}, {sol.iterations} it")
    print("Target: the free500 verdict within 1000 ms.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
