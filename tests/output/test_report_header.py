"""report.html's header counts the converged steps (a failed step is not a converged one), as results.json has them."""

from __future__ import annotations

import json
import re

from helpers.scenario import SLIDER
from helpers.scenario import run_cli, write_scenario


def test_header_counts_converged_steps(tmp_path, capsys):
    path = write_scenario(tmp_path, SLIDER)
    run_cli(capsys, "run", path, "-o", tmp_path / "out")  # one of the three steps cannot assemble
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    page = (tmp_path / "out" / "report.html").read_text()
    converged, planned = map(int, re.search(r"(\d+) of (\d+) steps converged", page).groups())
    assert converged == sum(step["status"] == "converged" for step in document["steps"]) == 2
    assert planned == document["steps_planned"] == 3
