"""``collisions.png``: the distance of every machine pair against the swept parameter, with the margin line.

The x axis is the scenario plots' (:func:`.figures.sweep_axis`): the first parameter of a
line sweep, the last parameter of a grid (one curve per combination of the others), or the step index without
a sweep. Steps where a pair was not posed leave gaps. Steps *in collision* (distance <= 0: the shapes touch or
overlap) are marked with red crosses, steps *within the margin* (0 < distance < margin) with orange circles;
the band below the margin is shaded.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..scenario.collisions import collision_settings
from ..scenario.definition import Scenario
from ..scenario.runner import StepResult
from .figures import figure, legend, png, style, sweep_axis

COLLISION_COLOUR = "tab:red"
MARGIN_COLOUR = "tab:orange"


def collisions_plot(scenario: Scenario, steps: Sequence[StepResult], size: tuple[float, float], dpi: int) -> bytes:
    """PNG bytes of the plot (see the module docstring) of steps with ``index``, ``parameters`` and
    ``collisions`` (pair results, or None where not checked); the margin is the scenario's."""
    margin = collision_settings(scenario).margin
    axis = sweep_axis(scenario, steps)
    by_step = {s.index: {f"{p['a']} - {p['b']}": p for p in s.collisions or []} for s in steps}
    names = list(dict.fromkeys(name for pairs in by_step.values() for name in pairs))
    distances = [p["distance"] for pairs in by_step.values() for p in pairs.values()]
    fig, axes = figure(size, dpi)
    ax = axes[0, 0]
    marked = set()
    for g, (suffix, group) in enumerate(axis.groups):
        x = np.array([axis.x(s) for s in group])
        for k, name in enumerate(names):
            pairs = [by_step[s.index].get(name) for s in group]
            y = np.array([np.nan if p is None else p["distance"] for p in pairs])
            ax.plot(x, y, **style(k, g), label=f"{name}{suffix}")
            for hit, marker, colour, label in ((y <= 0.0, "x", COLLISION_COLOUR, "in collision (distance <= 0)"),
                                               ((y > 0.0) & (y < margin), "o", MARGIN_COLOUR, "within margin")):
                if hit.any():
                    ax.plot(x[hit], y[hit], marker, color=colour, markersize=8, fillstyle="none",
                            label=None if label in marked else label)
                    marked.add(label)
    low, high = min([margin, 0.0, *distances]), max([margin, *distances])
    span = max(high - low, 1e-3)
    ax.set_ylim(low - 0.05 * span, high + 0.05 * span)
    ax.axhspan(low - span, margin, color=COLLISION_COLOUR, alpha=0.08)
    ax.axhline(margin, color=COLLISION_COLOUR, linestyle="--", linewidth=1.2, label=f"margin {margin:g} m")
    ax.axhline(0.0, color="black", linewidth=0.6)
    ax.set_xlabel(axis.label)
    ax.set_ylabel("least distance between shapes (m); below 0: penetration depth")
    ax.set_title(f"{scenario.name}: closest distance of every machine pair")
    ax.grid(True, alpha=0.3)
    legend(ax)
    return png(fig)
