"""The convergence chart's bars drawn as one artist (:func:`shiftsim.plots.figures.bars`) against matplotlib's own
``ax.bar`` (one patch per bar): the same pixels where the bars are several pixels wide, and an artist count that does
not grow with the bars."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.image import imread

from shiftsim.plots.figures import bars, figure


def drawn(draw, x, heights) -> tuple[np.ndarray, int]:
    """Pixels (RGBA) of a figure whose only axes hold ``draw(ax, x, heights)``, and the axes' patch and collection
    count."""
    fig, axes = figure((4.0, 3.0), 100)
    ax = axes[0, 0]
    draw(ax, x, heights)
    ax.set_xlim(-1.0, len(x))
    ax.set_ylim(0.0, 5.0)
    ax.set_axis_off()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return imread(io.BytesIO(buffer.getvalue()), format="png"), len(ax.patches) + len(ax.collections)


def test_one_outline_draws_what_one_patch_per_bar_draws():
    x = np.arange(7.0)
    heights = np.array([1.0, 3.0, 2.0, 4.0, 1.0, 2.5, 3.0])
    ours, count = drawn(lambda ax, x, h: bars(ax, x, h, color="tab:blue"), x, heights)
    theirs, patches = drawn(lambda ax, x, h: ax.bar(x, h, color="tab:blue"), x, heights)
    assert count == 1 and patches == len(x)
    difference = np.abs(ours - theirs).max(axis=2)
    assert (difference > 0.02).mean() < 0.01  # only edge pixels may differ (anti-aliasing of the outline)
    assert np.abs(ours.mean(axis=(0, 1)) - theirs.mean(axis=(0, 1))).max() < 1e-3  # as much blue
    assert (ours[..., :3].sum(axis=2) < 2.9).mean() > 0.05  # and something is drawn


def test_bars_are_one_artist_however_many():
    for n in (10, 3000):
        _, count = drawn(lambda ax, x, h: bars(ax, x, h, color="tab:orange", label="x"), np.arange(float(n)),
                         np.full(n, 2.0))
        assert count == 1
