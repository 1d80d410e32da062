"""Round-off is not a result: the run summary reports no peak of exactly 0 and no peak below the run's force floor;
each peak it reports is the largest |effort| of that joint in results.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from shiftsim.analysis.digest import CARRIES_NOTHING
from shiftsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
PEAK = re.compile(r"peak (force|torque)\s+(\S+) (kN m|N m|kN|N) at (.+?), step")


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["two_excavators", "four_bar_drive"])
def test_summary_peaks_are_results(scenario, tmp_path, capsys):
    main(["run", str(ROOT / "scenarios" / f"{scenario}.json"), "-o", str(tmp_path)])
    out = capsys.readouterr().out
    document = json.loads((tmp_path / "results.json").read_text())
    largest = {}
    for step in document["steps"]:
        for name, joint in step["joints"].items():
            largest[name] = max(largest.get(name, 0.0), float(np.max(np.abs(joint["effort"]))))
    floor = CARRIES_NOTHING * max(largest.values(), default=0.0)
    peaks = PEAK.findall(out)
    for kind, value, unit, name in peaks:
        shown = abs(float(value)) * (1e3 if unit.startswith("k") else 1.0)
        assert shown > 0 and shown > floor, out
        assert shown == pytest.approx(largest[name], rel=1e-3), out
    if not any(value > floor and value > 0 for value in largest.values()):
        assert not peaks and "peak effort      none" in out
    else:
        assert peaks
