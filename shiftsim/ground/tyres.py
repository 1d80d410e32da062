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
vectors ``c``, ``a`` and ``b`` (gradient and Hessian below), chained with their Jacobians and
second derivatives along the coordinates. Within a bilinear grid cell the twist
``d2h/dxdy`` makes ``m`` depend on ``c``; that is included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import Problems, suggest
from ..typed import GENERAL_BOUND, is_finite_number, shown
from ..forces import ForceTerms, point_hessian
from ..kinematics import State, state
from ..model import Model
from ..spatial import cross
from .contacts import ContactField, ContactState, stick_friction, tangent_projectors
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

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tyres]

    def _vectors(self, s: State) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Centres, spin axes and friction points (B, n, 3) in the model frame."""
        rot = s.rotation[:, self.nodes]
        centre = s.position[:, self.nodes]
        return centre, np.einsum("bnij,nj->bni", rot, self.axis_local), \
            np.einsum("bnij,nj->bni", rot, self.friction_points) + centre

    def _geometry(self, c: np.ndarray, a: np.ndarray) -> dict[str, np.ndarray]:
        """Compression e and its gradient (B, n, 6) and Hessian (B, n, 6, 6) in (c, a), world axes."""
        h, grad, twist = self.ground.height(c[..., :2])
        m = np.concatenate([-grad, np.ones(h.shape + (1,))], axis=-1)
        t_mat = np.zeros(h.shape + (3, 3))
        t_mat[..., 0, 1] = t_mat[..., 1, 0] = -twist  # dm/dc
        ma = np.sum(m * a, axis=-1)
        w = m - ma[..., None] * a
        big_w = np.sum(m * m, axis=-1) - ma**2
        depth = c[..., 2] - h
        ta = np.einsum("...ij,...j->...i", t_mat, a)
        grad_d = np.concatenate([m, np.zeros_like(m)], axis=-1)
        grad_w = np.concatenate([2.0 * np.einsum("...ij,...j->...i", t_mat, w), -2.0 * ma[..., None] * m], axis=-1)
        hess_d = np.zeros(h.shape + (6, 6))
        hess_d[..., :3, :3] = t_mat
        hess_w = np.zeros(h.shape + (6, 6))
        hess_w[..., :3, :3] = 2.0 * (t_mat @ t_mat - ta[..., :, None] * ta[..., None, :])
        cross_block = -2.0 * ta[..., :, None] * m[..., None, :] - 2.0 * ma[..., None, None] * t_mat
        hess_w[..., :3, 3:] = cross_block
        hess_w[..., 3:, :3] = np.swapaxes(cross_block, -1, -2)
        hess_w[..., 3:, 3:] = -2.0 * m[..., :, None] * m[..., None, :]
        r12, r32, r52 = big_w**-0.5, big_w**-1.5, big_w**-2.5
        e = self.radius - depth * r12
        grad_e = -grad_d * r12[..., None] + 0.5 * (depth * r32)[..., None] * grad_w
        outer_dw = grad_d[..., :, None] * grad_w[..., None, :]
        hess_e = -hess_d * r12[..., None, None] + 0.5 * r32[..., None, None] * (outer_dw + np.swapaxes(outer_dw, -1, -2)) \
            + 0.5 * (depth * r32)[..., None, None] * hess_w \
            - 0.75 * (depth * r52)[..., None, None] * grad_w[..., :, None] * grad_w[..., None, :]
        d = w / np.sqrt(big_w)[..., None]
        return {"e": e, "grad": grad_e, "hess": hess_e, "point": c - (depth / np.sqrt(big_w))[..., None] * d}

    def _forces(self, s: State):
        """World forces on (c, a, b) (B, n, 9), their derivative (B, n, 9, 9), energy (B, n), and the TyreState."""
        rot = self.rotation
        c_m, a_m, b_m = self._vectors(s)
        c, a, b = c_m @ rot.T + self.translation, a_m @ rot.T, b_m @ rot.T + self.translation
        g = self._geometry(c, a)
        k, kt, mu = self.stiffness[None, :], self.tangential[None, :], self.mu[None, :]
        touching = g["e"] > 0.0
        e = np.where(touching, g["e"], 0.0)
        force = np.zeros(e.shape + (9,))
        deriv = np.zeros(e.shape + (9, 9))
        force[..., :6] = -(k * e)[..., None] * g["grad"]  # -dU/dx = -k e de/dx
        deriv[..., :6, :6] = -k[..., None, None] * (g["grad"][..., :, None] * g["grad"][..., None, :]
                                                   + e[..., None, None] * g["hess"]) * touching[..., None, None]
        radial = k * e
        limit = mu * radial
        f = stick_friction(self.projector, b, self.anchors, kt, limit, touching)
        slipping, friction = f.slipping, f.force
        force[..., 6:] = friction
        deriv[..., 6:, 6:] = f.stiffness
        if np.any(slipping):
            slip_bx = -(mu * k)[..., None, None] * f.direction[..., :, None] * g["grad"][..., None, :]  # d(-mu k e u)/d(c, a)
            deriv[..., 6:, :6] = np.where(slipping[..., None, None], slip_bx, 0.0)
        energy = 0.5 * k * e**2 + f.energy
        normal_c = force[..., :3]
        report = TyreState(g["point"], normal_c + friction, g["e"], radial, touching, slipping)
        return force, deriv, energy, report, (c_m, a_m, b_m)

    def evaluate(self, s: State) -> ContactState:
        """The tyres as contacts (points, forces, touching, slipping; world axes) for footprints and reports."""
        _, _, energy, t, _ = self._forces(s)
        return ContactState(t.points, t.forces, np.zeros(t.forces.shape + (3,)), energy, t.touching, t.slipping)

    def tyre_state(self, s: State) -> TyreState:
        return self._forces(s)[3]

    def terms(self, model: Model, s: State) -> ForceTerms:
        """Generalized tyre forces (B, nq), their stiffness dQ/dq (B, nq, nq) and energy (B,)."""
        force, deriv, energy, report, vectors = self._forces(s)
        rot = self.rotation
        blocks = np.kron(np.eye(3), rot)  # (9, 9): world <- model for the three vectors
        force_m = force @ blocks  # R^T f per vector
        deriv_m = blocks.T @ deriv @ blocks
        moves = model.subtree[model.coordinate_node][:, self.nodes].T  # (n, nq)
        c_m, a_m, b_m = vectors
        mask = moves[None, :, :, None]
        jc = (cross(s.omega[:, None], c_m[:, :, None]) + s.v[:, None]) * mask  # (B, n, nq, 3)
        ja = cross(s.omega[:, None], a_m[:, :, None]) * mask
        jb = (cross(s.omega[:, None], b_m[:, :, None]) + s.v[:, None]) * mask
        jac = np.concatenate([jc, ja, jb], axis=-1)  # (B, n, nq, 9)
        q_force = np.einsum("bnkx,bnx->bk", jac, force_m)
        stiffness = np.sum(jac @ deriv_m @ np.swapaxes(jac, 2, 3), axis=1)
        for i in range(len(self.tyres)):
            for part, jv in enumerate((jc, ja, jb)):
                # jv rows are zero for coordinates that do not move the wheel; for the axis a, Ja_k = omega_k x a
                stiffness += point_hessian(model, s, self.nodes[i], jv[:, i], force_m[:, i, 3 * part:3 * part + 3])
        return ForceTerms(q_force, stiffness, energy.sum(axis=1), not np.any(report.slipping))

    def point_forces(self, model: Model, s: State) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """Each tyre's force as (node, point (B, 3), force (B, 3)), model axes: the force on the centre and on the
        friction point, and the moment of the spin axis' term as a couple (exact for any ground)."""
        force, _, _, _, (c_m, a_m, b_m) = self._forces(s)
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

    @property
    def names(self) -> list[str]:
        return self.contacts.names + self.tyres.names

    def evaluate(self, s: State) -> ContactState:
        parts = (self.contacts.evaluate(s), self.tyres.evaluate(s))
        return ContactState(*(np.concatenate([getattr(p, name) for p in parts], axis=1)
                              for name in ("points", "forces", "stiffness", "energy", "touching", "slipping")))

    def terms(self, model: Model, s: State) -> ForceTerms:
        a, b = self.contacts.terms(model, s), self.tyres.terms(model, s)
        return ForceTerms(a.Q + b.Q, a.stiffness + b.stiffness, a.energy + b.energy, a.conservative and b.conservative)

    def point_forces(self, model: Model, s: State) -> list[tuple[int, np.ndarray, np.ndarray]]:
        return self.contacts.point_forces(model, s) + self.tyres.point_forces(model, s)
