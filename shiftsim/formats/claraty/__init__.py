"""CLARAty Mechanism_Model XML: reader and writer (see ``docs/claraty.md``)."""

from __future__ import annotations

from .reader import read_claraty
from .writer import write_claraty

__all__ = ["read_claraty", "write_claraty"]
