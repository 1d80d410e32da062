"""Big models: solve time, Newton iterations and peak memory of chains and flat models, 100 ... 10,000 bodies.

Two families, each body 1 m, 1 kg (centre of mass mid-link), on a revolute joint about y with a
torsional spring k = 500 N m/rad, under gravity (9.81 m/s^2 along -z):

* ``chain``: n links hanging straight down, each on the tip of the one above, pushed sideways by
  10 N at the lowest tip; hanging keeps it well conditioned at every length (a few Newton iterations).
* ``flat``: n links each hinged to the ground at the origin, level, sagging under their own weight:
  n independent coordinates, whose stiffness matrix is diagonal. Each link's angle is checked against
  the scalar equilibrium k theta = m g (L/2) cos theta solved by ``scipy.optimize.brentq``.

* ``braced1`` ... ``braced4``: the chain with 1 to 4 loops: cylinders spread along it, each a barrel on a pin at
  the tip of link i and a rod sliding in it on a 1e4 N/m spring, pinned to the tip of link i + 2.

From 64 free coordinates the stiffness is factorized in tree order (shiftsim/core/src/tree.c, docs/core.md "Big
models"), in time linear in the size; the braces' loops go through a bordered system of 3 rows each.

Every size runs in a fresh process (``wait4`` gives its peak resident memory): after a 2-body warm-up
solve, the model is compiled (timed apart) and solved (best of 5 while a solve takes under 0.5 s, else once) with ``shiftsim.statics.solve`` (the loaded equilibrium and its
unloaded reference, as a user call). The growth exponent p of time ~ n^p is fitted over the sizes
run. A family stops growing once a size would take longer than ``--budget`` seconds, predicted from
the last two sizes' times; the rows it leaves out say so.

    python benchmarks/bench_big_models.py [--sizes 100 200 500 1000 2000 5000 10000] [--budget 120]
        [--families chain flat braced1 braced4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

G, LENGTH, MASS, STIFFNESS, TIP_FORCE = 9.81, 1.0, 1.0, 500.0, 10.0
FAMILIES = ("chain", "flat", "braced1", "braced4")
BRACE_STIFFNESS = 1e4  # N/m
REPEATS = 5


def model_spec(family: str, n: int):
    """The ModelSpec of ``family`` with ``n`` bodies (see the module docstring)."""
    from shiftsim.spec import FIXED, BodySpec, FrameRef, FrameSpec, JointSpec, ModelSpec

    if family.startswith("braced"):
        return braced_spec(n, int(family.removeprefix("braced")))

    inertia = np.diag([1e-3 * MASS, MASS * LENGTH**2 / 12, MASS * LENGTH**2 / 12])
    along = np.array([0.0, 0.0, -LENGTH]) if family == "chain" else np.array([LENGTH, 0.0, 0.0])
    bodies, joints = [], []
    for i in range(n):
        bodies.append(BodySpec(f"link{i}", mass=MASS, com=along / 2, inertia=inertia,
                               frames={"tip": FrameSpec("tip", translation=along.copy())}))
        parent = FrameRef(f"link{i - 1}", "tip") if family == "chain" and i else FrameRef(FIXED)
        joints.append(JointSpec(f"joint{i}", "revolute", parent, FrameRef(f"link{i}"), axis=np.array([0.0, 1.0, 0.0]),
                                initial=(0.0,), stiffness=(0.0, STIFFNESS)))
    return ModelSpec(f"{family}{n}", "benchmark", "benchmark", gravity=np.array([0.0, 0.0, -G]), bodies=bodies,
                     joints=joints)


def braced_spec(n: int, loops: int):
    """The ``chain`` family of n links with ``loops`` cylinders (a barrel and a rod of 1 m, 0.2 and 0.1 kg, the rod
    sliding on a spring), each from the tip of link i to the tip of link i + 2, i spread along the chain."""
    from shiftsim.spec import FrameRef, FrameSpec, JointSpec, ModelSpec, BodySpec

    chain = model_spec("chain", n)
    bodies, joints = list(chain.bodies), list(chain.joints)
    down = np.array([0.0, 0.0, -LENGTH])
    y = np.array([0.0, 1.0, 0.0])
    for k in range(loops):
        i = (k + 1) * n // (loops + 1) - 1
        for part, mass in (("barrel", 0.2), ("rod", 0.1)):
            bodies.append(BodySpec(f"{part}{k}", mass=mass, com=down / 2, inertia=np.eye(3) * 1e-3 * mass,
                                   frames={"tip": FrameSpec("tip", translation=down.copy())}))
        joints += [JointSpec(f"barrel{k}_pin", "revolute", FrameRef(f"link{i}", "tip"), FrameRef(f"barrel{k}"),
                             axis=y, initial=(0.0,)),
                   JointSpec(f"rod{k}_slide", "prismatic", FrameRef(f"barrel{k}", "tip"), FrameRef(f"rod{k}"),
                             axis=down / LENGTH, initial=(0.0,), stiffness=(0.0, BRACE_STIFFNESS)),
                   JointSpec(f"rod{k}_pin", "revolute", FrameRef(f"rod{k}", "tip"), FrameRef(f"link{i + 2}", "tip"),
                             axis=y, initial=(0.0,))]
    return ModelSpec(f"braced{loops}_{n}", "benchmark", "benchmark", gravity=chain.gravity, bodies=bodies,
                     joints=joints)


def flat_angle() -> float:
    """The flat model's equilibrium angle about y (rad): k theta = m g (L/2) cos theta (a level link
    sags, turning positively about y)."""
    from scipy.optimize import brentq

    return brentq(lambda t: STIFFNESS * t - MASS * G * LENGTH / 2 * np.cos(t), 0.0, np.pi / 2, xtol=1e-15)


def one(family: str, n: int) -> dict:
    """Compile and solve one model in this process; the figures as a dict."""
    from shiftsim.model import compile_model
    from shiftsim.statics import Load, solve

    solve(compile_model(model_spec(family, 12)))  # warm-up: first-call costs (imports, core set-up) not timed
    started = time.perf_counter()
    model = compile_model(model_spec(family, n))
    compiled = time.perf_counter() - started
    loads = [Load(f"link{n - 1}:tip", (TIP_FORCE, 0.0, 0.0))] if family != "flat" else []
    seconds = np.inf
    for _ in range(REPEATS):  # best of a few while a solve is quick (a shared machine's noise); one when slow
        started = time.perf_counter()
        solution = solve(model, loads=loads)
        seconds = min(seconds, time.perf_counter() - started)
        if seconds > 0.5:
            break
    error = float(np.max(np.abs(solution.q - flat_angle()))) if family == "flat" else None
    return {"compile": compiled, "solve": seconds, "iterations": int(solution.iterations),
            "converged": bool(solution.converged), "angle_error": error}


def measured(family: str, n: int) -> dict:
    """:func:`one` in a fresh process, with its peak resident memory (bytes)."""
    process = subprocess.Popen([sys.executable, __file__, "--one", family, str(n)], stdout=subprocess.PIPE)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return {"failed": f"exit {os.waitstatus_to_exitcode(status)}"}
    return {**json.loads(output), "peak": usage.ru_maxrss * 1024}


def growth_exponent(sizes: list[int], seconds: list[float]) -> float:
    """p of the least-squares fit log t = p log n + c."""
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 500, 1000, 2000, 5000, 10000])
    parser.add_argument("--budget", type=float, default=120.0, help="seconds a size may be predicted to take")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES),
                        help="chain, flat, braced1 ... braced4 (default: %(default)s)")
    parser.add_argument("--one", nargs=2, metavar=("FAMILY", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]))))
        return
    for family in args.families:
        print(f"{family}: bodies, compile s, solve s, Newton iterations, peak memory, exponent from the size before"
              + (", largest angle error vs brentq (rad)" if family == "flat" else ""), flush=True)
        done: list[tuple[int, float]] = []
        for n in sorted(args.sizes):
            if len(done) >= 2:
                p = growth_exponent([s for s, _ in done[-2:]], [t for _, t in done[-2:]])
                predicted = done[-1][1] * (n / done[-1][0]) ** p
                if predicted > args.budget:
                    print(f"  {n:6d}  not run: predicted {predicted:.0f} s (n^{p:.2f} from the last two sizes) "
                          f"> budget {args.budget:.0f} s", flush=True)
                    continue
            row = measured(family, n)
            if "failed" in row:
                print(f"  {n:6d}  failed ({row['failed']})", flush=True)
                break
            step = (f"n^{np.log(row['solve'] / done[-1][1]) / np.log(n / done[-1][0]):.2f}" if done else "")
            check = f"  {row['angle_error']:.1e}" if row["angle_error"] is not None else ""
            print(f"  {n:6d}  {row['compile']:8.3f}  {row['solve']:9.3f}  {row['iterations']:3d}"
                  f"{'' if row['converged'] else ' NOT CONVERGED'}  {row['peak'] / 1e6:8.0f} MB  {step:>7}{check}",
                  flush=True)
            done.append((n, row["solve"]))
        if len(done) >= 2:
            print(f"  growth exponent over {done[0][0]} ... {done[-1][0]}: "
                  f"n^{growth_exponent(*map(list, zip(*done))):.2f}", flush=True)


if __name__ == "__main__":
    main()
