"""Time of all sensitivities of one output with respect to every parameter of the shipped hydraulic excavator,
against one solve and against finite differences (one extra solve per parameter).

The excavator (``models/shift/excavator_hydraulic.json``) holds its three cylinder strokes with a 10 kN load
at the bucket tip; the output is the boom cylinder's force (``arm:boom_cyl.effort``). Timed:

* one solve (``shiftsim.solve``: the loaded case and its reference);
* the sensitivity of the output with respect to every parameter (``--wrt all``) from that solution, in adjoint
  mode and in forward mode (the issue's target: within 2x one solve). Both timings are best-of-repeats with the
  model's caches warm, as the solve's are: the compiled core's model and problem, and what the sensitivities
  resolve once per model (the parameter table and its core codes, the free coordinates, the frames' motions).
  Each timed call differentiates a solution of its own, solved before the timing and not yet asked anything, so
  nothing a Solution computes on first use is warm; every call evaluates the equilibrium's stiffness, factorizes
  the bordered system and computes the partials in the core. The first call on a freshly loaded model (caches
  cold) is printed beside them;
* forward finite differences: one solve per parameter with the model's spec edited (the cost a sweep pays).

The finite differences' largest relative disagreement with the exact derivatives is printed as a sanity check
(forward differences at a relative step of 1e-6: agreement to ~1e-5 is expected, not better).

Then the shipped 128-point capacity chart (``scenarios/excavator_capacity.json``): the chart itself (the tipping
and hydraulic searches, ``solve_chart``) against the whole sensitivity table of its tipping, hydraulic and rated
loads with respect to every parameter (``chart_points``: the issue's target is within 2x the chart), and the
finite differences' cost: one chart per parameter (the measured chart time times the parameter count; not run).

    python benchmarks/bench_sensitivity.py [--repeat 5] [--no-chart]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import timeit
from pathlib import Path

from shiftsim.loading import load_model
from shiftsim.model import compile_model
from shiftsim.sensitivity import sensitivity
from shiftsim.statics import Load, solve
from shiftsim.threads import single_blas_thread

MODEL = Path(__file__).resolve().parents[1] / "models" / "shift" / "excavator_hydraulic.json"
HOLD = ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]
LOADS = [Load("arm:bucket:tip", force=(0.0, 0.0, -10000.0))]
OUTPUT = "arm:boom_cyl.effort"
CHART = Path(__file__).resolve().parents[1] / "scenarios" / "excavator_capacity.json"


def best(function, repeat: int) -> float:
    """The fastest of ``repeat`` single calls (s)."""
    return min(timeit.repeat(function, number=1, repeat=repeat))


def mass_edited(spec, body: str, delta: float):
    bodies = [dataclasses.replace(b, mass=b.mass + delta) if b.name == body else b for b in spec.bodies]
    return dataclasses.replace(spec, bodies=bodies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-chart", action="store_true", help="leave out the capacity chart")
    args = parser.parse_args()
    model = load_model(MODEL)
    solution = solve(model, hold=HOLD, loads=LOADS)
    one_solve = best(lambda: solve(model, hold=HOLD, loads=LOADS), args.repeat)
    fresh = load_model(MODEL)  # caches cold: the first sensitivity call on a model just loaded and solved
    fresh_solution = solve(fresh, hold=HOLD, loads=LOADS)
    started = time.perf_counter()
    sensitivity(fresh_solution, of=[OUTPUT], wrt=["all"], hold=HOLD, loads=LOADS)
    cold = time.perf_counter() - started
    result = sensitivity(solution, of=[OUTPUT], wrt=["all"], hold=HOLD, loads=LOADS)
    # each timed call differentiates a solution of its own, solved beforehand and not yet asked anything: what a
    # Solution computes on first use (its loop-force split, its joint loads) is not left warm by an earlier call
    adjoint_solutions = iter([solve(model, hold=HOLD, loads=LOADS) for _ in range(args.repeat)])
    forward_solutions = iter([solve(model, hold=HOLD, loads=LOADS) for _ in range(args.repeat)])
    adjoint = best(lambda: sensitivity(next(adjoint_solutions), of=[OUTPUT], wrt=["all"], hold=HOLD, loads=LOADS,
                                       mode="adjoint"), args.repeat)
    forward = best(lambda: sensitivity(next(forward_solutions), of=[OUTPUT], wrt=["all"], hold=HOLD, loads=LOADS,
                                       mode="forward"), args.repeat)
    # finite differences: the cost of one solve per parameter (a fresh model per edit, as a sweep pays it)
    started = time.perf_counter()
    for _ in result.parameters:
        solve(compile_model(model.spec), hold=HOLD, loads=LOADS)
    differences = time.perf_counter() - started
    # sanity: forward differences on the body masses agree with the exact derivative
    worst = 0.0
    base = solution.joint_loads["arm:boom_cyl"].effort[0]
    for j, name in enumerate(result.parameters):
        if not name.endswith(".mass") or result.parameter_values[j] == 0.0:
            continue
        step = 1e-6 * result.parameter_values[j]
        moved = solve(compile_model(mass_edited(model.spec, name[:-5], step)), hold=HOLD, loads=LOADS)
        estimate = (moved.joint_loads["arm:boom_cyl"].effort[0] - base) / step
        exact = result.derivative[0, j]
        worst = max(worst, abs(estimate - exact) / max(abs(exact), 1e-12 * abs(base)))
    print(f"excavator_hydraulic, {OUTPUT}, {len(result.parameters)} parameters")
    print(f"  one solve                           {one_solve * 1e3:9.2f} ms")
    print(f"  all sensitivities, adjoint mode     {adjoint * 1e3:9.2f} ms  ({adjoint / one_solve:.2f}x one solve)")
    print(f"  all sensitivities, forward mode     {forward * 1e3:9.2f} ms  ({forward / one_solve:.2f}x one solve)")
    print(f"  the first call, caches cold         {cold * 1e3:9.2f} ms  (once per model)")
    print(f"  finite differences (1 solve/param)  {differences * 1e3:9.2f} ms  ({differences / one_solve:.1f}x; "
          f"the solves alone, without recompiling the edited model: {len(result.parameters) * one_solve * 1e3:.1f} ms)")
    print(f"  masses: forward differences vs exact, worst relative {worst:.1e}")
    if not args.no_chart:
        chart(max(1, args.repeat // 2))


def chart(repeat: int) -> None:
    """The capacity chart and its whole sensitivity table (see the module docstring)."""
    import json

    from shiftsim.scenario.capacity_analysis import analysis_spec, solve_chart
    from shiftsim.scenario.definition import build_scenario
    from shiftsim.scenario.sensitivity_analysis import chart_points

    scenario = build_scenario(CHART, json.loads(CHART.read_text()))
    spec = analysis_spec(scenario)
    solved = solve_chart(scenario, spec)
    chart_time = best(lambda: solve_chart(scenario, spec), repeat)
    table_time = best(lambda: chart_points(solved, ["all"], "auto"), repeat)
    points = chart_points(solved, ["all"], "auto")
    parameters = max(len(p["rated_load"]["derivative"]) for p in points)
    rated = sum(1 for p in points if p["rated_load"]["derivative"])
    print(f"{CHART.name}, {len(points)} lift points, {parameters} parameters, rated-load sensitivities at {rated}")
    print(f"  the chart (tipping and hydraulic searches)  {chart_time:8.2f} s")
    print(f"  its whole sensitivity table                 {table_time:8.2f} s  ({table_time / chart_time:.2f}x the chart)")
    print(f"  finite differences (1 chart/param, est.)    {parameters * chart_time:8.1f} s")


if __name__ == "__main__":
    with single_blas_thread():  # as the command line runs: small matrices, BLAS threads only add overhead
        main()
