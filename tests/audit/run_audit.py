"""The hostile-input audit (issues 17 and 25), rerunnable: ``python tests/audit/run_audit.py [--per-kind N]``.

Not part of ``make test``: ``--per-kind 56`` gives 674 trials (the audit's 675 inputs; 19 minutes on the
loaded 2-core machine). Each trial runs the real command line in a child process (its own session), with the
warnings a user gets and a 4 GiB address-space limit, and is classified as:

* ``traceback``: "Traceback" on stderr;
* ``wrong exit``: an exit code other than 0, 1, 2 (in kill trials also 130, 143 or death by the signal sent), or
  an input the audit knows to be invalid (a non-finite command-line number) not refused with 2;
* ``hang``: no exit within :data:`TIMEOUT_S`;
* ``crash``: killed by a signal (negative return code) or 134/139;
* ``data lost``: a failed ``run`` into a folder holding an earlier run's results changed or removed them, or a
  killed run left a ``.*.tmp`` file or a results.json that does not parse;
* ``input touched``: an input file's bytes or modification time changed.

Trial families (N = ``--per-kind``):

* readers (11 N): N mutated files of each reader's shipped example (Shift, MFK, CLARAty, mirabuf, Mdx) and of
  a scenario, mutated as tests/commands/test_fuzz_cli.py does (a JSON value replaced by a hostile one, or bytes
  flipped, inserted or cut); each through ``check`` and, models, ``solve`` (Mdx: ``mdx ik``);
* command-line values (36): ``solve --gravity``/``--load`` and ``fk --set`` given non-finite, huge and
  malformed numbers (the invalid ones must exit 2);
* scenario runs (N / 4): ``run -o`` of mutated scenarios into a folder holding an earlier results.json;
* kill trials (8): ``run --jobs 2`` of the shipped scenario killed with SIGTERM or SIGKILL 0.5 to 3 s in;
  no worker may outlive it (its session is searched with ``pgrep -s``).

The report lists the counts per class and every finding with its command, so it can be replayed; the seed is
fixed (``--seed``) so two runs give the same trials. Exit status: 0 when nothing was found, 1 otherwise.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "commands"))
from test_fuzz_cli import ADDRESS_SPACE_BYTES, SEEDS  # noqa: E402
from test_fuzz_cli import mutated_file as fuzz_file  # noqa: E402

TIMEOUT_S = 120.0
CLASSES = ("traceback", "wrong exit", "hang", "crash", "data lost", "input touched")
BAD_NUMBERS = ["nan", "inf", "-inf", "1e400", "x", "", "1,,2", "0x1p1025"]
ODD_NUMBERS = ["1e308", "-1e308", "1e-320", "0", "-0", "1e20"]


@dataclass
class Trial:
    family: str
    argv: list[str]
    inputs: list[Path]
    must_refuse: bool = False  # exit 2 expected
    kill_after_s: float | None = None
    kill_signal: int = signal.SIGTERM
    results_folder: Path | None = None  # holds an earlier run's results that a failure must keep


@dataclass
class Outcome:
    trial: Trial
    returncode: int | None
    stderr: str
    findings: list[str] = field(default_factory=list)


def _limit() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))
    os.setsid()


def fingerprint(paths: list[Path]) -> list[tuple[str, int]]:
    return [(hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) if p.exists() else ("", 0)
            for p in paths]


def folder_state(folder: Path | None) -> dict[str, str]:
    if folder is None or not folder.exists():
        return {}
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def run_trial(trial: Trial) -> Outcome:
    before = fingerprint(trial.inputs)
    kept = folder_state(trial.results_folder)
    process = subprocess.Popen([sys.executable, "-m", "shiftsim", *trial.argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, preexec_fn=_limit, cwd=trial.inputs[0].parent)
    try:
        if trial.kill_after_s is not None:
            try:
                process.wait(trial.kill_after_s)
            except subprocess.TimeoutExpired:
                process.send_signal(trial.kill_signal)
        out, err = process.communicate(timeout=TIMEOUT_S)
        returncode: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        returncode = None
    stderr = err.decode("utf-8", "replace")
    outcome = Outcome(trial, returncode, stderr)
    # a killed run may end with its handler (130, 143) or by the signal itself (start-up, before handlers)
    killed = {130, 143, -signal.SIGTERM, -signal.SIGKILL} if trial.kill_after_s is not None else set()
    allowed = {0, 1, 2} | killed
    if returncode is None:
        outcome.findings.append("hang")
    elif returncode not in allowed and (returncode < 0 or returncode in (134, 139)):
        outcome.findings.append("crash")
    elif returncode not in allowed or (trial.must_refuse and returncode != 2):
        outcome.findings.append("wrong exit")
    if "Traceback" in stderr:
        outcome.findings.append("traceback")
    if fingerprint(trial.inputs) != before:
        outcome.findings.append("input touched")
    if trial.results_folder is not None:
        now = folder_state(trial.results_folder)
        lost = returncode != 0 and trial.kill_after_s is None and any(now.get(k) != v for k, v in kept.items())
        leftovers = [k for k in now if Path(k).name.startswith(".") and k.endswith(".tmp")]
        unreadable = False
        if (trial.results_folder / "results.json").exists():
            try:
                json.loads((trial.results_folder / "results.json").read_bytes())
            except ValueError:
                unreadable = True
        if lost or unreadable or (leftovers and trial.kill_signal != signal.SIGKILL):
            outcome.findings.append("data lost")
    if trial.kill_after_s is not None:
        time.sleep(0.5)
        orphans = subprocess.run(["pgrep", "-s", str(process.pid)], capture_output=True, text=True).stdout.split()
        if orphans:
            outcome.findings.append("crash")  # workers outlived their parent
            for pid in orphans:
                os.kill(int(pid), signal.SIGKILL)
    return outcome


def mutated_file(folder: Path, kind: str, rng: random.Random) -> Path:
    """A mutated example of ``kind`` in a folder of its own under ``folder``."""
    own = folder / f"{kind}-{rng.randrange(10**9)}"
    own.mkdir()
    return fuzz_file(own, kind, rng)


def plan(folder: Path, per_kind: int, rng: random.Random) -> list[Trial]:
    trials: list[Trial] = []
    for kind in sorted(SEEDS):
        for _ in range(per_kind):
            path = mutated_file(folder, kind, rng)
            trials.append(Trial(f"reader {kind}", ["check", str(path)], [path]))
            if kind == "mdx":
                second = ["mdx", "ik", str(path), "--xyzrpy", "0", "0", "0.1", "0", "0", "0"]
            elif kind == "scenario":
                second = ["check", str(path)]  # runs are their own family below
            else:
                second = ["solve", str(path)]
            if kind != "scenario":
                trials.append(Trial(f"reader {kind}", second, [path]))
    model = folder / "pendulum.json"
    model.write_bytes(SEEDS["shift"].read_bytes())
    for value in BAD_NUMBERS + ODD_NUMBERS:
        bad = value in BAD_NUMBERS
        for argv in (["solve", str(model), "--gravity", f"0,0,{value}"],
                     ["solve", str(model), "--load", f"double_pendulum:link2:distal={value},0,0"]):
            trials.append(Trial("command-line values", argv, [model], must_refuse=bad))
    for value in BAD_NUMBERS:
        trials.append(Trial("command-line values", ["fk", str(model), "--set", f"double_pendulum:shoulder={value}"], [model],
                            must_refuse=True))
    for i in range(max(1, per_kind // 4)):
        path = mutated_file(folder, "scenario", rng)
        out = folder / f"runs-{i}"
        out.mkdir()
        (out / "results.json").write_text('{"earlier": true}')
        trials.append(Trial("scenario runs", ["run", str(path), "-o", str(out), "-q", "--force"], [path],
                            results_folder=out))
    scenario = folder / "scenario.json"
    text = json.loads(SEEDS["scenario"].read_text())
    text["machines"][0]["model"] = str(ROOT / "models" / "shift" / "cantilever10.json")
    scenario.write_text(json.dumps(text))
    for i in range(8):
        out = folder / f"killed-{i}"
        trials.append(Trial("kill trials", ["run", str(scenario), "-o", str(out), "-q", "--jobs", "2", "--force"],
                            [scenario], kill_after_s=0.5 + 2.5 * i / 7,
                            kill_signal=signal.SIGTERM if i % 2 == 0 else signal.SIGKILL, results_folder=out))
    return trials


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-kind", type=int, default=56, help="mutated files per reader kind (default 56)")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="shiftsim-audit-") as tmp:
        trials = plan(Path(tmp), args.per_kind, random.Random(args.seed))
        with concurrent.futures.ThreadPoolExecutor(args.workers) as pool:
            outcomes = list(pool.map(run_trial, trials))
    counts = {name: sum(name in o.findings for o in outcomes) for name in CLASSES}
    families: dict[str, int] = {}
    for o in outcomes:
        families[o.trial.family] = families.get(o.trial.family, 0) + 1
    print(f"{len(outcomes)} trials in {time.monotonic() - started:.0f} s (seed {args.seed}): "
          + ", ".join(f"{k} {v}" for k, v in families.items()))
    print(", ".join(f"{count} {name}" for name, count in counts.items()))
    exits: dict[str, int] = {}
    for o in outcomes:
        exits[str(o.returncode)] = exits.get(str(o.returncode), 0) + 1
    print("exit codes:", ", ".join(f"{k}: {v}" for k, v in sorted(exits.items())))
    for o in outcomes:
        if o.findings:
            print(f"\n{', '.join(o.findings)}: shiftsim {' '.join(o.trial.argv)} -> exit {o.returncode}\n"
                  f"{o.stderr[-1200:]}")
    return 1 if any(counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
