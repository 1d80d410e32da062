"""Run every benchmark in this folder (``bench_*.py``), one after the other, and print their tables.

Each benchmark runs in its own Python process (same interpreter) so that one library's threads or
memory do not colour another's timings. Exit status: 0 when every benchmark finished, 1 otherwise.
Run: ``python benchmarks/run_all.py`` (``make bench`` installs the bench extra first).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    failed = []
    for script in scripts:
        print(f"=== {script.name} ===", flush=True)
        start = time.perf_counter()
        run = subprocess.run([sys.executable, str(script)], cwd=HERE.parent)
        print(f"--- {script.name}: {'ok' if run.returncode == 0 else f'FAILED (exit {run.returncode})'} "
              f"in {time.perf_counter() - start:.1f} s\n", flush=True)
        if run.returncode:
            failed.append(script.name)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
