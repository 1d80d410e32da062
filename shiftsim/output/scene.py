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
import orjson

from ..collision.shapes import ShapeTable, shape_table
from ..spec import FIXED, PATH_SEPARATOR
from ..plots.parts import machine_parts
from ..scenario.chain import BlockStep
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
    return {name: array.tolist() for name, array in machine_scene_arrays(machine, values, q, q_reference).items()}


def machine_scene_arrays(machine: Machine, values: dict, q: np.ndarray, q_reference: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`machine_scene` as arrays, for one step or a batch of steps with the same settings ``values``: ``q`` and
    ``q_reference`` (..., nq) give ``frames``, ``reference`` (..., F, 3) and ``shapes``, ``shapes_reference``
    (..., S, 3, 4), C-ordered."""
    setup = machine.setup(values)
    loaded = machine.world_poses(q, setup)
    reference = machine.world_poses(q_reference, setup)
    table, _ = shape_table([(machine.id, setup.model)])
    return {"frames": np.ascontiguousarray(loaded.frames[..., :3, 3]),
            "reference": np.ascontiguousarray(reference.frames[..., :3, 3]),
            "shapes": _shape_poses(table, loaded.bodies), "shapes_reference": _shape_poses(table, reference.bodies)}


def _shape_poses(table: ShapeTable, bodies: np.ndarray) -> np.ndarray:
    """(..., S, 3, 4) world pose of each shape: body pose times body <- shape."""
    return np.ascontiguousarray((bodies[..., table.body, :, :] @ table.local)[..., :3, :])


def scene_steps_json(scenario: Scenario, steps: list[StepResult]) -> bytes:
    """The ``scene.steps`` array of results.json for ``steps`` as JSON text, a step a line: the scenes of a block of
    the block path (:class:`~shiftsim.scenario.chain.BlockStep`, whose machines keep their model and placement over the
    sweep) by one forward-kinematics pass over the block, the others a step at a time; the same numbers as
    :func:`scene_document`'s ``steps``."""
    texts: list[bytes] = []
    start = 0
    while start < len(steps):
        step = steps[start]
        end = start + 1
        if _posed_by_block(scenario, step):
            while end < len(steps) and _posed_by_block(scenario, steps[end]) and steps[end].block is step.block:
                end += 1
            texts += _block_scenes(scenario, steps[start:end])
        else:
            texts.append(orjson.dumps(_step_scene(scenario, step)))
        start = end
    return b"[\n" + b",\n".join(texts) + b"\n]"


def _posed_by_block(scenario: Scenario, step: StepResult) -> bool:
    """Whether ``step`` is a block step with every machine solved (its scene comes from its block's pass)."""
    return isinstance(step, BlockStep) and all(step.q.get(machine.id) is not None for machine in scenario.machines)


def _block_scenes(scenario: Scenario, steps: list[StepResult]) -> list[bytes]:
    """The scenes of consecutive steps of one block (every machine solved at each), as JSON texts."""
    machines = {machine.id: machine_scene_arrays(
        machine, machine_values(scenario, machine, steps[0].parameters),
        np.array([step.q[machine.id] for step in steps]), np.array([step.q_reference[machine.id] for step in steps]))
        for machine in scenario.machines}
    return [orjson.dumps({machine: {name: array[row] for name, array in arrays.items()}
                          for machine, arrays in machines.items()}, option=orjson.OPT_SERIALIZE_NUMPY)
            for row in range(len(steps))]
