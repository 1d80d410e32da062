"""What every plot of a run shares: figures on matplotlib's Agg canvas, the sweep's x axis, line styles, coinciding
series, failed-step marks.

Figures are laid out with fixed margins in inches (no layout engine: the constrained layout cost as much as the
drawing itself); sizes in inches are each plot's (:data:`.registry.PLOTS`), pixels are inches x dpi. The x axis of the sweep plots
is the first parameter of a line sweep, the last (chain) parameter of a grid with one curve per combination of the
others, or the step index without a sweep. A grid's curves are coloured by the parameter before the x axis (a colour
bar names it), each series has its own line style, and combinations of any earlier parameters their own marker.
"""

from __future__ import annotations

import io
import textwrap
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from matplotlib import colormaps, rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from ..analysis.digest import number, shown_value
from ..scenario.definition import Scenario
from ..scenario.runner import StepResult
from ..scenario.sweep import Parameter
from .text import keep_texts_plain, make_plain

MAX_SERIES = 10
FAILED_COLOUR = "tab:red"
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "v", "D")
GRID_COLOURS = colormaps["viridis"]  # a grid's curves by the value of the parameter before the x axis
COINCIDE = 1e-6  # series closer than this fraction of the plot's largest value are drawn as one


def unit_text(scenario: Scenario, parameter: Parameter) -> str:
    """What a swept value is measured in, for axis labels (angles in the scenario's ``angle_unit``)."""
    if parameter.kind == "load":
        return "load factor, -"
    if parameter.kind == "pose" and parameter.unit == "-":
        return "normalized, -"
    if parameter.kind == "geometry":
        return "MFK value, in the configuration's units"
    return shown_value(scenario, parameter, 0.0)[1] or "-"


@dataclass(frozen=True)
class Shading:
    """How a grid's curves are told apart: ``label`` of the colour bar (the parameter before the x axis, with its
    unit), ``values`` its value per curve group (shown units), ``kinds`` per group the index of its combination of
    the earlier parameters (drawn with its own marker, named in the legend)."""

    label: str
    values: list[float]
    kinds: list[int]


@dataclass(frozen=True)
class SweepAxis:
    """The x axis of the sweep plots: label, value of a step, and the curves (legend suffix, steps in order); a
    grid's ``shading`` colours its curves by a parameter with a colour bar (None: one colour per series)."""

    label: str
    x: Callable[[StepResult], float]
    groups: list[tuple[str, list[StepResult]]]
    shading: Shading | None = None


def sweep_axis(scenario: Scenario, steps: Sequence[StepResult]) -> SweepAxis:
    parameters = scenario.sweep.parameters
    steps = list(steps)
    if not parameters:
        return SweepAxis("step index (-)", lambda s: float(s.index), [("", steps)])
    if scenario.sweep.mode == "line":
        p = parameters[0]
        others = f" (with {', '.join(q.name for q in parameters[1:])})" if len(parameters) > 1 else ""
        return SweepAxis(f"{p.name} ({unit_text(scenario, p)}){others}",
                         lambda s: shown_value(scenario, p, s.parameters[p.name])[0], [("", steps)])
    p = parameters[-1]
    groups: dict[tuple, list[StepResult]] = {}
    for step in steps:
        key = tuple(step.parameters[q.name] for q in parameters[:-1])
        groups.setdefault(key, []).append(step)
    coloured, earlier = parameters[-2], parameters[:-2]
    combinations = list(dict.fromkeys(key[:-1] for key in groups))
    named = [("".join(f", {q.name} = {number(shown_value(scenario, q, v)[0])}" for q, v in zip(earlier, key)),
              group) for key, group in groups.items()]
    shading = Shading(f"{coloured.name} ({unit_text(scenario, coloured)})",
                      [shown_value(scenario, coloured, key[-1])[0] for key in groups],
                      [combinations.index(key[:-1]) for key in groups])
    return SweepAxis(f"{p.name} ({unit_text(scenario, p)})",
                     lambda s: shown_value(scenario, p, s.parameters[p.name])[0], named, shading)


def figure(size: tuple[float, float], dpi: int, rows: int = 1, columns: int = 1, *, left: float = 0.9,
           right: float = 0.25, bottom: float = 0.65, top: float = 0.75, hspace: float = 0.35, wspace: float = 0.25,
           **subplot_options) -> tuple[Figure, np.ndarray]:
    """A figure of ``size`` (width, height) inches with a grid of axes (rows, columns), margins in inches."""
    width, height = size
    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=left / width, right=1.0 - right / width, bottom=bottom / height, top=1.0 - top / height,
                        hspace=hspace, wspace=wspace)
    with rc_context({"axes.titley": 1.0}):  # a fixed title height: matplotlib does not measure the tick labels
        axes = fig.subplots(rows, columns, squeeze=False, **subplot_options)
    return fig, axes


CHARACTER_WIDTH = 0.6  # a character's average width in a text's size (DejaVu Sans), for wrapping before drawing


def wrapped(text: str, width: float, fontsize: float) -> str:
    """``text`` broken into lines that fit ``width`` inches at ``fontsize`` points (names are never split)."""
    characters = max(10, int(width * 72.0 / (CHARACTER_WIDTH * fontsize)))
    lines = [textwrap.wrap(line, characters, break_long_words=False, break_on_hyphens=False) or [line]
             for line in text.split("\n")]
    return "\n".join(part for line in lines for part in line)


def fit_legend(fig: Figure, handles: list, columns: int, fontsize: float, **options):
    """A figure legend above the axes (``loc`` upper center) in as many of ``columns`` columns as fit the figure's
    width, each label wrapped to fit it; returns the legend."""
    renderer = fig.canvas.get_renderer()
    for handle in handles:
        handle.set_label(wrapped(handle.get_label(), 0.9 * fig.get_figwidth(), fontsize))
    for ncol in range(min(columns, len(handles)), 0, -1):
        shown = fig.legend(handles=handles, loc="upper center", ncol=ncol, fontsize=fontsize, **options)
        for text in shown.get_texts():  # plain before it is measured: a name from a file is never mathtext
            make_plain(text)
        if shown.get_window_extent(renderer).width <= 0.98 * fig.bbox.width or ncol == 1:
            return shown
        shown.remove()


LEGEND_FRAME = 0.6  # inches of a legend beside its labels: handles, padding, frame


def fit_texts(fig: Figure) -> None:
    """Break the titles and legend labels of ``fig`` into lines that fit: each axes' title and legend labels its
    width, the figure's title and legends the figure's (names from real files are long; nothing is cut)."""
    width = fig.get_figwidth()
    if fig._suptitle is not None:
        fig._suptitle.set_text(wrapped(fig._suptitle.get_text(), 0.95 * width, fig._suptitle.get_fontsize()))
    for legend_ in fig.legends:
        for text in legend_.get_texts():
            text.set_text(wrapped(text.get_text(), 0.95 * width - LEGEND_FRAME, text.get_fontsize()))
    for ax in fig.axes:
        span = ax.get_position().width * width
        for title in (ax.title, ax._left_title, ax._right_title):
            if title.get_text():
                title.set_text(wrapped(title.get_text(), span, title.get_fontsize()))
        if ax.get_legend() is not None:
            for text in ax.get_legend().get_texts():
                text.set_text(wrapped(text.get_text(), span - LEGEND_FRAME, text.get_fontsize()))


def finish(fig: Figure) -> None:
    """What every figure gets before it is encoded: texts fitted (:func:`fit_texts`) and kept plain."""
    fit_texts(fig)
    keep_texts_plain(fig)  # names from users' files are never mathtext


def png(fig: Figure) -> bytes:
    finish(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", pil_kwargs={"compress_level": 3})  # 6 (the default): 1.4x the time, 7 % smaller
    return buffer.getvalue()


def series_budget(axis: SweepAxis) -> int:
    """How many series one panel draws so that each can be told apart: a grid's curves are coloured by a parameter
    and each series has its own line style, so as many series as there are line styles (every curve of each drawn);
    otherwise :data:`MAX_SERIES` lines shared among the curve groups (one colour per series)."""
    if axis.shading is not None:
        return len(LINE_STYLES)
    return max(1, MAX_SERIES // len(axis.groups))


def style(entity: int, group: int) -> dict:
    """One colour per entity (frame, joint), one line style and marker per curve group of a grid."""
    return dict(color=f"C{entity % 10}", linestyle=LINE_STYLES[group % len(LINE_STYLES)],
                marker=MARKERS[group % len(MARKERS)], markersize=3)


def legend(ax, **options) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc=options.pop("loc", "best"), **options)


BAR_WIDTH = 0.8  # of a bar, in x units (as matplotlib's bar)


def bars(ax, x: np.ndarray, heights: np.ndarray, **options):
    """Bars of ``heights`` (n,) from 0, centred on ``x`` (n,), :data:`BAR_WIDTH` wide, drawn as one filled outline
    (``ax.bar`` makes one patch per bar, whose cost grows with the steps): the outline runs along 0 between the bars
    and up, across and down each one. ``options`` are ``fill_between``'s (``color``, ``label``); returns its artist."""
    left, right = x - BAR_WIDTH / 2, x + BAR_WIDTH / 2
    zero = np.zeros_like(heights, dtype=float)
    outline_x = np.stack([left, left, right, right], axis=1).ravel()
    outline_y = np.stack([zero, heights, heights, zero], axis=1).ravel()
    return ax.fill_between(outline_x, outline_y, 0.0, linewidth=0.0, **options)


def mark_failures(ax, axis: SweepAxis, steps: Sequence[StepResult]) -> None:
    failed = [axis.x(s) for s in steps if not s.converged]
    for k, x in enumerate(failed):
        ax.axvline(x, color=FAILED_COLOUR, linestyle=":", linewidth=1.2, label="failed step" if k == 0 else None)


def largest(peaks: dict[str, float], count: int) -> list[str]:
    """Names of the ``count`` largest peaks, in their original order."""
    keep = set(sorted(peaks, key=lambda n: -peaks[n])[:count])
    return [n for n in peaks if n in keep]


def coinciding(series: dict[str, np.ndarray]) -> list[list[str]]:
    """The names of ``series`` (equal-length arrays, NaN where missing) grouped by series that coincide: equal
    within :data:`COINCIDE` of the largest value, NaN at the same places. Groups in order of their first name."""
    finite = [np.abs(v[np.isfinite(v)]) for v in series.values()]
    scale = max((float(v.max()) for v in finite if v.size), default=0.0)
    tolerance = COINCIDE * scale
    groups: list[list[str]] = []
    for name, values in series.items():
        for group in groups:
            other = series[group[0]]
            same_gaps = np.array_equal(np.isnan(values), np.isnan(other))
            if same_gaps and np.all(np.abs(np.nan_to_num(values - other)) <= tolerance):
                group.append(name)
                break
        else:
            groups.append([name])
    return groups


def plot_series(ax, axis: SweepAxis, values: Callable[[StepResult, str], float], names: Sequence[str],
                scale: float = 1.0) -> None:
    """Draw each named series (``values(step, name)``, NaN when missing) over every curve group; series that
    coincide over the whole sweep are drawn once, labelled with all their names joined by ' = '."""
    series = {name: np.array([values(s, name) for _, group in axis.groups for s in group], float) for name in names}
    shading = axis.shading
    if shading is not None:
        norm = Normalize(min(shading.values), max(shading.values))
        if norm.vmin == norm.vmax:
            norm = Normalize(norm.vmin - 0.5, norm.vmax + 0.5)
    for k, group_names in enumerate(coinciding(series)):
        label = " = ".join(group_names)
        labelled: set[int] = set()
        for g, (suffix, group) in enumerate(axis.groups):
            xs = [axis.x(s) for s in group]
            ys = [values(s, group_names[0]) * scale for s in group]
            if shading is None:
                ax.plot(xs, ys, **style(k, g), label=f"{label}{suffix}")
                continue
            kind = shading.kinds[g]  # one legend entry per series and combination of the earlier parameters
            ax.plot(xs, ys, color=GRID_COLOURS(norm(shading.values[g])), linestyle=LINE_STYLES[k % len(LINE_STYLES)],
                    marker=MARKERS[kind % len(MARKERS)], markersize=3,
                    label=None if kind in labelled else f"{label}{suffix}")
            labelled.add(kind)
    if shading is not None:
        ax.figure.colorbar(ScalarMappable(norm, GRID_COLOURS), ax=ax, label=shading.label, pad=0.01)

