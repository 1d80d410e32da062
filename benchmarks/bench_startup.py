"""Start-up of short commands: ``shiftsim --help``, ``check`` on models of every format, ``solve`` of a shipped model
and a 1-step ``run`` of the excavator lift, each a fresh process.

Each command runs ``--repeat`` times after one untimed warm-up run (files in the page cache); the best wall time
and the best CPU time (user + system of the process and its children: what a loaded, shared machine distorts least)
are reported, beside ``python -c "import numpy"`` (the least a command that needs numpy pays). A command that exits
non-zero is reported as failed. Targets (issue 27, on a quiet machine, wall): ``--help`` and ``check`` under
0.3 s; ``solve`` and the 1-step ``run`` (no plots: solving, the Parquet store, results.json, the CSV tables and the
report) under 0.6 s, the fixed cost every ``shiftsim run`` pays whatever its length.

The command runs the installed ``shiftsim`` console script next to this interpreter (else ``python -m
shiftsim``), so it starts as a user's does; an editable install not compiled to bytecode (``make`` compiles it)
pays for compiling the package on every call when ``PYTHONDONTWRITEBYTECODE`` is set.

    python benchmarks/bench_startup.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sweep import stretched  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUICK, FIXED_COST = 0.3, 0.6  # s: targets of --help/check, and of solve / a 1-step run
MODELS = ("models/shift/excavator.json", "models/shift/four_bar.json", "models/mfk/excavator.json",
          "models/claraty/rover_arm_5dof.xml", "models/mirabuf/hinge_test.mira", "models/mdx/chair.json")


def shiftsim_command() -> list[str]:
    script = Path(sys.executable).parent / "shiftsim"
    return [str(script)] if script.exists() else [sys.executable, "-m", "shiftsim"]


def one_step_lift(folder: Path) -> Path:
    """The shipped excavator lift cut to its first step, drawing no plots (as the sweep benchmark builds its runs),
    written into ``folder``: its path."""
    path = folder / "lift_1_step.json"
    path.write_text(json.dumps(stretched(1, 1, plots=False), indent=2))
    return path


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def best_times(command: list[str], repeat: int) -> tuple[float, float, int]:
    """Best wall and best CPU seconds of ``repeat`` runs after one untimed warm-up run, and the last exit code."""
    code = subprocess.run(command, cwd=ROOT, capture_output=True).returncode
    wall = cpu = float("inf")
    for _ in range(repeat):
        started, cpu_before = time.perf_counter(), children_cpu()
        code = subprocess.run(command, cwd=ROOT, capture_output=True).returncode
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, children_cpu() - cpu_before)
    return wall, cpu, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    shiftsim = shiftsim_command()
    with tempfile.TemporaryDirectory(prefix="shiftsim-startup-") as scratch:
        lift = one_step_lift(Path(scratch))
        rows = [("python -c 'import numpy' (reference)", [sys.executable, "-c", "import numpy"], None),
                ("shiftsim --help", [*shiftsim, "--help"], QUICK)]
        rows += [(f"shiftsim check {model}", [*shiftsim, "check", model], QUICK) for model in MODELS]
        rows += [("shiftsim solve models/shift/excavator.json", [*shiftsim, "solve", "models/shift/excavator.json"],
                  FIXED_COST),
                 ("shiftsim run (excavator lift, 1 step, no plots)",
                  [*shiftsim, "run", str(lift), "-o", str(Path(scratch) / "out"), "-q", "--force"], FIXED_COST)]
        print(f"Start-up per command, best of {args.repeat} fresh processes ({' '.join(shiftsim)})")
        print(f"{'command':<52} {'wall s':>7} {'CPU s':>7} {'target':>7}  status")
        missed, failed = [], []
        for label, command, target in rows:
            wall, cpu, code = best_times(command, args.repeat)
            if code:
                status = f"FAILED (exit {code})"
                failed.append(label)
            elif target is not None and wall >= target:
                status = "over target"
                missed.append(label)
            else:
                status = "ok"
            print(f"{label:<52} {wall:7.3f} {cpu:7.3f} {'' if target is None else f'{target:.1f}':>7}  {status}")
    print(f"targets (wall): {'met' if not missed and not failed else 'NOT met'}"
          f"{'; over: ' + ', '.join(missed) if missed else ''}{'; failed: ' + ', '.join(failed) if failed else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
