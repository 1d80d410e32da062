"""Text in shiftsim's plots is plain text: names from users' files are never parsed as mathtext.

matplotlib parses any text with an even number of unescaped ``$`` as mathtext, so a machine id such as
``ex$\\foo$`` would stop the drawing (and once stopped a run after every step was solved). shiftsim draws no
mathtext of its own, so every text placed in a figure is escaped just before the figure is saved.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.text import Text


def plain_text(text: str) -> str:
    """``text`` with every ``$`` escaped (``\\$``), which matplotlib draws as a plain ``$``."""
    return text.replace("$", r"\$")


def keep_texts_plain(figure: Figure) -> None:
    """Escape every text placed in ``figure`` (titles, axis labels, legends, annotations) with :func:`plain_text`.
    Tick labels from formatters are made when the figure is drawn, after this, and are left as they are."""
    for text in figure.findobj(Text):
        text.set_text(plain_text(text.get_text()))
