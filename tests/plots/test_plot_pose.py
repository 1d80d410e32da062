"""The pose plot states the summary's peak deflection (in its legend): the same frame, step and number as ``shiftsim
run`` prints; its title and legend lie inside the figure."""

from __future__ import annotations

import pytest

import re

import numpy as np
from helpers.scenario import beam_scenario, write_scenario

from shiftsim.analysis.digest import result_lines
from shiftsim.plots import pose as pose_plots
from shiftsim.plots.registry import FIGURE_SIZES
from shiftsim.scenario import LocalExecutor, execute, load_scenario


@pytest.mark.slow
def test_the_pose_plot_states_the_summary_peak_deflection(tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(pose_plots, "png", lambda fig: drawn.append(fig) or b"")
    scenario = load_scenario(write_scenario(tmp_path, beam_scenario()))
    steps = execute(scenario, LocalExecutor(1))
    pose_plots.pose_plot(scenario, steps, FIGURE_SIZES["pose"], 30)
    figure = drawn[0]
    title = next(t.get_text() for t in figure.legends[0].get_texts() if t.get_text().startswith("unloaded reference"))
    stated = re.search(r"peak deflection (\S+) mm at (\S+), step (\d+)", title)
    summary = next(line for line in result_lines(scenario, steps) if "peak deflection" in line)
    printed = re.search(r"peak deflection\s+(\S+) mm at (\S+), step (\d+)", summary)
    assert stated is not None and printed is not None and stated.groups() == printed.groups()
    # and that is the largest |deflection| of the tracked frame over the steps, computed here
    value, index = max((float(np.linalg.norm(s.frames["beam:link10:tip"]["deflection"])), s.index) for s in steps)
    assert float(stated.group(1)) == float(f"{value * 1e3:.4g}") and int(stated.group(3)) == index
    figure.canvas.draw()
    renderer, box = figure.canvas.get_renderer(), figure.bbox
    for artist in (figure._suptitle, figure.legends[0]):  # the title and the legend stay inside the figure
        extent = artist.get_window_extent(renderer)
        assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1 and extent.y1 <= box.y1 + 1, artist


@pytest.mark.slow
def test_the_demo_pose_title_and_legend_lie_inside_the_figure(monkeypatch):
    from helpers.scenario import REPO

    drawn = []
    monkeypatch.setattr(pose_plots, "png", lambda fig: drawn.append(fig) or b"")
    scenario = load_scenario(REPO / "scenarios" / "excavator_lift.json")
    steps = execute(scenario, LocalExecutor(1))
    pose_plots.pose_plot(scenario, steps, FIGURE_SIZES["pose"], 30)
    figure = drawn[0]
    figure.canvas.draw()
    renderer, box = figure.canvas.get_renderer(), figure.bbox
    for artist in (figure._suptitle, figure.legends[0], *(ax.title for ax in figure.axes)):
        extent = artist.get_window_extent(renderer)
        assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1 and extent.y1 <= box.y1 + 1, artist


def _pose_figure(monkeypatch, scenario, steps):
    drawn = []
    monkeypatch.setattr(pose_plots, "png", lambda fig: drawn.append(fig) or b"")
    pose_plots.pose_plot(scenario, steps, FIGURE_SIZES["pose"], 30)
    return drawn[0]


def _bars(ax) -> list:
    """The cylinder bars of a pose panel: segments of the thick orange line collections."""
    from matplotlib.collections import LineCollection
    from matplotlib.colors import to_rgba

    return [segment for c in ax.collections if isinstance(c, LineCollection) and len(c.get_segments())
            and np.allclose(c.get_colors()[0], to_rgba(pose_plots.CYLINDER_COLOUR)) for segment in c.get_segments()]


@pytest.mark.slow
def test_a_standing_machine_s_free_base_is_not_drawn(monkeypatch):
    """The car on tyres stands on a free base (base.x, .y, .z sliding, .rz, .ry, .rx turning, through massless
    links): only its four suspension struts are cylinders, and no base joint or link is labelled."""
    from helpers.plots import SHIPPED, short_run

    scenario, steps = short_run(next(p for p in SHIPPED if p.stem == "vehicle_on_tyres"))
    from shiftsim import load_model
    from shiftsim.model import PRISMATIC

    machine = scenario.machines[0]
    assert {"base.x", "base.y", "base.z"} <= {j.name for j in machine.setup({}).model.joints}  # a base to leave out
    model = load_model(machine.source)  # the file as written, on no free base
    own = [j.name for j in model.joints if any(model.node_kind[model.coordinate_node[c]] == PRISMATIC
                                               for c in j.coordinates)]
    assert len(own) == 4 and all(not name.startswith("base.") for name in own)  # the four suspension struts
    figure = _pose_figure(monkeypatch, scenario, steps)
    for ax in (a for a in figure.axes if a.get_visible()):
        assert len(_bars(ax)) == len(own), ax.get_title()
        texts = [t.get_text() for t in ax.texts]
        assert not [t for t in texts if t.startswith(("base.", "float_base"))], texts
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert "ground attachments" not in legend  # it stands on its tyres, attached to nothing


@pytest.mark.slow
def test_the_pose_plot_draws_each_load_where_it_acts_along_its_force(tmp_path, monkeypatch):
    """The beam's tip load: a point at the tip (as the run reports the tip frame, deflection exaggerated as the
    plot says) and an arrow along -z, named with its magnitude at the step."""
    scenario = load_scenario(write_scenario(tmp_path, beam_scenario()))
    steps = execute(scenario, LocalExecutor(1))
    figure = _pose_figure(monkeypatch, scenario, steps)
    title = figure._suptitle.get_text()
    drawn_as = re.search(r"deflection drawn x(\S+)", title)
    assert drawn_as or "true scale" in title
    factor = float(drawn_as.group(1)) if drawn_as else 1.0
    from matplotlib.patches import FancyArrow

    for ax in (a for a in figure.axes if a.get_visible()):
        step = int(re.search(r"step (\d+)", ax.get_title()).group(1))
        frame = steps[step].frames["beam:link10:tip"]
        position, deflection = np.array(frame["position"]), np.array(frame["deflection"])
        expected = position - deflection + factor * deflection  # the unloaded place plus the exaggerated sag
        arrows = [p for p in ax.patches if isinstance(p, FancyArrow)]
        force = 50.0 * steps[step].parameters["load:tip"]
        if force == 0.0:  # the first step's load factor is 0: nothing acts, nothing is drawn
            assert not arrows and not [t for t in ax.texts if t.get_text().startswith("tip:")]
            continue
        assert len(arrows) == 1
        h, v = ("xyz".index(ax.get_xlabel()[0]), "xyz".index(ax.get_ylabel()[0]))
        point = next(line for line in ax.get_lines() if line.get_color() == pose_plots.LOAD_COLOUR)
        assert np.allclose([point.get_xdata()[0], point.get_ydata()[0]], expected[[h, v]], atol=1e-9)
        corners = arrows[0].get_xy()
        tolerance = 0.02 * np.ptp(ax.get_xlim())  # the shaft's and head's half widths
        assert np.all(np.abs(corners[:, 0] - expected[h]) < tolerance)  # straight down from the point (-z)
        assert corners[:, 1].max() <= expected[v] + tolerance and corners[:, 1].min() < expected[v] - 0.5
        assert f"tip: {force:.4g} N" in [t.get_text() for t in ax.texts]
