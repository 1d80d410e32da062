"""Load a model file of any format into a compiled :class:`~shiftsim.model.Model`."""

from __future__ import annotations

from pathlib import Path

from .formats import read_model
from .model import Model, compile_model


def load_model(path: str | Path) -> Model:
    """Read, validate and compile a model file (.json Shift/MFK/Mdx, .xml CLARAty, .mira mirabuf)."""
    return compile_model(read_model(path))
