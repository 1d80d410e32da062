"""The ``scene`` of results.json: what a viewer needs to draw every machine at every step without the models.

Per machine (``machines``, by machine id), fixed over the run: its frame names (F), the rigid parts without
collision shapes, drawn by the hull of their frames (``links``: label of their first body and frame indices), the collision shapes (``shapes``: body,
kind ``box`` / ``sphere`` / ``cylinder``, half extents of the oriented bounding box in m), prismatic joints
— cylinders — and the other joints as names with (parent, child) frame pairs
and the ground attachment frames.

Per step (``steps``, in the order of the document's ``steps``; machine id -> null where the machine has no
solution): world positions of every frame loaded and unloaded (``frames``, ``reference``: (F, 3) m) and the
world pose of every shape loaded and unloaded (``shapes``, ``shapes_reference``: (S, 3, 4) m, rotation
columns then centre).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..collision.shapes import ShapeTable, shape_table
from ..spec import FIXED, PATH_SEPARATOR
from ..plots.parts import machine_parts
from ..scenario.definition import Scenario
from ..scenario.machines import Machine
from ..scenario.runner import StepResult, machine_values

SHAPE_KINDS = ("box", "sphere", "cylinder")  # by the shape table's kind code


def scene_document(scenario: Scenario, steps: list[StepResult]) -> dict[str, Any]:
    """The ``scene`` object of results.json for ``steps`` of ``scenario`` (see the module docstring)."""
    return {"machines": {machine.id: machine_layout(machine) for machine in scenario.machines},
            "steps": [_step_scene(scenario, step) for step in steps]}


def machine_layout(machine: Machine) -> dict[str, Any]:
    """The fixed part of a machine's scene: frame names, links, shapes, cylinders, joints, ground frames (see the
    module docstring)."""
    model = machine.model
    table, _ = shape_table([(machine.id, model)])
    parts = machine_parts(model, {int(b) for b in table.body})
    return {"frames": [machine.name(name) for name in model.frame_names],
            "links": _links(model, {int(b) for b in table.body}),
            "shapes": [{"body": model.body_names[int(table.body[k])].rsplit(PATH_SEPARATOR, 1)[-1],
                        "kind": SHAPE_KINDS[int(table.kind[k])], "size": table.size[k].tolist()}
                       for k in range(len(table))],
            "cylinders": [{"name": name, "frames": pair.tolist()} for name, pair in zip(parts.cylinder_names,
                                                                                          parts.cylinders)],
            "joints": [{"name": machine.name(model.joints[j].name), "frames": pair.tolist()}
                       for j, pair in _other_joints(model, parts)],
            "fixed": parts.fixed.tolist()}


def _links(model, shaped_bodies: set[int]) -> list[dict[str, Any]]:
    """The bodies without collision shapes (other than the fixed one) as the frames of each rigid node: body label
    (the first body of the node) and frame indices."""
    fixed_node = int(model.body_node[model.body_names.index(FIXED)])
    shaped_nodes = {int(model.body_node[b]) for b in shaped_bodies}
    links, seen = [], set()
    for b, name in enumerate(model.body_names):
        node = int(model.body_node[b])
        if node in seen | shaped_nodes or node == fixed_node:
            continue
        seen.add(node)
        links.append({"body": name.rsplit(PATH_SEPARATOR, 1)[-1],
                      "frames": np.flatnonzero(model.frame_node == node).tolist()})
    return links


def _other_joints(model, parts) -> list:
    """(joint index, (parent, child) frames) of the joints drawn as connections (not cylinders, not a free base's)."""
    return list(zip(parts.connection_joints.tolist(), parts.connections))


def _step_scene(scenario: Scenario, step: StepResult) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for machine in scenario.machines:
        if machine.id not in step.q or step.q[machine.id] is None:
            out[machine.id] = None
            continue
        out[machine.id] = machine_scene(machine, machine_values(scenario, machine, step.parameters),
                                        step.q[machine.id], step.q_reference[machine.id])
    return out


def machine_scene(machine: Machine, values: dict, q: np.ndarray, q_reference: np.ndarray) -> dict[str, Any]:
    """A machine's scene at one step (``frames``, ``reference``, ``shapes``, ``shapes_reference``; see the module
    docstring) by forward kinematics of its solved coordinates ``q`` and unloaded ones ``q_reference`` ((nq,) m or
    rad, in the solved model's coordinate order), with the step's settings ``values``
    (:func:`~shiftsim.scenario.runner.machine_values`)."""
    setup = machine.setup(values)
    loaded = machine.world_poses(q, setup)
    reference = machine.world_poses(q_reference, setup)
    table, _ = shape_table([(machine.id, setup.model)])
    return {"frames": loaded.frames[:, :3, 3].tolist(), "reference": reference.frames[:, :3, 3].tolist(),
            "shapes": _shape_poses(table, loaded.bodies), "shapes_reference": _shape_poses(table, reference.bodies)}


def _shape_poses(table: ShapeTable, bodies: np.ndarray) -> list:
    """(S, 3, 4) world pose of each shape: body pose times body <- shape."""
    return (bodies[table.body] @ table.local)[:, :3, :].tolist()
