"""``shiftsim view RESULTS_FOLDER|SCENARIO [--port N] [--no-browser]``: the run in the browser, in 3D.

A results folder (or its results.json) is read as written by ``shiftsim run`` (no solve; a run too long
for results.json to hold its steps is read from its store step by step, the machines posed by forward kinematics
of the model files it recorded, docs/view.md); a scenario file (.json that is not a results document) is run first, in memory (nothing written). The address is
printed; the browser is opened unless ``--no-browser``; Ctrl-C stops the server. Needs the optional
extra ``view`` (viser): ``pip install 'shiftsim[view]'``. Exit codes: 0 stopped by Ctrl-C, 2 bad input
or the extra missing, 1 the port could not be opened.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import threading
import warnings
import webbrowser
from pathlib import Path

from ..errors import InputError, Problem, ShiftsimWarning

HELP = "the run in the browser, in 3D (viser): a results folder, or a scenario run first"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "view", help=HELP,
        description="Show a run in the browser with viser: every machine at every step (a step slider and a step "
                    "number box; the swept values shown), bodies, exaggerated deflections, joint and contact forces, "
                    "support polygon, collision pairs, capacity points (click one to pose the machine there); a run "
                    "of any length (docs/view.md). Needs "
                    "`pip install 'shiftsim[view]'`. Exit 0 stopped with Ctrl-C, 2 bad input or viser missing, "
                    "1 the server could not start.")
    parser.add_argument("source", help="a results folder (or its results.json) written by shiftsim run, or a "
                                       "scenario file (.json), run first")
    parser.add_argument("--port", type=int, default=8080, help="port on 127.0.0.1 (default 8080; 0: any free port)")
    parser.add_argument("--no-browser", action="store_true", help="print the address only; do not open a browser")
    parser.set_defaults(func=run)


def _need_viser() -> None:
    if importlib.util.find_spec("viser") is None:
        raise InputError([Problem("shiftsim view", "viser", "the optional extra 'view' is not installed",
                                  "pip install 'shiftsim[view]' (it installs viser)")])


def _results(source: Path):
    """The results of ``source`` (a RunResults): a results folder or results.json read, or a scenario run."""
    from ..jsonio import read_json
    from ..output.run_results import load_results, run_scenario

    path = source / "results.json" if source.is_dir() else source
    if not path.exists():
        raise InputError([Problem(str(source), "", "no such file or folder",
                                  "a results folder (with results.json) or a scenario file")])
    document, _ = read_json(path, InputError)
    if isinstance(document, dict) and "shiftsim_version" in document and "steps_planned" in document:
        return load_results(path)  # a long run's steps are in its store: each shown step is read from it
    print(f"running {path} (nothing is written; shiftsim run writes the results folder)")
    with warnings.catch_warnings(record=True) as caught:  # shown now, grouped as shiftsim run shows them: the
        warnings.simplefilter("always", ShiftsimWarning)  # server runs until Ctrl-C, the command's end is too late
        results = run_scenario(path)
    for line in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, ShiftsimWarning)):
        print(f"warning: {line}", file=sys.stderr)
    for w in caught:
        if not issubclass(w.category, ShiftsimWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return results


def run(args: argparse.Namespace) -> int:
    _need_viser()
    results = _results(Path(args.source))
    from ..view.server import RunView

    try:
        view = RunView(results, port=args.port)
    except OSError as error:
        print(f"shiftsim view: error: cannot serve on port {args.port}: {error.strerror or error}")
        return 1
    if view.drawing.scene.note:
        print(f"warning: {args.source}: {view.drawing.scene.note}", file=sys.stderr)
    print(f"viewing {results.scenario} at {view.url} (Ctrl-C stops)", flush=True)
    if not args.no_browser:
        webbrowser.open(view.url)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        view.stop()
    return 0
