"""Quasi-static tyres: Shift ``force_modules`` of type ``tire`` as a force field on the solver.

A tyre is a circle fixed to its wheel body: centre ``c`` the body's origin, radius ``r``
(unloaded), spin axis ``a`` (default the body's y axis). The ground under the centre is
taken as its tangent plane there: height ``h`` at ``(c_x, c_y)``, unnormalised normal
``m = (-h_x, -h_y, 1)``. Per tyre, world axes (z up):

* the contact direction ``d = w / |w|``, ``w = m - (m.a) a``: the ground normal projected
  perpendicular to the spin axis (the radius of the wheel that points at the ground);
* ``t = (c_z - h) / |w|``: the distance from the centre to the ground along ``-d``, and the
  radial compression ``e = r - t``; the contact point ``p = c - t d``;
* normal: a compression-only radial spring of energy ``k e^2 / 2`` (``e > 0``); its force on
  the wheel is the gradient (on a plane: ``k e / (n.d)`` along the ground normal ``n``, at ``p``);
  the radial force ``N = k e``;
* tangential stick, as :mod:`.contacts`: a spring ``-k_t P (b - a0)`` on the wheel's material
  point ``b`` that was the contact point where the tyre was anchored, toward that anchor
  ``a0``, in the ground's tangent plane there (``P = I - n n^T``), saturating at ``mu N``.

The stiffness is analytic: the energy and the friction force are functions of the world
vectors ``c``, ``a`` and ``b`` (their gradient and Hessian are computed by the compiled core,
``src/ground.c``, which the solver calls with no Python in its iteration), chained with their
Jacobians and second derivatives along the coordinates. Within a bilinear grid cell the twist
``d2h/dxdy`` makes ``m`` depend on ``c``; that is included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import Problems, suggest
from ..typed import GENERAL_BOUND, is_finite_number, shown
from ..core import ground as core_ground
from ..core.layout import compiled
from ..forces import ForceTerms
from ..kinematics import State, state
from ..model import Model
from .contacts import ContactField, ContactState, surface_arrays, tangent_projectors
from .terrain import Ground

TYRE_TYPE = "tire"
RADIUS_KEYS = ("unloaded_radius", "radius", "UNLOADED_RADIUS")
STIFFNESS_KEYS = ("vertical_stiffness", "radial_stiffness", "VERTICAL_STIFFNESS")
FRICTION_KEYS = ("mu", "friction", "u_max", "PDX1")
AXIS_KEYS = ("spin_axis",)
KEYS = {"name", "type", "wheel_body", "active", "description", *RADIUS_KEYS, *STIFFNESS_KEYS, *FRICTION_KEYS,
        *AXIS_KEYS}


@dataclass(frozen=True)
class Tyre:
    """A tyre on the wheel body at ``node``: ``radius`` (m), radial ``stiffness`` (N/m), ``friction`` (None: the
    ground's), ``axis`` (3,) unit spin axis in wheel-body coordinates, and the parameters read but dropped."""

    name: str
    node: int
    radius: float
    stiffness: float
    friction: float | None
    axis: np.ndarray
    dropped: tuple[str, ...] = ()


SCENARIO_KEYS = {"radius": RADIUS_KEYS, "vertical_stiffness": STIFFNESS_KEYS, "friction": FRICTION_KEYS}
"""A scenario's tyre parameters (``machines[].tyres``: m, N/m, -) and the file keys each replaces."""


def tyre_modules(model: Model) -> list[tuple[str, dict[str, Any]]]:
    """The active ``tire`` force modules of a model read from a Shift file (``spec.extras["force_modules"]``: the
    top-level ones and those inside assemblies), each with where it was written; nothing of them is checked."""
    modules = model.spec.extras.get("force_modules") or []
    if not isinstance(modules, list):
        return []
    places = model.spec.extras.get("force_module_places") or [f"force_modules[{i}]" for i in range(len(modules))]
    return [(where, module) for where, module in zip(places, modules)
            if isinstance(module, dict) and module.get("type") == TYRE_TYPE and module.get("active", True) is not False]


def read_tyres(model: Model, given: dict[str, Any] | None = None, given_at: str = "tyres") -> list[Tyre]:
    """The tyres of a model (:func:`tyre_modules`); other force-module types are not read. ``given``: a scenario's
    parameters (``{"radius": m, "vertical_stiffness": N/m, "friction": mu, "each": {NAME: {...}}}``, already
    schema-checked, written at ``given_at``), which replace the file's (a tyre's own over the set for all). Bad
    entries raise one ModelError naming where each was written (``force_modules[i].key``,
    ``assemblies[0].force_modules[1].key``); a missing parameter names the scenario field to set."""
    modules = model.spec.extras.get("force_modules") or []
    problems = Problems(model.spec.source)
    if not isinstance(modules, list):
        problems.add("force_modules", "is not a list", "a list of force modules")
        problems.raise_if_any()
    given = given or {}
    tyres = []
    for where, module in tyre_modules(model):
        own = given.get("each", {}).get(module.get("name"), {})
        tyre = _read_tyre(model, _with_given(module, {**given, **own}), where, problems, given_at)
        if tyre is not None:
            tyres.append(tyre)
    names = [t.name for t in tyres]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.add("force_modules", f"tyre {name!r} is given more than once", "one tyre per name")
    problems.raise_if_any()
    return tyres


def _with_given(module: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``module`` with the scenario's parameters in place of the file's keys for them."""
    out = dict(module)
    for key, file_keys in SCENARIO_KEYS.items():
        if key in given:
            for file_key in file_keys:
                out.pop(file_key, None)
            out[file_keys[0]] = given[key]
    return out


def _read_tyre(model: Model, module: dict[str, Any], where: str, problems: Problems, given_at: str) -> Tyre | None:
    before = len(problems.items)
    name = module.get("name")
    if not isinstance(name, str) or not name:
        problems.add(f"{where}.name", "missing or not a text", "the tyre's name")
    body = module.get("wheel_body")
    bodies = list(model.body_names[1:])
    if not isinstance(body, str) or body not in bodies:
        problems.add(f"{where}.wheel_body", f"no body {body!r}" if isinstance(body, str) else "missing or not a text",
                     f"the full path of the wheel body: {suggest(str(body), bodies)}")
    missing = _MissingText(name if isinstance(name, str) and name else "NAME", given_at)
    radius = _number(module, RADIUS_KEYS, where, problems, missing.of("radius", "m", "unloaded radius"))
    stiffness = _number(module, STIFFNESS_KEYS, where, problems, missing.of("vertical_stiffness", "N/m", "vertical stiffness"))
    friction = _number(module, FRICTION_KEYS, where, problems, None)
    axis = np.array([0.0, 1.0, 0.0])
    if "spin_axis" in module:
        value = module["spin_axis"]
        ok = isinstance(value, list) and len(value) == 3 and all(is_finite_number(v) for v in value) \
            and np.linalg.norm(np.asarray(value, float)) > 0.0
        if not ok:
            problems.add(f"{where}.spin_axis", f"is {shown(value)}", "three numbers, not all zero (wheel-body coordinates)")
        else:
            axis = np.asarray(value, float) / np.linalg.norm(np.asarray(value, float))
    if len(problems.items) > before:
        return None
    dropped = tuple(sorted(k for k in module if k not in KEYS))
    node = int(model.body_node[model.body_names.index(body)])
    return Tyre(name, node, radius, stiffness, friction, axis, dropped)


@dataclass(frozen=True)
class _MissingText:
    """What to say when tyre ``name`` lacks a required parameter: the scenario field to set (under ``given_at``)."""

    name: str
    given_at: str

    def of(self, key: str, unit: str, label: str) -> tuple[str, str]:
        return (f"tyre {self.name!r} has no {label} (the file gives none)",
                f"{self.given_at}.{key} ({unit}) in the scenario for all the machine's tyres, or "
                f"{self.given_at}.each.{self.name}.{key} for this one")


def _number(module: dict[str, Any], keys: tuple[str, ...], where: str, problems: Problems,
            missing: tuple[str, str] | None) -> Any:
    """The one of ``keys`` given in ``module``; None when absent, with the problem ``missing`` (what, expected)
    when the parameter is required."""
    given = [k for k in keys if k in module]
    accepted = ", ".join(keys)
    if len(given) > 1:
        problems.add(f"{where}.{given[1]}", f"{given[1]!r} and {given[0]!r} both given", f"one of {accepted}")
        return None
    if not given:
        if missing is not None:
            problems.add(where, *missing)
        return None
    value = module[given[0]]
    if not is_finite_number(value) or value <= 0.0:
        problems.add(f"{where}.{given[0]}", f"is {shown(value)}", "a positive number (SI units)")
        return None
    if value > GENERAL_BOUND:  # issue 25: a tyre stiffness of 1e300 made a run take minutes
        problems.add(f"{where}.{given[0]}", f"is {shown(value)}", f"a positive number up to {GENERAL_BOUND:g} (SI units)")
        return None
    return float(value)


@dataclass(frozen=True)
class TyreState:
    """Tyres at a batch of states, world axes: contact points p (B, n, 3), the ground's force on each tyre
    (B, n, 3) (normal and friction together, as if at p), compression e (B, n; negative: clear of the ground),
    radial force N (B, n), touching and slipping (B, n)."""

    points: np.ndarray
    forces: np.ndarray
    compression: np.ndarray
    radial: np.ndarray
    touching: np.ndarray
    slipping: np.ndarray


class TyreField:
    """Quasi-static tyres against ``ground`` (see the module docstring); ``rotation``/``translation``: world <- model
    frame; ``tangential``: stick stiffness per tyre (n,), N/m; ``friction_points`` (n, 3): each tyre's material
    friction point in wheel-body coordinates; ``anchors`` (n, 3): the world points they are pulled toward."""

    def __init__(self, tyres: list[Tyre], ground: Ground, rotation: np.ndarray, translation: np.ndarray,
                 tangential: np.ndarray, friction_points: np.ndarray, anchors: np.ndarray):
        self.tyres = list(tyres)
        self.ground = ground
        self.rotation = np.asarray(rotation, float)
        self.translation = np.asarray(translation, float)
        n = len(tyres)
        self.tangential = np.broadcast_to(np.asarray(tangential, float), (n,)).copy()
        self.friction_points = np.asarray(friction_points, float).reshape(n, 3)
        self.anchors = np.asarray(anchors, float).reshape(n, 3)
        self.nodes = np.array([t.node for t in tyres], dtype=int)
        self.radius = np.array([t.radius for t in tyres], float)
        self.stiffness = np.array([t.stiffness for t in tyres], float)
        self.mu = np.array([ground.friction if t.friction is None else t.friction for t in tyres], float)
        self.axis_local = np.array([t.axis for t in tyres], float).reshape(n, 3)
        self.projector = tangent_projectors(ground, self.anchors)
        self._capsules: dict[int, object] = {}

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tyres]

    def _vectors(self, s: State) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Centres, spin axes and friction points (B, n, 3) in the model frame."""
        rot = s.rotation[:, self.nodes]
        centre = s.position[:, self.nodes]
        return centre, np.einsum("bnij,nj->bni", rot, self.axis_local), \
            np.einsum("bnij,nj->bni", rot, self.friction_points) + centre

    def core_arrays(self) -> dict[str, np.ndarray]:
        """The tyres as the core's ground-field arrays (tyre_*; :mod:`shiftsim.core.ground`)."""
        return {"tyre_node": self.nodes, "tyre_radius": self.radius, "tyre_stiffness": self.stiffness,
                "tyre_tangential": self.tangential, "tyre_friction": self.mu, "tyre_axis": self.axis_local,
                "tyre_friction_point": self.friction_points, "tyre_anchor": self.anchors,
                "tyre_projector": self.projector}

    def core_field(self, n_nodes: int):
        """The core's capsule of this field for a model of ``n_nodes`` nodes (built once)."""
        if n_nodes not in self._capsules:
            arrays = surface_arrays(self.ground, self.rotation, self.translation) | self.core_arrays()
            self._capsules[n_nodes] = core_ground.field(n_nodes, arrays)
        return self._capsules[n_nodes]

    def _forces(self, s: State) -> tuple[np.ndarray, np.ndarray, TyreState]:
        """World forces on (c, a, b) (B, n, 9), energy (B, n) and the TyreState (the compiled core, src/ground.c)."""
        g = core_ground.points(self.core_field(s.rotation.shape[1]), 0, len(self.tyres), s.rotation, s.position)
        force = g.tyre_force
        radial = self.stiffness[None, :] * np.where(g.tyre_touching, g.tyre_compression, 0.0)
        report = TyreState(g.tyre_point, force[..., :3] + force[..., 6:], g.tyre_compression, radial, g.tyre_touching,
                           g.tyre_slipping)
        return force, g.tyre_energy, report

    def evaluate(self, s: State) -> ContactState:
        """The tyres as contacts (points, forces, touching, slipping; world axes) for footprints and reports."""
        _, energy, t = self._forces(s)
        return ContactState(t.points, t.forces, np.zeros(t.forces.shape + (3,)), energy, t.touching, t.slipping)

    def tyre_state(self, s: State) -> TyreState:
        return self._forces(s)[2]

    def terms(self, model: Model, s: State) -> ForceTerms:
        """Generalized tyre forces (B, nq), their stiffness dQ/dq (B, nq, nq) and energy (B,) (the compiled core)."""
        q_force, stiffness, energy, conservative = core_ground.terms(compiled(model), self.core_field(model.n_nodes),
                                                                     model.nq, *s.arrays)
        return ForceTerms(q_force, stiffness, energy, bool(np.all(conservative)))

    def point_forces(self, model: Model, s: State) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Each tyre's force as (node, point (B, 3), force (B, 3)), model axes: the force on the centre and on the
        friction point, and the moment of the spin axis' term as a couple (exact for any ground)."""
        force = self._forces(s)[0]
        c_m, a_m, b_m = self._vectors(s)
        force_m = force @ np.kron(np.eye(3), self.rotation)
        out = []
        for i, node in enumerate(self.nodes):
            moment = np.cross(a_m[:, i], force_m[:, i, 3:6])  # d(a.F_a) for a turn omega: omega . (a x F_a)
            lever = np.cross(moment, a_m[:, i])  # perpendicular to the moment; the couple lever
            size = np.linalg.norm(lever, axis=-1, keepdims=True)
            lever = np.where(size > 0.0, lever / np.maximum(size, 1e-300), 0.0)
            pair = np.cross(moment, lever)  # lever x pair = moment
            out += [(int(node), c_m[:, i], force_m[:, i, :3] - pair), (int(node), c_m[:, i] + lever, pair),
                    (int(node), b_m[:, i], force_m[:, i, 6:])]
        return out


def anchored_tyres(tyres: list[Tyre], model: Model, q: np.ndarray, ground: Ground, rotation: np.ndarray,
                   translation: np.ndarray, tangential: np.ndarray) -> TyreField:
    """A field whose friction springs hold each tyre's contact point at coordinates ``q`` (nq,): the material
    point of the wheel there, anchored where it stands."""
    n = len(tyres)
    probe = TyreField(tyres, ground, rotation, translation, tangential, np.zeros((n, 3)), np.zeros((n, 3)))
    s = state(model, np.asarray(q, float)[None])
    points = probe.tyre_state(s).points[0]  # world
    model_points = (points - probe.translation) @ probe.rotation
    local = np.einsum("nji,nj->ni", s.rotation[0, probe.nodes], model_points - s.position[0, probe.nodes])
    return TyreField(tyres, ground, rotation, translation, tangential, local, points)


class OnGround:
    """Contacts and tyres together as one force field; tyres follow the contacts in ``names`` and ``evaluate``."""

    def __init__(self, contacts: ContactField, tyres: TyreField):
        self.contacts, self.tyres = contacts, tyres
        self._capsules: dict[int, object] = {}

    @property
    def names(self) -> list[str]:
        return self.contacts.names + self.tyres.names

    def evaluate(self, s: State) -> ContactState:
        parts = (self.contacts.evaluate(s), self.tyres.evaluate(s))
        return ContactState(*(np.concatenate([getattr(p, name) for p in parts], axis=1)
                              for name in ("points", "forces", "stiffness", "energy", "touching", "slipping")))

    def core_field(self, n_nodes: int):
        """The core's capsule of the contacts and tyres together (one native field for the solver)."""
        if n_nodes not in self._capsules:
            c = self.contacts
            arrays = surface_arrays(c.ground, c.rotation, c.translation) | c.core_arrays() | self.tyres.core_arrays()
            self._capsules[n_nodes] = core_ground.field(n_nodes, arrays)
        return self._capsules[n_nodes]

    def terms(self, model: Model, s: State) -> ForceTerms:
        q_force, stiffness, energy, conservative = core_ground.terms(compiled(model), self.core_field(model.n_nodes),
                                                                     model.nq, *s.arrays)
        return ForceTerms(q_force, stiffness, energy, bool(np.all(conservative)))

    def point_forces(self, model: Model, s: State) -> list[tuple[int, np.ndarray, np.ndarray]]:
        return self.contacts.point_forces(model, s) + self.tyres.point_forces(model, s)
