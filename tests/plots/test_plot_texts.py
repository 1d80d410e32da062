"""Every text of every plot lies inside its figure: titles, axis and tick labels, legends, annotations, measured with
matplotlib's renderer (``get_window_extent``), for every plot of every shipped scenario (cut to two steps) and for
a machine whose names are as long as real files make them."""

from __future__ import annotations

import json

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text
from helpers.plots import SHIPPED, short_run
from helpers.scenario import model_path, write_scenario

from shiftsim.plots import collisions, ground, pose, sweep
from shiftsim.plots.figures import finish
from shiftsim.plots.registry import PLOTS, chosen_plots, skipped_plots
from shiftsim.scenario import LocalExecutor, execute, load_scenario

LONG = "section_of_the_customer_cantilever_assembly_revision_12_final"  # names as long as real files give
DPI = 40


@pytest.fixture
def figures(monkeypatch):
    """The figures the plots draw, finished as for encoding and kept instead of encoded."""
    drawn = []

    def keep(fig, dpi=None) -> bytes:
        if not isinstance(fig.canvas, FigureCanvasAgg):
            FigureCanvasAgg(fig)
        finish(fig)  # as png() does before it encodes
        drawn.append(fig)
        return b""

    for module in (sweep, pose, collisions):
        monkeypatch.setattr(module, "png", keep)
    monkeypatch.setattr(ground, "_png", keep)
    return drawn


def _shown_ticks(axis, limits) -> list:
    """The tick labels matplotlib draws: those of ticks inside the view (it keeps others it does not draw)."""
    low, high = sorted(limits)
    span = high - low
    return [label for tick, label in zip(axis.get_majorticklocs(), axis.get_majorticklabels())
            if low - 1e-9 * span <= tick <= high + 1e-9 * span]


def texts_outside(figure) -> list[str]:
    """Each visible text (or legend) of ``figure`` whose drawn extent leaves the figure, as 'text: extent'. Texts
    clipped to their axes (labels placed in the data) cannot leave it and are not measured."""
    figure.canvas.draw()
    renderer, box = figure.canvas.get_renderer(), figure.bbox
    artists = [*figure.legends, *(t for t in figure.texts)]
    for ax in (a for a in figure.axes if a.get_visible()):
        artists += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, ax.get_legend(),
                    *ax.texts, *_shown_ticks(ax.xaxis, ax.get_xlim()), *_shown_ticks(ax.yaxis, ax.get_ylim())]
    outside = []
    for artist in artists:
        if artist is None or not artist.get_visible():
            continue
        if isinstance(artist, Text) and (not artist.get_text() or artist.get_clip_on() and artist.clipbox):
            continue
        extent = artist.get_window_extent(renderer)
        if extent.x0 < box.x0 - 1 or extent.x1 > box.x1 + 1 or extent.y0 < box.y0 - 1 or extent.y1 > box.y1 + 1:
            name = artist.get_text() if isinstance(artist, Text) else type(artist).__name__
            outside.append(f"{name!r}: {extent} outside {box}")
    return outside


def _draw_every_plot(scenario, steps, figures) -> dict[str, object]:
    drawn = {}
    skipped = skipped_plots(scenario, steps)
    for name in chosen_plots(scenario):
        if f"{name}.png" in skipped:
            continue
        figures.clear()
        PLOTS[name].draw(scenario, steps, PLOTS[name].size, DPI)
        drawn[name] = figures[0]
    return drawn


@pytest.mark.slow
@pytest.mark.parametrize("source", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_text_of_every_plot_of_a_shipped_scenario_lies_inside_the_figure(source, figures):
    scenario, steps = short_run(source)
    drawn = _draw_every_plot(scenario, steps, figures)
    assert drawn
    for name, figure in drawn.items():
        assert texts_outside(figure) == [], name


@pytest.mark.slow
def test_long_names_from_real_files_stay_inside_the_figure(tmp_path, figures):
    """A cantilever whose machine, bodies and joints carry 60-character names, every frame and joint tracked: the
    legends (ten series), titles and labels still fit."""
    text = open(model_path("cantilever10"), encoding="utf-8").read()
    text = text.replace('"link', f'"{LONG}_link').replace('"hinge', f'"{LONG}_hinge')
    (tmp_path / "long.json").write_text(text, encoding="utf-8")
    machine = "cantilever_from_the_customer_file_2024_revision_12_final_x"
    document = {"name": "long_names_of_a_customer_machine_file_revision_12", "machines": [
        {"id": machine, "model": str(tmp_path / "long.json")}],
        "loads": [{"name": "payload_at_the_tip_of_the_customer_cantilever",
                   "frame": f"{machine}:{LONG}_link10:tip", "force": [0.0, 0.0, -50.0]}],
        "sweep": {"parameters": {"load:payload_at_the_tip_of_the_customer_cantilever": [0.0, 0.5, 1.0]}},
        "outputs": {"csv": False}}
    scenario = load_scenario(write_scenario(tmp_path, document))
    steps = execute(scenario, LocalExecutor(1))
    drawn = _draw_every_plot(scenario, steps, figures)
    assert {"deflection", "efforts", "pin_loads", "pose", "convergence"} <= set(drawn)
    legend_texts = [t.get_text() for t in drawn["deflection"].axes[0].get_legend().get_texts()]
    assert any(LONG in t for t in legend_texts)  # the long names are what is drawn
    for name, figure in drawn.items():
        assert texts_outside(figure) == [], name
