"""Where everything of an MFK machine is: nodes, collision shapes, points, measurements.

Keys are shiftsim names (``docs/naming.md``): nodes by their body name
``c1:boom``, points of interest as frames ``c1:tracks:base_fr``, collision
shapes as ``c1:tracks:tracks`` (on their node's body) and measurements by the
qualified reference of their value ``c1:topcon.measurements.boom_length.value``.
Positions are metres; a ``rotation`` is a 3x3 matrix whose columns are the object's axes
(J670 node axes) in the frame named: ``machine`` (J670 of the root
component) or ``site`` (easting, northing, up).

Scale in the node hierarchy (warned at load) is reflected in positions; the
reported rotation is the nearest rotation, box half extents are multiplied by
the scaled lengths of the node's axes and a sphere's radius by the largest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .config import ResourceConfiguration
from .kinematics import machine_transforms, placement, rotation_and_scale
from .names import body_name, member_name
from .references import QualifiedRef, Reference
from .wgs import Geodetic


def describe(config: ResourceConfiguration, origin: Geodetic | None = None) -> dict[str, Any]:
    """The ``shiftsim mfk show`` document of a loaded configuration (plain lists and floats).

    A machine placed by WGS84 coordinates is shown in the site about ``origin`` (default: its own position).
    """
    nodes = machine_transforms(config)
    site = placement(config, origin)
    report: dict[str, Any] = {"uuid": config.uuid, "description": config.description,
                              "nodes": {}, "collision_shapes": {}, "points": {}, "measurements": {}}
    for (index, identifier), machine in nodes.items():
        report["nodes"][body_name(index, identifier)] = {"machine": _pose(machine), "site": _pose(site @ machine)}
    for component in config.components:
        index = component.index
        for shape in component.collision_shapes.shapes if component.collision_shapes else []:
            node_id = shape.node_ref.split(".")[2]
            machine = nodes[(index, node_id)]
            rotation, scale = rotation_and_scale(machine[:3, :3])
            entry: dict[str, Any] = {"type": shape.type, "node": body_name(index, node_id),
                                     "centre_machine": _apply(machine, shape.centre).tolist(),
                                     "rotation_machine": rotation.tolist()}
            if shape.type == "aabb":
                entry["half_extents"] = (shape.half_extents * scale).tolist()
            else:
                entry["radius"] = shape.radius * float(scale.max())
            report["collision_shapes"][member_name(index, node_id, shape.id)] = entry
        for point in component.points_of_interest.points if component.points_of_interest else []:
            node_id = point.node_ref.split(".")[2]
            machine = nodes[(index, node_id)]
            position = _apply(machine, point.position)
            report["points"][member_name(index, node_id, point.id)] = {"machine": position.tolist(),
                                                       "site": _apply(site, position).tolist()}
        for measurement in component.measurements.measurements if component.measurements else []:
            value = QualifiedRef(index, Reference(component.measurements.oem, component.measurements.name,
                                                  measurement.id, "value"))
            report["measurements"][str(value)] = measurement.number("value")
    return report


def _pose(transform: np.ndarray) -> dict[str, list]:
    return {"position": transform[:3, 3].tolist(), "rotation": rotation_and_scale(transform[:3, :3])[0].tolist()}


def _apply(transform: np.ndarray, point: np.ndarray) -> np.ndarray:
    return transform[:3, :3] @ point + transform[:3, 3]
