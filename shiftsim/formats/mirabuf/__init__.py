"""Reader for mirabuf (``.mira``) assemblies exported from Fusion 360 for Autodesk Synthesis.

``read_mirabuf(path)`` decodes the protobuf (raw or gzip) with a schema built in
code (:mod:`.schema`), groups part instances into rigid bodies (:mod:`.bodies`)
with mass properties from the part definitions and inertia from their meshes
(:mod:`.parts`, :mod:`.mesh`), turns joint instances into joints
(:mod:`.joints`) and returns a :class:`~shiftsim.spec.ModelSpec`
(:mod:`.spec`). Conventions are in ``docs/mirabuf.md``.
"""

from __future__ import annotations

from .reader import read_mirabuf

__all__ = ["read_mirabuf"]
