"""Ground contacts and tyres evaluated by the compiled core (``src/ground.c``): the field's arrays by name, its capsule,
the two evaluations (generalized terms, per-point results) and the rows its laws' numbers take as design parameters
(:class:`ParameterRows`, for ``_core.partials``).

The laws are written in ``src/ground.c`` (and in shiftsim/ground/contacts.py's and tyres.py's docstrings);
``shiftsim.ground`` fills the arrays (:data:`GROUND_FIELDS`, ``src/fields.h``) from its contacts, tyres and ground.
A problem whose force fields are all native (:func:`field`) solves with no Python call per evaluation, on every
thread of a batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .library import check_names, core

GROUND_FIELDS = (
    "placement_rotation", "placement_translation", "level", "grid_x", "grid_y", "grid_z",
    "contact_node", "contact_local", "contact_normal", "contact_tangential", "contact_friction", "contact_anchor",
    "contact_projector",
    "tyre_node", "tyre_radius", "tyre_stiffness", "tyre_tangential", "tyre_friction", "tyre_axis",
    "tyre_friction_point", "tyre_anchor", "tyre_projector", "contact_frame",
)
"""The ground field's arrays, in the order the core takes them (src/fields.h has the shapes and units)."""
_SHAPES = {"placement_rotation": (3, 3), "placement_translation": (3,), "level": (1,), "grid_x": (-1,),
           "grid_y": (-1,), "grid_z": (-1,)}
_PER_ITEM = {"node": (), "local": (3,), "anchor": (3,), "projector": (3, 3), "axis": (3,), "friction_point": (3,)}

GROUND_PARAMETERS = ("stiffness", "stiffness_and_stick", "tangential", "friction", "radius")
"""What a ground parameter scales in its contacts' and tyres' laws, as the core codes it (src/fields.h): the normal
(a tyre's radial) stiffness; that and the stick stiffness with it (where the ground gives no tangential stiffness, the
stick stiffness is the normal one); the stick stiffness; the Coulomb coefficient; a tyre's unloaded radius (m)."""
PARAMETER_GROUND, PARAMETER_NONE = (core.PARAMETER_KINDS.index(kind) for kind in ("ground", "none"))
"""The core's codes of the parameter kinds ground and none (``_core.PARAMETER_KINDS``, src/fields.h)."""

check_names("GROUND_FIELDS", GROUND_FIELDS)
check_names("GROUND_PARAMETERS", GROUND_PARAMETERS)


def field(n_nodes: int, arrays: dict[str, np.ndarray]):
    """The core's capsule of a ground field for a model of ``n_nodes`` nodes. ``arrays``: by the names of
    :data:`GROUND_FIELDS`; contacts' and tyres' arrays left out are empty (a field of contacts only, or of tyres
    only), and ``contact_frame`` left out is -1 for every contact (none stands at a frame of its own). Sizes, grid
    order and node indices are checked by the core (ValueError naming the array)."""
    given = []
    arrays = {"contact_frame": np.full(len(arrays.get("contact_node", ())), -1)} | dict(arrays)
    for name in GROUND_FIELDS:
        integer = name.endswith(("_node", "_frame"))
        if name in arrays:
            value = np.asarray(arrays[name], dtype=np.int64 if integer else float)
        else:
            part = name.split("_", 1)[1]
            value = np.zeros((0, *_PER_ITEM.get(part, ())), dtype=np.int64 if integer else float)
        given.append(np.ascontiguousarray(value))
    return core.ground(int(n_nodes), tuple(given))


@dataclass(frozen=True)
class GroundPoints:
    """Each contact and tyre at a batch of B states, world axes. Contacts (C): ``contact_point``, ``contact_force``
    (B, C, 3), ``contact_stiffness`` (B, C, 3, 3) d force / d point, ``contact_energy``, ``contact_touching``,
    ``contact_slipping`` (B, C). Tyres (T): ``tyre_point`` (B, T, 3) the contact point, ``tyre_force`` (B, T, 9) on
    the centre, the spin axis and the friction point, ``tyre_compression`` (m; negative: clear of the ground),
    ``tyre_energy``, ``tyre_touching``, ``tyre_slipping`` (B, T), ``tyre_stiffness`` (B, T, 9, 9) the derivative of
    the tyre's force with respect to (centre, spin axis, friction point), the law's own (analytic), and
    ``tyre_point_jacobian`` (B, T, 3, 6) the contact point's with respect to (centre, spin axis)."""

    contact_point: np.ndarray
    contact_force: np.ndarray
    contact_stiffness: np.ndarray
    contact_energy: np.ndarray
    contact_touching: np.ndarray
    contact_slipping: np.ndarray
    tyre_point: np.ndarray
    tyre_force: np.ndarray
    tyre_compression: np.ndarray
    tyre_energy: np.ndarray
    tyre_touching: np.ndarray
    tyre_slipping: np.ndarray
    tyre_stiffness: np.ndarray
    tyre_point_jacobian: np.ndarray


def points(capsule, n_contacts: int, n_tyres: int, rotation: np.ndarray, position: np.ndarray) -> GroundPoints:
    """Every contact and tyre at node poses ``rotation`` (B, n, 3, 3), ``position`` (B, n, 3) (``ground_points``
    in src/ground.c)."""
    batch = rotation.shape[0]
    c, t = n_contacts, n_tyres
    out = GroundPoints(np.empty((batch, c, 3)), np.empty((batch, c, 3)), np.empty((batch, c, 3, 3)),
                       np.empty((batch, c)), np.empty((batch, c), np.uint8), np.empty((batch, c), np.uint8),
                       np.empty((batch, t, 3)), np.empty((batch, t, 9)), np.empty((batch, t)), np.empty((batch, t)),
                       np.empty((batch, t), np.uint8), np.empty((batch, t), np.uint8), np.empty((batch, t, 9, 9)),
                       np.empty((batch, t, 3, 6)))
    core.ground_points(capsule, np.ascontiguousarray(rotation, dtype=float), np.ascontiguousarray(position, dtype=float),
                       *(getattr(out, name) for name in GroundPoints.__dataclass_fields__))
    flags = ("contact_touching", "contact_slipping", "tyre_touching", "tyre_slipping")
    return GroundPoints(**{name: getattr(out, name).view(bool) if name in flags else getattr(out, name)
                           for name in GroundPoints.__dataclass_fields__})


def terms(model_capsule, capsule, nq: int, rotation: np.ndarray, position: np.ndarray, omega: np.ndarray,
          v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The field's generalized force Q (B, nq), stiffness dQ/dq (B, nq, nq), energy (B,) and conservative (B,)
    bool (no contact or tyre slips) at B states (``ground_terms`` in src/ground.c)."""
    batch = rotation.shape[0]
    q_force, stiffness, energy, conservative = np.zeros((batch, nq)), np.zeros((batch, nq, nq)), np.zeros(batch), \
        np.zeros(batch)
    core.ground_terms(model_capsule, capsule, *(np.ascontiguousarray(a, dtype=float) for a in (rotation, position,
                                                                                              omega, v)),
                      q_force, stiffness, energy, conservative)
    return q_force, stiffness, energy, conservative > 0.5


@dataclass(frozen=True)
class ParameterRows:
    """A ground field's numbers as design parameters of a ``_core.partials`` call (src/partials.c, ``ground_partials``
    in src/ground.c): the field's ``capsule`` with its ``n_contacts`` and ``n_tyres``; ``rows`` (P, 4) int64, per
    parameter (:data:`PARAMETER_GROUND`, what it scales (:data:`GROUND_PARAMETERS`), start, count) for a ground
    parameter and a row of kind none for any other; ``members`` (M,) int64 the contacts and tyres each scales,
    ``members[start:start + count]`` (contact i numbered i, tyre t ``n_contacts + t``)."""

    capsule: object
    n_contacts: int
    n_tyres: int
    rows: np.ndarray
    members: np.ndarray


def parameter_rows(capsule, n_contacts: int, n_tyres: int,
                   scaled: list[tuple[str, tuple[int, ...], tuple[int, ...]] | None]) -> ParameterRows:
    """:class:`ParameterRows` of the field ``capsule`` for P parameters, ``scaled`` per parameter: (what it scales
    (:data:`GROUND_PARAMETERS`), contact indices, tyre indices), or None for a parameter not of the ground."""
    rows: list[tuple[int, int, int, int]] = []
    members: list[int] = []
    for item in scaled:
        if item is None:
            rows.append((PARAMETER_NONE, 0, 0, 0))
            continue
        what, contacts, tyres = item
        rows.append((PARAMETER_GROUND, GROUND_PARAMETERS.index(what), len(members), len(contacts) + len(tyres)))
        members += [*contacts, *(n_contacts + t for t in tyres)]
    out = ParameterRows(capsule, n_contacts, n_tyres, np.array(rows, dtype=np.int64).reshape(len(rows), 4),
                        np.array(members, dtype=np.int64))
    out.rows.flags.writeable = out.members.flags.writeable = False  # kept and shared (sensitivity.ground)
    return out
