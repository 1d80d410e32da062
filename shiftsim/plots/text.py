"""Text in shiftsim's plots is plain text: names from users' files are never parsed as mathtext.

matplotlib parses any text with an even number of unescaped ``$`` as mathtext, so a machine id such as
``ex$\\foo$`` would stop the drawing (and once stopped a run after every step was solved). shiftsim draws no
mathtext of its own, so every text placed in a figure is escaped just before the figure is saved.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.text import Text

PLAIN = "_shiftsim_plain"  # set on a Text once it is escaped


def plain_text(text: str) -> str:
    """``text`` with every ``$`` escaped (``\\$``), which matplotlib draws as a plain ``$``."""
    return text.replace("$", r"\$")


def make_plain(text: Text) -> None:
    """Escape a placed text with :func:`plain_text`, once (a text measured before its figure is saved is made plain
    then, and left alone when the figure is)."""
    if not getattr(text, PLAIN, False):
        text.set_text(plain_text(text.get_text()))
        setattr(text, PLAIN, True)


def keep_texts_plain(figure: Figure) -> None:
    """Escape every text placed in ``figure`` (titles, axis labels, legends, annotations) with :func:`plain_text`.
    Tick labels from formatters are made when the figure is drawn, after this, and are left as they are."""
    for text in figure.findobj(Text):
        make_plain(text)
