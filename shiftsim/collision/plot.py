"""``collisions.png``: the distance of every machine pair against the swept parameter, with the margin line.

Drawn with matplotlib's Agg canvas (no display needed). The x axis is the
first parameter of a line sweep, the last parameter of a grid (one curve per
combination of the others), or the step index without a sweep. Steps where
a pair was not posed leave gaps; steps in collision (distance below the
margin) are marked with red crosses and the region below the margin is shaded.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..scenario.collisions import collision_settings

if TYPE_CHECKING:
    from ..scenario import Scenario, StepResult

FIGURE_SIZE = (9.0, 6.0)  # inches
COLLISION_COLOUR = "tab:red"


def _x_axis(scenario: Scenario, steps: Sequence[StepResult]) -> tuple[str, list[tuple[str, list]]]:
    """The x label and the curve groups: (legend suffix, [(x, step)] in x order)."""
    parameters = scenario.sweep.parameters
    if not parameters:
        return "step", [("", [(float(s.index), s) for s in steps])]
    def label(p) -> str:
        unit = {"-": "load factor"}.get(p.unit, p.unit)
        return f"{p.name} ({unit})" if unit else p.name

    if scenario.sweep.mode == "line":
        p = parameters[0]
        return label(p), [("", sorted(((s.parameters[p.name], s) for s in steps), key=lambda item: item[0]))]
    p = parameters[-1]
    groups: dict[tuple, list] = {}
    for s in steps:
        key = tuple((q.name, s.parameters[q.name]) for q in parameters[:-1])
        groups.setdefault(key, []).append((s.parameters[p.name], s))
    curves = [(", " + ", ".join(f"{n} = {v:.4g}" for n, v in key), sorted(group, key=lambda item: item[0]))
              for key, group in groups.items()]
    return label(p), curves


def collisions_plot(scenario: Scenario, steps: Sequence[StepResult], dpi: int = 100) -> bytes:
    """PNG bytes of the plot (see the module docstring) of steps with ``index``, ``parameters`` and
    ``collisions`` (pair results, or None where not checked); the margin is the scenario's."""
    margin = collision_settings(scenario).margin
    label, groups = _x_axis(scenario, steps)
    by_step = {s.index: {f"{p['a']} - {p['b']}": p for p in s.collisions or []} for s in steps}
    names = list(dict.fromkeys(name for pairs in by_step.values() for name in pairs))
    distances = [p["distance"] for pairs in by_step.values() for p in pairs.values()]
    figure = Figure(figsize=FIGURE_SIZE, dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    marked = False
    for g, (suffix, group) in enumerate(groups):
        x = np.array([value for value, _ in group])
        for k, name in enumerate(names):
            pairs = [by_step[s.index].get(name) for _, s in group]
            y = np.array([np.nan if p is None else p["distance"] for p in pairs])
            ax.plot(x, y, color=f"C{k % 10}", linestyle=("-", "--", ":", "-.")[g % 4], marker="o", markersize=3,
                    label=f"{name}{suffix}")
            hit = np.array([p is not None and p["in_collision"] for p in pairs])
            if hit.any():
                ax.plot(x[hit], y[hit], "x", color=COLLISION_COLOUR, markersize=8,
                        label=None if marked else "in collision")
                marked = True
    low, high = min([margin, *distances]), max([margin, *distances])
    span = max(high - low, 1e-3)
    ax.set_ylim(low - 0.05 * span, high + 0.05 * span)
    ax.axhspan(low - span, margin, color=COLLISION_COLOUR, alpha=0.08)
    ax.axhline(margin, color=COLLISION_COLOUR, linestyle="--", linewidth=1.2, label=f"margin {margin:g} m")
    ax.set_xlabel(label)
    ax.set_ylabel("least distance between shapes (m); below 0: penetration depth")
    ax.set_title(f"{scenario.name}: closest distance of every machine pair")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
