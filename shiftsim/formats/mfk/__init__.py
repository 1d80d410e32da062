"""Topcon MFK (Machine Forward Kinematics) resource configurations.

Modules, one job each:

* :mod:`.source`        file text -> JSON data (strict, JSON5, ``#`` comments)
* :mod:`.base`          addressable objects, interfaces, JSON field readers
* :mod:`.topcon`        the standard's interfaces as typed objects
* :mod:`.physics`       our ``shiftsim.physics`` interface (mass, springs)
* :mod:`.config`        components and the configuration reader (envelope, quirks)
* :mod:`.references`    ``oem.interface.id.field`` references
* :mod:`.measurements`  sandboxed Lua measurement scripts
* :mod:`.loader`        parse, set values, run scripts, resolve, check
* :mod:`.names`         shiftsim names of components, nodes, values, points, shapes
* :mod:`.wgs`           WGS84 geodetic -> ECEF -> a site's tangent plane
* :mod:`.kinematics`    node transforms, attach order, site placement
* :mod:`.replicate`     the replicate wire codec
* :mod:`.report`        poses of nodes, shapes and points (``shiftsim mfk show``)
* :mod:`.spec`          configuration -> ModelSpec
"""

from __future__ import annotations

from .config import ResourceConfiguration
from .loader import load_configuration
from .source import read_mfk_file
from .model_spec import build_model_spec, mfk_model_spec

__all__ = ["ResourceConfiguration", "build_model_spec", "load_configuration", "mfk_model_spec", "read_mfk_file"]
