"""Plots of a run: coinciding series, empty plots skipped with a reason, pin loads, pose views and
exaggeration, the closest-approach step, the registry, numbers without -0."""

from __future__ import annotations

import dataclasses
import json
import math

import matplotlib.colors
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from helpers.scenario import REPO, PNG_SIGNATURE, beam_scenario, model_path, png_size, run_cli, write_scenario

from shiftsim.scenario import LocalExecutor, execute, load_scenario
from shiftsim.plots import registry as plots
from shiftsim.analysis.digest import closest_step, number, parameter_text, pin_load_peaks
from shiftsim.plots.registry import Plot, chosen_plots, skipped_plots
from helpers.plots import results_of
from shiftsim.plots.figures import FAILED_COLOUR, SweepAxis, coinciding, plot_series, sweep_axis
from shiftsim.plots.pose import SAG_SHARE, _exaggeration, _views
from shiftsim.scenario.runner import StepResult

RIGID = {"name": "slider", "machines": [{"id": "sc", "model": model_path("slider_crank")}],
         "sweep": {"parameters": {"sc:slider_crank:slider_guide": [0.5, 0.6]}},
         "track": {"frames": ["sc:slider_crank:slider"], "joints": ["sc:slider_crank:crank_pin"]},
         "outputs": {"csv": False, "dpi": 30, "plots": ["deflection", "efforts", "pin_loads", "convergence"]}}


def test_series_that_coincide_are_one_line_labelled_with_every_name():
    x = np.linspace(0.0, 1.0, 5)
    series = {"cyl": 3e5 + x, "oil": 3e5 + x + 1e-3, "stick": -x, "gap": np.where(x > 0.5, np.nan, 3e5 + x)}
    # 1e-3 N on 3e5 N coincides (below 1e-6 of the largest); a series with gaps elsewhere does not
    assert coinciding(series) == [["cyl", "oil"], ["stick"], ["gap"]]
    steps = [StepResult(k, {"p": float(v)}, "converged", 1, 0.0, True) for k, v in enumerate(x)]
    axis = SweepAxis("p (m)", lambda s: s.parameters["p"], [("", steps)])
    figure = Figure()
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    plot_series(ax, axis, lambda s, name: float(series[name][s.index]), list(series))
    assert [line.get_label() for line in ax.get_lines()] == ["cyl = oil", "stick", "gap"]


def test_the_demo_boom_cylinder_and_its_oil_column_are_one_line():
    scenario = load_scenario(REPO / "scenarios" / "excavator_lift.json")
    steps = execute(scenario, LocalExecutor(1))
    forces = {name: np.array([s.joints[name]["effort"] for s in steps])
              for name in ("ex1:arm:boom_cyl", "ex1:arm:boom_cyl_oil", "ex1:arm:stick_cyl")}
    np.testing.assert_allclose(forces["ex1:arm:boom_cyl"], forces["ex1:arm:boom_cyl_oil"], rtol=1e-9)  # in series
    assert ["ex1:arm:boom_cyl", "ex1:arm:boom_cyl_oil"] in coinciding(forces)
    assert ["ex1:arm:stick_cyl"] in coinciding(forces)


@pytest.mark.slow
def test_empty_plots_are_not_written_and_the_summary_says_why(tmp_path, capsys):
    code, out, err = run_cli(capsys, "run", write_scenario(tmp_path, RIGID), "-o", tmp_path / "out")
    assert code == 0, err
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == ["convergence.png", "pin_loads.png", "report.html", "results.json", "steps", "values"]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    largest = max(np.linalg.norm(f["deflection"]) for s in results["steps"] for f in s["frames"].values())
    assert largest < 1e-9  # the rigid slider-crank: nothing to plot, independently of the plot code
    assert "not plotted     deflection.png: no tracked frame deflects measurably" in out
    # the crank pin turns freely: its effort is round-off beside the force it carries (no "peak" of 1e-15 N m)
    efforts = [abs(s["joints"]["sc:slider_crank:crank_pin"]["effort"]) for s in results["steps"]]
    pin_load = max(np.linalg.norm(s["joints"]["sc:slider_crank:crank_pin"]["wrench_world"][:3])
                   for s in results["steps"])
    assert 0.0 < max(efforts) < 1e-12 * pin_load and pin_load > 1.0
    assert "not plotted     efforts.png: no tracked joint carries an effort: the largest" in out
    assert "is round-off" in out and "peak torque" not in out
    for name in ("convergence", "pin_loads"):
        assert png_size(tmp_path / "out" / f"{name}.png") == tuple(round(v * 30) for v in plots.FIGURE_SIZES[name])


@pytest.mark.slow
def test_a_deflecting_beam_gets_its_deflection_plot(tmp_path, capsys):
    document = beam_scenario(outputs={"csv": False, "dpi": 30, "plots": ["deflection", "pose"]})
    scenario = load_scenario(write_scenario(tmp_path, document))
    steps = execute(scenario, LocalExecutor(1))
    assert skipped_plots(scenario, steps) == {}
    files, skipped = plots.render(scenario, results_of(scenario, steps))
    assert list(files) == ["deflection.png", "pose.png"] and skipped == {}
    assert all(data.startswith(PNG_SIGNATURE) for data in files.values())


def test_pin_loads_are_the_force_magnitudes_of_every_tracked_joint_loop_closing_included():
    scenario = load_scenario(REPO / "scenarios" / "four_bar_drive.json")
    steps = execute(scenario, LocalExecutor(1))
    peaks = pin_load_peaks(steps)
    assert set(peaks) == {f"fb:four_bar:{j}" for j in ("crank_pin", "coupler_pin", "rocker_pin", "ground_pin")}
    for name, peak in peaks.items():
        magnitudes = [math.hypot(*s.joints[name]["wrench_world"][:3]) for s in steps]
        assert peak.value == pytest.approx(max(magnitudes), rel=1e-12)
    # the whole mechanism's weight reaches the ground through the two ground pins at every step
    weight = 9.81 * (0.942 + 2.826 + 1.884)  # crank, coupler, rocker (models/shift/four_bar.json)
    mass_check = [s for s in steps if s.converged][0]
    assert mass_check.joints["fb:four_bar:crank_pin"]["wrench_world"][2] + \
        mass_check.joints["fb:four_bar:ground_pin"]["wrench_world"][2] == pytest.approx(weight, rel=1e-6)
    assert "pin_loads" in chosen_plots(scenario) and "pin_loads.png" not in skipped_plots(scenario, steps)


@pytest.mark.slow
def test_pin_load_components_on_request(tmp_path):
    document = beam_scenario(outputs={"csv": False, "dpi": 30, "plots": ["pin_loads"],
                                      "plot_options": {"pin_loads": {"components": True}}})
    scenario = load_scenario(write_scenario(tmp_path, document))
    assert scenario.outputs.plot_options == {"pin_loads": {"components": True}}
    steps = execute(scenario, LocalExecutor(1))
    assert plots.render(scenario, results_of(scenario, steps))[0]["pin_loads.png"].startswith(PNG_SIGNATURE)
    bad = beam_scenario(outputs={"plot_options": {"pin_loads": {"components": "yes"}}})
    with pytest.raises(Exception, match="plot_options"):
        load_scenario(write_scenario(tmp_path, bad, "bad.json"))


def test_views_follow_the_motion():
    planar = _views(motion=np.array([4.0, 0.0, 5.0]), extent=np.array([9.0, 0.0, 10.0]))
    assert planar == [(0, 2)]  # x-z only: a planar machine needs no top view
    slewing = _views(motion=np.array([3.0, 2.0, 0.0]), extent=np.array([5.0, 13.0, 4.0]))
    assert slewing == [(0, 1), (0, 2)]  # top view first; then the depth axis z beside x, which moves most
    sliding = _views(motion=np.array([1.1, 0.0, 0.0]), extent=np.array([8.0, 13.0, 4.0]))
    assert sliding == [(0, 1), (0, 2)]  # moved along x: top view, then the side view x-z (not y-z)
    still = _views(motion=np.zeros(3), extent=np.array([0.5, 0.1, 2.0]))
    assert still[0] == (0, 2)


@pytest.mark.parametrize("deflection, size", [(0.174, 8.0), (0.01, 5.0), (3e-4, 2.0), (2.0, 5.0), (1e-12, 3.0)])
def test_the_exaggeration_is_a_round_factor_that_makes_the_sag_visible(deflection, size):
    factor = _exaggeration(deflection, size)
    mantissa = factor / 10.0 ** math.floor(math.log10(factor))
    assert min(abs(mantissa - m) for m in (1.0, 2.0, 5.0)) < 1e-9
    if deflection < 1e-9 or deflection >= SAG_SHARE * size / 2.0:
        assert factor == 1.0  # noise is not magnified; a large sag is shown at true scale
    else:
        assert SAG_SHARE * size / 2.5 <= factor * deflection <= SAG_SHARE * size


def _collision_step(index: int, distance: float, converged: bool = True) -> StepResult:
    step = StepResult(index, {}, "converged" if converged else "failed", 1, 0.0, converged)
    step.collisions = [{"a": "ex1", "b": "ex2", "distance": distance, "in_collision": distance < 0.05}]
    return step


def test_collision_scenarios_show_the_closest_approach_step():
    steps = [_collision_step(0, 0.3), _collision_step(1, 0.02), _collision_step(2, -0.5, converged=False),
             _collision_step(3, 0.1)]
    assert closest_step(steps).index == 1  # least distance among converged steps
    assert closest_step([StepResult(0, {}, "converged", 1, 0.0, True)]) is None


def test_a_new_plot_kind_is_one_registry_entry(tmp_path, monkeypatch):
    scenario = load_scenario(write_scenario(tmp_path, beam_scenario()))
    steps = execute(scenario, LocalExecutor(1))
    histogram = Plot("stroke_histogram", lambda sc, st, size, dpi, ranking: PNG_SIGNATURE + bytes(
        [len(st), dpi, *size, len(ranking.deflection)]), (3, 2), lambda sc, st, ranking: None, lambda sc: None)
    monkeypatch.setitem(plots.PLOTS, "stroke_histogram", histogram)
    wanted = dataclasses.replace(scenario, outputs=dataclasses.replace(scenario.outputs, plots=("stroke_histogram",)))
    files, skipped = plots.render(wanted, results_of(scenario, steps))
    assert files == {"stroke_histogram.png": PNG_SIGNATURE + bytes([3, 100, 3, 2, 1])} and skipped == {}  # 1 frame


def test_numbers_never_print_minus_zero():
    assert number(-0.0) == "0" and number(0.0) == "0"
    assert number(-1.5e-7) == "-1.5e-07" and number(-2.5) == "-2.5" and number(297012.3) == "2.97e+05"


def test_swept_angles_are_drawn_in_the_scenario_angle_unit(tmp_path):
    document = json.loads((REPO / "scenarios" / "four_bar_drive.json").read_text())
    document["machines"][0]["model"] = model_path("four_bar")
    document["sweep"]["parameters"]["fb:four_bar:crank_pin"] = [0.0, math.pi / 2.0]
    for unit, factor in (("rad", 1.0), ("deg", 180.0 / math.pi)):
        scenario = load_scenario(write_scenario(tmp_path, {**document, "angle_unit": unit}))
        steps = [StepResult(k, {"fb:four_bar:crank_pin": v}, "converged", 1, 0.0, True)
                 for k, v in enumerate([0.0, math.pi / 2.0])]
        axis = sweep_axis(scenario, steps)
        assert axis.label == f"fb:four_bar:crank_pin ({unit})"
        assert [axis.x(s) for s in steps] == pytest.approx([0.0, factor * math.pi / 2.0])
        assert parameter_text(scenario, steps[1]) == f"fb:four_bar:crank_pin = {number(factor * math.pi / 2.0)} {unit}"


@pytest.fixture
def figures(monkeypatch):
    """The matplotlib figures the plot functions draw, captured instead of encoded."""
    from shiftsim.plots import collisions as collision_plot, pose as pose_plot, sweep as sweep_plots

    drawn = []
    for module in (sweep_plots, pose_plot, collision_plot):
        monkeypatch.setattr(module, "png", lambda fig: drawn.append(fig) or PNG_SIGNATURE)
    return drawn


def test_convergence_draws_the_tolerance_zeros_at_the_floor_and_no_empty_bars(tmp_path, figures):
    scenario = load_scenario(write_scenario(tmp_path, beam_scenario(outputs={"plots": ["convergence"]})))
    steps = [StepResult(0, {"load:tip": 0.0}, "converged", 0, 0.0, True),
             StepResult(1, {"load:tip": 0.5}, "converged", 3, 2e-12, True),
             StepResult(2, {"load:tip": 1.0}, "failed", 60, 3e-3, False)]
    plots.PLOTS["convergence"].draw(scenario, steps, plots.FIGURE_SIZES["convergence"], 30)
    top, bottom = figures[0].axes
    outline = np.concatenate([path.vertices for bars in top.collections for path in bars.get_paths()])
    raised = outline[outline[:, 1] > 0]  # the bars' tops: steps 1 and 2 only, 0.8 wide
    assert sorted(set(raised[:, 1].tolist())) == [3, 60]
    assert sorted(set(np.round(raised[:, 0], 9).tolist())) == [0.6, 1.4, 1.6, 2.4]  # step 0 (0 iterations): a mark
    lines = {line.get_label(): line for line in bottom.get_lines()}
    tolerance = next(line for label, line in lines.items() if label.startswith("solver tolerance"))
    assert tolerance.get_ydata()[0] == pytest.approx(1e-10)
    zero = next(line for label, line in lines.items() if "exactly 0" in label)
    assert list(zero.get_xdata()) == [0] and zero.get_ydata()[0] == pytest.approx(bottom.get_ylim()[0])
    assert bottom.get_ylim()[0] < 2e-12 < 3e-3 < bottom.get_ylim()[1]


@pytest.mark.slow
def test_every_axis_names_a_quantity_and_a_unit(figures):
    import re

    for name in ("excavator_lift.json", "four_bar_drive.json", "mdx_heave.json"):
        scenario = load_scenario(REPO / "scenarios" / name)
        scenario = dataclasses.replace(scenario, outputs=dataclasses.replace(
            scenario.outputs, plots=tuple(p for p in plots.PLOTS if p in ("deflection", "efforts", "pin_loads",
                                                                              "pose", "convergence", "actuators")
                                          and (p != "actuators" or "mdx" in name))))
        figures.clear()
        steps = execute(scenario, LocalExecutor(1))
        plots.render(scenario, results_of(scenario, steps))
        assert figures
        for figure in figures:
            for ax in figure.axes:
                if not ax.get_visible():
                    continue
                for label in (ax.get_xlabel(), ax.get_ylabel()):
                    if label:  # shared x axes label the bottom panel only
                        assert re.search(r"\S.*\((-|[^)]*[A-Za-z][^)]*)\)", label), (name, label)
                assert ax.get_ylabel(), (name, ax.get_title())
            assert any(ax.get_xlabel() for ax in figure.axes if ax.get_visible())


def test_convergence_colours_each_step_by_its_verdict(tmp_path, figures):
    """Stable, neutral and unstable converged steps and failed steps are told apart in the legend and bars."""
    scenario = load_scenario(write_scenario(tmp_path, beam_scenario(outputs={"plots": ["convergence"]})))
    steps = [StepResult(0, {"load:tip": 0.0}, "converged", 2, 1e-12, True, stability="stable"),
             StepResult(1, {"load:tip": 0.3}, "converged", 4, 1e-12, False, stability="neutral"),
             StepResult(2, {"load:tip": 0.6}, "converged", 5, 1e-12, False, stability="unstable"),
             StepResult(3, {"load:tip": 1.0}, "failed", 60, 3e-3, False, stability="unknown")]
    plots.PLOTS["convergence"].draw(scenario, steps, plots.FIGURE_SIZES["convergence"], 30)
    top = figures[0].axes[0]
    labels = {bars.get_label(): sorted(set(bars.get_paths()[0].vertices[:, 1].tolist()) - {0.0})
              for bars in top.collections}
    assert labels == {"converged, stable": [2], "converged, neutral": [4], "converged, unstable": [5], "failed": [60]}
    colours = {bars.get_label(): matplotlib.colors.to_hex(bars.get_facecolor()[0]) for bars in top.collections}
    assert colours == {"converged, stable": matplotlib.colors.to_hex("tab:blue"),
                       "converged, neutral": matplotlib.colors.to_hex("tab:green"),
                       "converged, unstable": matplotlib.colors.to_hex("tab:orange"),
                       "failed": matplotlib.colors.to_hex(FAILED_COLOUR)}


def test_the_scenario_schema_and_the_docs_offer_exactly_the_registered_plots():
    """The plot kinds a scenario may name (the schema's enum, in order) and the plots docs/scenarios.md lists (its
    outputs table and its Plots table) are the registry's records; plot options exist only for registered kinds."""
    import re

    from shiftsim.scenario.schema import load_schema

    outputs = load_schema("scenario")["$defs"]["outputs"]["properties"]
    assert outputs["plots"]["items"]["enum"] == list(plots.PLOTS)
    assert set(outputs["plot_options"]["properties"]) <= set(plots.PLOTS)
    assert all(name == plot.name for name, plot in plots.PLOTS.items())
    docs = (REPO / "docs" / "scenarios.md").read_text(encoding="utf-8")
    offered = re.search(r"\| `plots` \| subset of `\[([^]]*)\]`", docs).group(1)
    assert [name.strip().strip('"') for name in offered.split(",")] == list(plots.PLOTS)
    table = docs[docs.index("### Plots"):]
    listed = re.findall(r"^\| `(\w+)\.png` \| (\d+) × (\d+) \|", table, flags=re.M)
    assert [(name, (int(w), int(h))) for name, w, h in listed] == [
        (name, (round(plot.size[0] * 100), round(plot.size[1] * 100))) for name, plot in plots.PLOTS.items()]


def test_plots_that_do_not_apply_are_refused_naming_the_place(tmp_path):
    """A plot asked for that cannot be drawn for the scenario is a scenario error naming outputs.plots[k] and why;
    unnamed, only the plots that apply are drawn."""
    from shiftsim.errors import ScenarioError

    scenario = load_scenario(write_scenario(tmp_path, beam_scenario(outputs={"plots": ["pose", "footprint"]})))
    with pytest.raises(ScenarioError, match=r"outputs.plots\[1\]: 'footprint' cannot be drawn: no machine has"):
        chosen_plots(scenario)
    default = load_scenario(write_scenario(tmp_path, beam_scenario(outputs={}), "default.json"))
    assert chosen_plots(default) == ("deflection", "efforts", "pin_loads", "pose", "convergence")
    assert all(plots.PLOTS[name].applies(default) is None for name in chosen_plots(default))
    assert {name for name, plot in plots.PLOTS.items() if plot.applies(default) is not None} == {
        "actuators", "collisions", "footprint"}
