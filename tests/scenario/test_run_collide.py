"""``shiftsim collide -q``: the one-line verdict only, as ``run -q`` keeps quiet; same exit code."""

from __future__ import annotations

import json

import pytest

from helpers.scenario import SCENARIOS, run_cli


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_verdict_tells_contact_from_the_margin_band(capsys):
    """two_excavators: the gap is 2.0 m - (1.7 m sin a + 1.5 m cos a) at a slew of a = 0, 1, ... 40 degrees
    (the scenario's closed form): within the 0.05 m margin from one step, touching from a later one."""
    import math

    gaps = [2.0 - (1.7 * math.sin(math.radians(a)) + 1.5 * math.cos(math.radians(a))) for a in range(41)]
    first_band = next(a for a, gap in enumerate(gaps) if 0.0 < gap < 0.05)
    first_contact = next(a for a, gap in enumerate(gaps) if gap <= 0.0)
    assert first_band < first_contact  # 18 and 21
    code, out, _ = run_cli(capsys, "collide", SCENARIOS / "two_excavators.json", "-q")
    band, contact = out.strip().split("; ")
    assert code == 3
    assert band.startswith(f"within margin (0.05 m) first at step {first_band} ")
    assert contact.startswith(f"in collision first at step {first_contact} ")
    lines = run_cli(capsys, "collide", SCENARIOS / "two_excavators.json")[1].splitlines()
    marks = [line.split()[0] for line in lines if line.startswith("  ")]
    assert marks == ["ex1"] * first_band + ["WITHIN"] * (first_contact - first_band) + ["COLLISION"] * (41 - first_contact)
