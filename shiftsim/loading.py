"""Load a model file of any format into a compiled :class:`~shiftsim.model.Model`."""

from __future__ import annotations

from pathlib import Path

from .formats import read_model
from .model import Model, compile_model


def load_model(path: str | Path) -> Model:
    """Read, validate and compile a model file (.json Shift/MFK/Mdx, .xml CLARAty, .mira mirabuf).

    Parameters
    ----------
    path : str or Path
        The model file; its format is told by its suffix and content.

    Returns
    -------
    Model
        The compiled model (immutable; pass it to :func:`solve`, :func:`forward`, ...).

    Raises
    ------
    ModelError
        The file is missing, unreadable or not a valid model; the message names the file and the place in it.

    Examples
    --------
    >>> model = shiftsim.load_model("models/shift/cantilever10.json")
    >>> len(model.joints), model.nq
    (10, 10)
    """
    return compile_model(read_model(path))
