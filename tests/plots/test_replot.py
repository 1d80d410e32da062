"""Plots drawn from the results object: what the plots read survives results.json, so ``shiftsim plot`` of a
results folder draws the run's figures; it refuses a folder whose inputs changed or are gone, and names the plots."""

from __future__ import annotations

import hashlib
import io
import json
import shutil

import numpy as np
import pytest
from matplotlib.image import imread
from helpers.plots import SHIPPED, results_of, short_run
from helpers.scenario import beam_scenario, model_path, run_cli, write_scenario

from shiftsim.analysis.digest import RunDigest
from shiftsim.plots.data import steps_of
from shiftsim.plots.ground import support_polygon
from shiftsim.plots.registry import PLOTS, chosen_plots, skipped_plots

GROUND_KEYS = ("contact_forces", "contact_points", "centre_of_pressure", "tipping_margin")


def pixels(data: bytes) -> np.ndarray:
    return imread(io.BytesIO(data), format="png")


def same_steps(back, run) -> None:
    """Every field the plots read is the run's: numbers exactly (JSON keeps every float), names and order."""
    assert [s.index for s in back] == [s.index for s in run]
    for b, r in zip(back, run):
        assert (b.parameters, b.status, b.iterations, b.residual, b.stable, b.stability) == \
            (r.parameters, r.status, r.iterations, r.residual, r.stable, r.stability)
        assert b.joints == {name: {q: joint[q] for q in b.joints.get(name, {})} for name, joint in r.joints.items()}
        assert b.frames == r.frames
        assert set(b.q) == set(r.q) and all(np.array_equal(b.q[m], r.q[m]) and
                                            np.array_equal(b.q_reference[m], r.q_reference[m]) for m in r.q)
        assert b.actuators == r.actuators
        assert [{k: p[k] for k in ("a", "b", "distance", "in_collision", "points")} for p in b.collisions or []] == \
            [{k: p[k] for k in ("a", "b", "distance", "in_collision", "points")} for p in r.collisions or []]
        assert {m: {k: g[k] for k in GROUND_KEYS} for m, g in b.ground.items()} == \
            {m: {k: g[k] for k in GROUND_KEYS} for m, g in r.ground.items()}
        # the footprint plot's support polygon, from the contacts read back, is the one the run found
        assert {m: support_polygon(g) for m, g in b.ground.items()} == \
            {m: g["support_polygon"] for m, g in r.ground.items()}


@pytest.mark.slow
@pytest.mark.parametrize("source", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_plots_from_the_results_object_are_the_plots_of_the_run_s_steps(source):
    """Each shipped scenario (two steps): the steps read back from its results object equal the run's in every
    field a plot reads, and every plot drawn from them is the plot drawn from the run's own steps, pixel for pixel;
    so is every plot ranked by the run's digest (as ``shiftsim run`` draws them) instead of the peaks read back."""
    scenario, run = short_run(source)
    back = steps_of(scenario, results_of(scenario, run))
    same_steps(back, run)
    names = chosen_plots(scenario)
    digest = RunDigest.of(scenario, run)
    assert skipped_plots(scenario, back) == skipped_plots(scenario, run) == skipped_plots(scenario, back, None, digest)
    drawn = [n for n in names if f"{n}.png" not in skipped_plots(scenario, run)]
    assert drawn
    for name in drawn:
        plot = PLOTS[name]
        expected = pixels(plot.draw(scenario, run, plot.size, 20))
        assert np.array_equal(pixels(plot.draw(scenario, back, plot.size, 20)), expected), name
        assert np.array_equal(pixels(plot.draw(scenario, back, plot.size, 20, digest)), expected), name


@pytest.fixture
def beam_folder(tmp_path, capsys):
    """A deflecting beam run into ``out``, its model copied beside the scenario (so a test may change it)."""
    model = tmp_path / "beam.json"
    shutil.copy(model_path("cantilever10"), model)
    document = beam_scenario(outputs={"csv": False, "dpi": 20,
                                      "plots": ["deflection", "efforts", "pin_loads", "pose", "convergence"]})
    document["machines"][0]["model"] = str(model)
    code, _, err = run_cli(capsys, "run", write_scenario(tmp_path, document), "-o", tmp_path / "out")
    assert code == 0, err
    return tmp_path


@pytest.mark.slow
def test_shiftsim_plot_of_a_folder_draws_the_run_s_figures(beam_folder, capsys):
    out = beam_folder / "out"
    def hashes():
        return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in out.rglob("*")
                if p.is_file()}

    before = hashes()
    code, printed, err = run_cli(capsys, "plot", out, "-o", beam_folder / "again")
    assert code == 0, err
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["convergence.png", "deflection.png", "efforts.png", "pin_loads.png", "pose.png"]
    assert sorted(p.name for p in (beam_folder / "again").iterdir()) == pngs
    for name in pngs:
        assert np.array_equal(pixels((out / name).read_bytes()), pixels((beam_folder / "again" / name).read_bytes()))
    assert hashes() == before  # the folder is read, never written (results.json, the store, the run's PNGs)
    code, printed, err = run_cli(capsys, "plot", out / "results.json", "--only", "pose", "--dpi", "30", "-o",
                                 beam_folder / "pose")
    assert code == 0, err
    assert [p.name for p in (beam_folder / "pose").iterdir()] == ["pose.png"]
    assert pixels((beam_folder / "pose" / "pose.png").read_bytes()).shape[:2] == (8 * 30, 14 * 30)


@pytest.mark.slow
def test_shiftsim_plot_refuses_changed_or_missing_inputs_naming_them(beam_folder, capsys):
    model = beam_folder / "beam.json"
    text = model.read_text()
    model.write_text(text.replace("}", "} ", 1))  # the same model, other bytes: a change is a change
    code, _, err = run_cli(capsys, "plot", beam_folder / "out", "-o", beam_folder / "again")
    assert code == 2 and f"{model}: changed since the run (SHA-256" in err and "Traceback" not in err
    model.unlink()
    code, _, err = run_cli(capsys, "plot", beam_folder / "out", "-o", beam_folder / "again")
    assert code == 2 and f"{model}: is gone (the run read it)" in err
    assert not (beam_folder / "again").exists()  # nothing written


@pytest.mark.slow
def test_shiftsim_plot_names_the_valid_plots(beam_folder, capsys):
    code, _, err = run_cli(capsys, "plot", beam_folder / "out", "--only", "pose", "stress")
    assert code == 2 and "--only: stress: is not a plot" in err and ", ".join(PLOTS) in err
    code, _, err = run_cli(capsys, "plot", beam_folder / "out", "--only", "footprint")
    assert code == 2 and "footprint: cannot be drawn: no machine has 'contacts'" in err
    code, _, err = run_cli(capsys, "plot", beam_folder / "out", "--dpi", "5")
    assert code == 2 and "--dpi: 5: is out of range" in err


def test_shiftsim_plot_refuses_what_is_not_a_results_folder(tmp_path, capsys):
    code, _, err = run_cli(capsys, "plot", tmp_path / "nothing")
    assert code == 2 and "no such file or folder" in err
    code, _, err = run_cli(capsys, "plot", tmp_path)
    assert code == 2 and "results.json" in err and "Traceback" not in err


@pytest.mark.slow
def test_results_without_recorded_inputs_are_refused(beam_folder, capsys):
    path = beam_folder / "out" / "results.json"
    document = json.loads(path.read_text())
    del document["metadata"]
    path.write_text(json.dumps(document))
    code, _, err = run_cli(capsys, "plot", path)
    assert code == 2 and "metadata: records no inputs" in err
