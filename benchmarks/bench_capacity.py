"""Time of a full lift-capacity chart (8 boom strokes x 8 stick strokes x 2 slews, 128 lift points) beside a reference.

The shipped ``scenarios/excavator_capacity.json`` (20 t class excavator on a tracked
undercarriage, four ground contacts) is run through the capacity analysis
(``shiftsim.scenario.capacity_analysis.run_capacity``: the standing and the hydraulic paths,
rated load). Timed: the analysis, not loading the scenario, in CPU seconds of the process (the
compiled core's threads included) and wall seconds, best of ``--repeat`` runs in each of
``--rounds`` fresh processes.

Beside it, in the same run, the chart of a reference commit (``--against``, default
``REFERENCE``: main just before the chart's per-step Python was batched), extracted with
``git archive`` into a temporary folder with its own compiled core (this tree's extension when the
core's sources are the same, else built there). The two alternate process by process, so that a
load on the machine colours both alike. The two capacity documents are then compared: every string,
count and flag equal, and the largest relative difference of any number (both the same code
path: 0).

Where this tree's time goes is measured in one more run by wrapping entry points: the compiled
core's batched solves, the evaluations of the reduced stiffness (the limit-point event), and the
lift points' assembly. The issue's target is 1 s on one core, CPU and wall.

    python benchmarks/bench_capacity.py [--repeat 2] [--rounds 3] [--against REF | --against none]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "excavator_capacity.json"
REFERENCE = "05e36c0"  # main before issue 21 item 8's batching (the path-following chart as first merged)
CORE = ("shiftsim/core/src", "setup.py")  # what the compiled extension is built from


def chart(repeat: int) -> tuple[dict, float, float]:
    """The capacity document and the best CPU and wall seconds of ``repeat`` runs (this process' shiftsim)."""
    from shiftsim.errors import Problems
    from shiftsim.scenario import load_scenario
    from shiftsim.scenario.capacity_analysis import read_capacity, run_capacity

    scenario = load_scenario(SCENARIO)
    spec = read_capacity(scenario, scenario.document["analysis"]["capacity"], "analysis.capacity",
                         Problems(str(SCENARIO)))
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        document = run_capacity(scenario, spec)
        best = min(best, (time.process_time() - cpu, time.perf_counter() - started))
    return document, best[0], best[1]


def worker(out: Path, repeat: int) -> None:
    """In a fresh process: the chart's document and times into ``out`` (JSON)."""
    document, cpu, wall = chart(repeat)
    out.write_text(json.dumps({"document": document, "cpu": cpu, "wall": wall}))


def reference_tree(ref: str, folder: Path) -> str:
    """Extract ``ref`` into ``folder`` with a compiled core; empty, or why it could not be."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], capture_output=True)
    if archive.returncode:
        return f"git archive {ref} failed: {archive.stderr.decode(errors='replace').strip()}"
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    same = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", ref, "--", *CORE]).returncode == 0
    import shiftsim.core

    built = sorted(Path(shiftsim.core.__file__).parent.glob("_core*.so"))
    if same and built:
        shutil.copy2(built[0], folder / "shiftsim" / "core" / built[0].name)
        return ""
    started = time.perf_counter()
    why = build_core(folder)
    if why:
        return f"building {ref}'s compiled core failed: {why}"
    print(f"(built {ref}'s compiled core in {time.perf_counter() - started:.0f} s: its sources differ from "
          "this tree's)")
    return ""


def build_core(tree: Path) -> str:
    """Compile ``tree``'s core extension into its package, as setup.py does (from a folder of its own, so that no
    pyproject.toml is read); empty, or why it failed."""
    sources = sorted(str(p) for p in (tree / "shiftsim" / "core" / "src").glob("*.c"))
    script = (f"from setuptools import Extension, setup\n"
              f"setup(name='reference_core', script_args=['build_ext', '--build-lib', {str(tree)!r}], ext_modules=["
              f"Extension('shiftsim.core._core', sources={sources!r}, extra_compile_args=['-O2', '-std=c99', "
              f"'-D_GNU_SOURCE'], libraries=['m', 'pthread'])])\n")
    with tempfile.TemporaryDirectory(prefix="reference_core_") as place:
        build = subprocess.run([sys.executable, "-c", script], cwd=place, capture_output=True)
    return "" if build.returncode == 0 else build.stderr.decode(errors="replace").strip()[-300:]


def run_in(tree: Path, repeat: int, folder: Path) -> dict:
    """One fresh process of :func:`worker` on the shiftsim in ``tree``."""
    out = folder / "chart.json"
    subprocess.run([sys.executable, __file__, "--worker", str(out), "--repeat", str(repeat)], check=True,
                   cwd=folder, env=dict(os.environ, PYTHONPATH=str(tree)))
    return json.loads(out.read_text())


def largest_difference(a, b, where: str = "") -> tuple[float, str]:
    """The largest relative difference of any number of two documents and where (ValueError naming the place
    where they differ otherwise: keys, lengths, strings, counts, flags, nulls)."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return max((largest_difference(a[k], b[k], f"{where}.{k}") for k in a), default=(0.0, ""))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return max((largest_difference(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b))),
                   default=(0.0, ""))
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return (0.0 if a == b else abs(a - b) / max(abs(a), abs(b)), where)
    if type(a) is not type(b) or a != b:
        raise ValueError(f"{where or 'the document'}: {str(a)[:80]!r} here, {str(b)[:80]!r} in the reference")
    return 0.0, ""


class Clock:
    """Accumulated wall time and calls of a wrapped function."""

    def __init__(self, owner, name: str):
        self.original = getattr(owner, name)
        self.seconds, self.calls = 0.0, 0

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
                self.calls += 1

        setattr(owner, name, timed)


def where_the_time_goes() -> None:
    """One more run of this tree's chart with its entry points wrapped."""
    from shiftsim import statics
    from shiftsim.ground import path
    from shiftsim.scenario import capacity_analysis

    solves = Clock(statics.core, "solve")  # every batched solve of the compiled core
    stiffness = Clock(path, "reduced_stiffness")  # the reduced stiffness' eigenvalues (limit point), per batch
    evaluations = Clock(statics, "evaluate")  # of which: the solver's residual and stiffness, one case each
    assembly = Clock(capacity_analysis, "lift_points")  # the lift points' starts, loops closed
    document, cpu, wall = chart(1)
    per_point = sum(p["path_solves"] for p in document["points"]) / len(document["points"])
    print(f"where the time goes (one more run here: {cpu:.2f} CPU s, {wall:.2f} s wall): the compiled core's solves "
          f"{solves.seconds:.2f} s wall ({solves.calls} batches; {per_point:.1f} solves per point on the standing "
          f"path), the reduced stiffness {stiffness.seconds:.2f} s ({stiffness.calls} "
          f"batches, {evaluations.calls} evaluations of the residual and stiffness, {evaluations.seconds:.2f} s), the "
          f"lift points' assembly {assembly.seconds:.2f} s; the rest (event functions, footprints, cylinder forces, "
          f"path control) {wall - solves.seconds - stiffness.seconds - assembly.seconds:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs per process (the best counts)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per tree, alternating")
    parser.add_argument("--against", default=REFERENCE, help="the reference commit, or 'none'")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.repeat)
        return
    with tempfile.TemporaryDirectory(prefix="bench_capacity_") as tmp:
        folder = Path(tmp)
        trees = {"this tree": ROOT}
        if args.against != "none":
            (folder / "reference").mkdir()
            why = reference_tree(args.against, folder / "reference")
            if why:
                print(f"no reference: {why}")
            else:
                trees[f"reference {args.against}"] = folder / "reference"
        runs: dict[str, list[dict]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, tree in trees.items():
                runs[name].append(run_in(tree, args.repeat, folder))
    points = len(runs["this tree"][0]["document"]["points"])
    print(f"capacity chart, {points} lift points (best of {args.repeat} runs in each of {args.rounds} fresh processes, "
          f"the trees alternating; median of the processes' best in brackets); target 1 s CPU and wall:")
    best = {}
    for name, results in runs.items():
        cpu, wall = [r["cpu"] for r in results], [r["wall"] for r in results]
        best[name] = (min(cpu), min(wall))
        print(f"  {name:20s} {min(cpu):.3f} CPU s ({statistics.median(cpu):.3f}), {min(wall):.3f} s wall "
              f"({statistics.median(wall):.3f}); {1000 * min(cpu) / points:.1f} CPU ms per point")
    if len(runs) == 2:
        (mine, reference) = runs.values()
        (cpu, wall), (cpu_ref, wall_ref) = best.values()
        print(f"  this tree / reference: {cpu / cpu_ref:.2f} CPU, {wall / wall_ref:.2f} wall")
        try:
            gap, where = largest_difference(mine[0]["document"], reference[0]["document"])
            print(f"  capacity documents: every string, count and flag equal; the largest relative difference of a "
                  f"number {gap:.3g}" + (f" (at {where})" if gap else ""))
        except ValueError as error:
            print(f"  capacity documents DIFFER: {error}")
    where_the_time_goes()


if __name__ == "__main__":
    main()
