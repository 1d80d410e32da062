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
