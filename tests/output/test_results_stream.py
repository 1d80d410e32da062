"""Steps streamed into the columnar store while the run solves (issue 27): parts on disk during the run with a
bounded buffer, a long run's results.json a summary of a size that does not grow with its steps, and the
folder read back lazily equal to the run in memory."""

from __future__ import annotations

import json

import jsonschema
import numpy as np
import pytest
from helpers.scenario import SCENARIOS, beam_scenario, run_cli, write_scenario

import shiftsim
from shiftsim.output import writers
from shiftsim.output.store import open_store
from shiftsim.output.write import ResultsStream, write_results
from shiftsim.scenario import LocalExecutor, build_scenario, run
from shiftsim.scenario.schema import load_schema


def _sweep(steps: int) -> dict:
    return beam_scenario(sweep={"parameters": {"load:tip": {"from": 0.0, "to": 1.0, "steps": steps}}})


def _assert_same_results(one, other):
    assert one.keys() == other.keys() and len(one.keys()) > 0
    for key in one:
        np.testing.assert_array_equal(one[key], other[key])
    np.testing.assert_array_equal(one.steps.index, other.steps.index)
    assert list(one.steps.status) == list(other.steps.status)


@pytest.mark.slow
def test_a_long_run_writes_a_summary_results_json_and_its_steps_in_the_store(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(writers, "JSON_STEP_LIMIT", 2)  # the beam's 3 steps count as a long run
    document = beam_scenario()  # the CSV asked for (outputs.csv): written for a long run too
    path = write_scenario(tmp_path, document)
    code, out, err = run_cli(capsys, "run", path, "-o", tmp_path / "out")
    assert code == 0, err
    written = json.loads((tmp_path / "out" / "results.json").read_text())
    jsonschema.Draft202012Validator(load_schema("results")).validate(written)
    assert "steps" not in written and "scene" not in written
    assert written["summary"] == {"steps": 3, "converged": 3, "failed": [], "in_results_json": False}
    loaded = shiftsim.load_results(tmp_path / "out")  # every number from the store
    _assert_same_results(shiftsim.run_scenario(document), loaded)
    assert "3 of 3 steps converged" in (tmp_path / "out" / "report.html").read_text()
    frame = loaded.to_dataframe()
    assert len(frame) == len((tmp_path / "out" / "results.csv").read_text().splitlines()) - 1
    assert sorted(set(frame.step)) == [0, 1, 2]
    assert "outputs in" in out and "steps/, values/" in out
    from shiftsim.commands.view import _results  # the viewer reads it from the store, runs nothing (docs/view.md)

    viewed = _results(tmp_path / "out")
    assert "running" not in capsys.readouterr().out
    np.testing.assert_array_equal(viewed.steps.index, loaded.steps.index)


@pytest.mark.slow
def test_steps_reach_the_store_while_the_run_solves_and_the_buffer_stays_bounded(tmp_path):
    """The memory the store holds is at most one part's rows being written, one part's rows and one step's,
    however many steps: the stream writes its parts on a thread of its own, each in place at the latest when the next
    is handed over."""
    scenario = build_scenario(tmp_path / "long.json", _sweep(16))
    rows_per_part = 500  # values of about 3 beam steps
    stream = ResultsStream(tmp_path / "out", scenario, rows_per_part=rows_per_part)
    seen = []

    def on_step(step):
        stream.add(step)
        parts = sorted((stream.staging / "values").glob("part-*.parquet"))
        seen.append((stream.writer.buffered, len(parts)))

    ran = run(scenario, LocalExecutor(1), on_step)
    per_step = len(writers.store_rows(ran.steps[0], scenario.sweep.names, writers.joint_units(scenario))[1])
    steps_per_part = -(-rows_per_part // per_step)  # a part once this many steps are held
    assert steps_per_part == 3  # 176 values a step: 10 bodies, 2 joints, a frame, the coordinates loaded and unloaded
    assert max(buffered for buffered, _ in seen) < rows_per_part  # a part is written as soon as one is full
    handed_over = [(k + 1) // steps_per_part for k in range(16)]
    assert all(max(count - 1, 0) <= parts <= count for (_, parts), count in zip(seen, handed_over))
    assert [parts for _, parts in seen][-1] >= handed_over[-1] - 1 and max(parts for _, parts in seen) >= 4
    write_results(ran, tmp_path / "out", stream=stream)
    assert not stream.staging.exists()
    assert len(list((tmp_path / "out" / "values").glob("part-*.parquet"))) == 16 // steps_per_part + 1
    _assert_same_results(shiftsim.run_scenario(_sweep(16)), shiftsim.load_results(tmp_path / "out"))


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_folder_reads_lazily_one_quantity_at_a_time(tmp_path, jobs, monkeypatch):
    """load_results reads no values until asked, then only the rows of the (entity, quantity) asked for."""
    document = _sweep(6)
    document["sweep"]["segment"] = 2
    ran = shiftsim.run_scenario(document, jobs=jobs, output=tmp_path / "out")
    expected = {key: ran[key] for key in ran}  # the run's arrays, one pair at a time, before the reads are counted
    store = open_store(tmp_path / "out")
    asked = []
    select = type(store).select

    def counting(self, *args, **kwargs):
        table = select(self, *args, **kwargs)
        asked.append((args, table.num_rows))
        return table

    monkeypatch.setattr(type(store), "select", counting)
    loaded = shiftsim.load_results(tmp_path / "out")
    assert asked == [] and len(loaded.steps) == 6
    effort = loaded["beam:hinge1", "effort"]
    assert asked == [((["beam:hinge1"], ["effort"]), 6)]
    loaded["beam:hinge1", "effort"]  # kept: not read again
    assert len(asked) == 1
    np.testing.assert_array_equal(effort, expected["beam:hinge1", "effort"])
    every = loaded.select(loaded.keys())  # every other pair in one more scan, equal to the run's arrays one by one
    assert len(asked) == 2 and asked[1][1] == loaded.store.values.count_rows()  # (it filters entity and quantity)
    assert list(every) == list(expected)
    for key, array in every.items():
        np.testing.assert_array_equal(array, expected[key])
        assert array is loaded[key]  # kept
    assert len(asked) == 2


@pytest.mark.slow
def test_collisions_reach_the_store_checked_in_batches(tmp_path, monkeypatch):
    """two_excavators cut to 9 steps, collisions checked 4 steps at a time before the steps are streamed: the
    store's pair distances are results.json's, and they close in as the closed form of the scenario says (the
    gap 2.0 m - (1.7 m sin a + 1.5 m cos a) shrinks with the slew a)."""
    from shiftsim.scenario import executors

    monkeypatch.setattr(executors, "COLLISION_BATCH", 4)
    document = json.loads((SCENARIOS / "two_excavators.json").read_text())
    for machine in document["machines"]:
        machine["model"] = str((SCENARIOS / machine["model"]).resolve())
    document["sweep"]["parameters"]["ex1:c1:tracks.rz"]["steps"] = 9
    document["outputs"] = {"plots": []}
    shiftsim.run_scenario(document, output=tmp_path / "out")
    written = json.loads((tmp_path / "out" / "results.json").read_text())
    loaded = shiftsim.load_results(tmp_path / "out")
    distance = loaded["ex1|ex2", "distance"]
    assert distance.tolist() == [step["collisions"][0]["distance"] for step in written["steps"]]
    assert loaded["ex1|ex2", "in_collision"].tolist() == [float(s["collisions"][0]["in_collision"])
                                                          for s in written["steps"]]
    slew = loaded.steps["ex1:c1:tracks.rz"]
    gap = 2.0 - (1.7 * np.sin(slew) + 1.5 * np.cos(slew))
    assert np.all(np.diff(distance)[np.diff(gap) < 0] < 0)


@pytest.mark.slow
def test_a_folder_of_an_earlier_version_loads_from_its_results_json(tmp_path, capsys):
    """Before the streamed store a folder held results.json with its steps and single-file Parquet tables of
    another layout: load_results reads results.json, as then."""
    path = write_scenario(tmp_path, beam_scenario())
    assert run_cli(capsys, "run", path, "-o", tmp_path / "out")[0] == 0
    loaded = shiftsim.load_results(tmp_path / "out")
    now = {key: loaded[key] for key in loaded if key[1] not in writers.STORE_ONLY}  # read before the store goes
    for name in ("steps", "values"):
        for part in (tmp_path / "out" / name).iterdir():
            part.unlink()
        (tmp_path / "out" / name).rmdir()
        (tmp_path / "out" / f"{name}.parquet").write_bytes(b"PAR1 of another layout")
    earlier = shiftsim.load_results(tmp_path / "out")
    assert list(now) == earlier.keys()
    for key in earlier:
        np.testing.assert_array_equal(now[key], earlier[key])


def test_a_store_folder_holding_other_files_is_refused_before_solving(tmp_path, capsys):
    path = write_scenario(tmp_path, beam_scenario())
    (tmp_path / "out" / "values").mkdir(parents=True)
    (tmp_path / "out" / "values" / "mine.txt").write_text("keep")
    code, _, err = run_cli(capsys, "run", path, "-o", tmp_path / "out", "--force")
    assert code == 2 and "values: is not a results store's part folder" in err
    assert (tmp_path / "out" / "values" / "mine.txt").read_text() == "keep"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["values"]
