"""Run every benchmark in this folder (``bench_*.py``), one after the other, and print their tables.

Each benchmark runs in its own Python process (same interpreter) so that one library's threads or
memory do not colour another's timings. The date, the machine and the load average are printed
before and after (other work on the machine colours timings). Exit status: 0 when every benchmark
finished, 1 otherwise.
Run: ``python benchmarks/run_all.py`` (``make bench`` installs the bench extra first).
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def machine() -> str:
    """Date (UTC), CPU, cores, Python and the 1/5/15-minute load averages."""
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {cpu}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, load average {load}")


def main() -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    failed = []
    print(f"start: {machine()}", flush=True)
    for script in scripts:
        print(f"=== {script.name} ===", flush=True)
        start = time.perf_counter()
        run = subprocess.run([sys.executable, str(script)], cwd=HERE.parent)
        print(f"--- {script.name}: {'ok' if run.returncode == 0 else f'FAILED (exit {run.returncode})'} "
              f"in {time.perf_counter() - start:.1f} s\n", flush=True)
        if run.returncode:
            failed.append(script.name)
    print(f"end: {machine()}")
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
