"""Grid sweeps in the sweep plots: curves coloured by the parameter before the x axis with a colour bar, a line style
per series, a marker per value of the earlier parameters; every label and the legend inside the figure."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.colors import to_hex
from helpers.scenario import REPO

from shiftsim.plots import sweep as sweep_plots
from shiftsim.plots.registry import FIGURE_SIZES
from shiftsim.scenario import load_scenario
from shiftsim.scenario.runner import StepResult

FRAME = "ex1:front:arm:stick:bucket_pivot"
SLEW, BOOM, STICK = "ex1:lower:slew", "ex1:front:arm:boom_cyl", "ex1:front:arm:stick_cyl"


@pytest.fixture(scope="module")
def capacity_grid():
    """The shipped capacity scenario's 2 x 8 x 8 grid, with a made-up deflection per step (1 mm x step index + 1)."""
    scenario = load_scenario(REPO / "scenarios" / "excavator_capacity.json")
    table = scenario.sweep.table()
    steps = [StepResult(k, dict(zip(scenario.sweep.names, map(float, row))), "converged", 3, 1e-12, True,
                        frames={FRAME: {"position": [0.0, 0.0, 0.0], "deflection": [0.0, 0.0, -1e-3 * (k + 1)]}})
             for k, row in enumerate(table)]
    return scenario, steps


@pytest.fixture
def figures(monkeypatch):
    drawn = []
    monkeypatch.setattr(sweep_plots, "png", lambda fig: drawn.append(fig) or b"")
    return drawn


def test_a_grid_colours_its_curves_by_one_parameter_with_a_colour_bar(capacity_grid, figures):
    scenario, steps = capacity_grid
    sweep_plots.deflection_plot(scenario, steps, FIGURE_SIZES["deflection"], 30)
    figure = figures[0]
    ax, colour_bar = figure.axes
    assert colour_bar.get_ylabel() == f"{BOOM} (m)"
    lines = [line for line in ax.get_lines() if line.get_marker() in ("o", "s")]
    assert len(lines) == 16  # a curve per (slew, boom) combination, x = the stick
    booms = sorted({s.parameters[BOOM] for s in steps})
    colours = {}
    for line, (slew, boom) in zip(lines, [(a, b) for a in (0.0, math.pi / 2) for b in booms]):
        colours.setdefault(boom, set()).add(to_hex(line.get_color()))
        assert line.get_marker() == ("o" if slew == 0.0 else "s")  # the slew by marker
    assert all(len(c) == 1 for c in colours.values()) and len({next(iter(c)) for c in colours.values()}) == 8
    low, high = colour_bar.get_ylim()
    assert (low, high) == pytest.approx((min(booms), max(booms)))
    labels = ax.get_legend_handles_labels()[1]
    assert labels == [f"{FRAME}, {SLEW} = 0", f"{FRAME}, {SLEW} = 1.571"]  # not 16 entries


@pytest.mark.slow
def test_the_grid_plot_keeps_its_texts_inside_the_figure(capacity_grid, figures):
    scenario, steps = capacity_grid
    sweep_plots.deflection_plot(scenario, steps, FIGURE_SIZES["deflection"], 30)
    figure = figures[0]
    renderer = figure.canvas.get_renderer()
    figure.canvas.draw()
    box = figure.bbox
    ax, colour_bar = figure.axes
    for artist in (ax.get_legend(), ax.title, ax.xaxis.label, ax.yaxis.label, colour_bar.yaxis.label):
        extent = artist.get_window_extent(renderer)
        assert np.all([box.x0 - 1 <= extent.x0, extent.x1 <= box.x1 + 1, box.y0 - 1 <= extent.y0,
                       extent.y1 <= box.y1 + 1]), (artist, extent, box)


def test_a_grid_draws_every_series_of_its_efforts(capacity_grid, figures):
    """The capacity grid's 16 curve groups used to leave room for 1 series (10 // 16): each series now has its line
    style and every one is drawn, over every curve group."""
    scenario, steps = capacity_grid
    series = {BOOM: 1e5, STICK: -4e4}  # N per step index + 1: two cylinders, neither round-off
    loaded = [StepResult(s.index, s.parameters, "converged", 3, 1e-12, True,
                         joints={name: {"position": 0.0, "deflection": 0.0, "effort": scale * (s.index + 1),
                                        "wrench_joint": [0.0] * 6, "wrench_world": [scale * (s.index + 1), 0, 0, 0, 0, 0]}
                                 for name, scale in series.items()}) for s in steps]
    sweep_plots.efforts_plot(scenario, loaded, FIGURE_SIZES["efforts"], 30)
    ax = figures[0].axes[0]  # the force panel (then its colour bar)
    drawn = [line for line in ax.get_lines() if line.get_marker() in ("o", "s")]
    assert len(drawn) == len(series) * 16  # every series over every (slew, boom) curve
    styles = {line.get_linestyle() for line in drawn}
    assert len(styles) == len(series)  # one line style per series
    labels = ax.get_legend_handles_labels()[1]
    assert {label.split(",")[0] for label in labels} == set(series)
    assert "largest of" not in ax.get_title()
    # the values drawn are the steps' efforts, in kN: the largest is step 127's
    assert max(abs(y) for line in drawn for y in line.get_ydata()) == pytest.approx(1e5 * 128 / 1e3)
