"""A scenario reads each machine's model file once: the JSON parsed to sniff its format is the one read."""

from __future__ import annotations

import shiftsim.jsonio
import shiftsim.scenario.loading
from helpers.scenario import beam_scenario, write_scenario

from shiftsim.scenario import load_scenario


def test_each_model_file_is_parsed_once(tmp_path, monkeypatch):
    parsed: list[str] = []
    real = shiftsim.jsonio.read_json

    def counting(path, *args, **kwargs):
        parsed.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(shiftsim.jsonio, "read_json", counting)
    monkeypatch.setattr(shiftsim.scenario.loading, "read_json", counting)
    scenario = load_scenario(write_scenario(tmp_path, beam_scenario()))
    models = [p for p in parsed if p.endswith("cantilever10.json")]
    assert len(models) == 1, parsed
    assert scenario.machines[0].model.nq > 0
