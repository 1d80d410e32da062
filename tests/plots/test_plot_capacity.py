"""The capacity chart: panels named from the slew (over front / over side), a legend explaining the colours, invalid
points marked, and every text inside the figure (extents from matplotlib's renderer)."""

from __future__ import annotations

import math

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from shiftsim.plots.ground import GOVERNS_COLOURS, capacity_chart, capacity_figure, slew_panel

SLEW = "ex1:lower:slew_joint_with_a_long_name_from_a_real_file"


def _point(step, slew, radius, governs, valid=True):
    rated = None if not valid else 1500.0 + 100 * step
    return {"step": step, "parameters": {SLEW: slew, "ex1:front:arm:boom_cyl": 2.0}, "radius": radius,
            "height": 1.0 + step, "tipping_load": 4e4, "hydraulic_load": 2e4, "rated_load": rated and rated * 9.81,
            "rated_mass": rated, "governs": governs if valid else "invalid", "valid": valid,
            "invalid": [] if valid else ["a contact sinks 0.05 m, deeper than the sink limit 0.02 m"],
            "tipping_edge": [], "limiting_cylinder": None}


DOCUMENT = {"load": "payload", "frame": "ex1:front:arm:stick:bucket_pivot_of_a_long_real_file_name",
            "tipping_fraction": 0.75, "hydraulic_fraction": 0.87, "group": SLEW,
            "points": [_point(0, 0.0, 7.0, "tipping"), _point(1, 0.0, 5.0, "hydraulic"), _point(2, 0.0, 3.0, "", False),
                       _point(3, math.pi / 2, 7.0, "tipping"), _point(4, math.pi / 2, 5.0, "", False)]}


@pytest.mark.parametrize(("slew", "name"), [(0.0, "over front"), (math.pi / 2, "over side"), (-math.pi / 2, "over side"),
                                            (math.pi, "over rear"), (2 * math.pi - 0.01, "over front"),
                                            (math.radians(45), "slew 45 deg")])
def test_a_panel_is_named_from_its_slew_angle(slew, name):
    assert slew_panel("s", slew).startswith(name + "\ns = ")


def test_the_chart_names_its_panels_explains_colours_and_marks_invalid_points():
    figure = capacity_figure(DOCUMENT)
    titles = [axes.get_title() for axes in figure.axes]
    assert [t.split("\n")[0] for t in titles] == ["over front", "over side"]
    legend = figure.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["tipping governs", "hydraulic governs (*)",
                                                          "invalid: no rating"]
    crosses = [line for axes in figure.axes for line in axes.lines if line.get_marker() == "x"]
    assert len(crosses) == sum(not p["valid"] for p in DOCUMENT["points"])
    assert all(line.get_color() == GOVERNS_COLOURS["invalid"] for line in crosses)
    labels = [t.get_text() for axes in figure.axes for t in axes.texts]
    assert labels.count("invalid") == 2 and "1.60*" in labels and "1.50" in labels  # hydraulic governs: a star


@pytest.mark.slow
def test_every_text_of_the_chart_lies_inside_the_figure():
    figure = capacity_figure(DOCUMENT)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    box = figure.bbox
    artists = [figure.legends[0], figure._suptitle, *(a for axes in figure.axes for a in
                                                      (axes.title, axes.xaxis.label, axes.yaxis.label))]
    for artist in artists:
        extent = artist.get_window_extent(renderer)
        assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1, artist
        assert box.y0 - 1 <= extent.y0 and extent.y1 <= box.y1 + 1, artist


@pytest.mark.slow
def test_the_chart_is_a_png():
    assert capacity_chart(DOCUMENT, dpi=50)[:8] == b"\x89PNG\r\n\x1a\n"
