"""``shiftsim collide -q``: the one-line verdict only, as ``run -q`` keeps quiet; same exit code."""

from __future__ import annotations

import json

import pytest

from test_scenario_support import SCENARIOS, run_cli


def test_collide_quiet_prints_only_the_verdict(capsys, tmp_path):
    document = json.loads((SCENARIOS / "two_excavators.json").read_text())
    for machine in document["machines"]:
        machine["model"] = str((SCENARIOS / machine["model"]).resolve())
    scenario = tmp_path / "lenient.json"
    scenario.write_text("// a comment: read leniently, with a warning\n" + json.dumps(document))
    code, out, err = run_cli(capsys, "collide", scenario)
    steps = out.count("\nstep ") + out.startswith("step ")
    assert steps > 1 and "warning: " in err  # the full listing: a line per step (and a pair line each), warnings
    quiet_code, quiet_out, quiet_err = run_cli(capsys, "collide", scenario, "-q")
    assert quiet_code == code and quiet_err == ""
    assert quiet_out.splitlines() == [out.splitlines()[-1]]  # the summary line, nothing else


def test_collide_quiet_and_json_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as stopped:
        run_cli(capsys, "collide", SCENARIOS / "two_excavators.json", "-q", "--json")
    assert stopped.value.code == 2 and "not allowed with" in capsys.readouterr().err
