"""Sensitivities of a machine standing on the ground (:mod:`shiftsim.ground`): its contacts' and tyres' laws as
parameters, and what the ground carries as outputs.

Parameters (the field's numbers; docs/sensitivity.md has the table):

==========  ===========================================  ===================================================
kind        name                                         what
==========  ===========================================  ===================================================
``ground``  ``ground.stiffness``                         every contact's normal stiffness (N/m; also their
                                                         stick stiffness when the ground gives none)
``ground``  ``ground.tangential_stiffness``              every contact's and tyre's stick stiffness (N/m),
                                                         only where the ground gives one
``ground``  ``ground.friction``                          Coulomb coefficient of every contact and of the
                                                         tyres without their own
``contact`` ``<group>.stiffness``, ``<group>.friction``  the same for one contact group: a contact frame, or
                                                         the four corners of a box (``<body>:<box>``)
``tyre``    ``<tyre>.vertical_stiffness``,               a tyre's radial stiffness (N/m; also its stick
            ``<tyre>.radius``, ``<tyre>.friction``       stiffness when the ground gives none), unloaded
                                                         radius (m) and Coulomb coefficient
==========  ===========================================  ===================================================

Every law is linear in these numbers at a fixed configuration, within its regime (touching or clear, sticking or
slipping): a contact's force is ``f = f_n + f_t`` with the normal part ``k_n pen m`` (``m = (-h_x, -h_y, 1)``)
and the friction part either the stick spring ``-k_t P d`` or the Coulomb limit ``-mu N u`` (``N`` proportional
to ``k_n``); a tyre's normal forces are ``k e grad e`` (``e = r - t``: linear in the radius) and its friction
force the stick spring or ``mu k e`` along the slip. So df/dp is the part of the force a parameter scales, per unit
of it (per unit of ``e`` for the radius). The compiled core computes it beside the laws (``ground_partials`` in
src/ground.c), with dQ/dp, in the same call and batch as every other parameter's partials
(:func:`equilibrium_partials`); :func:`parameter_rows` tells it what each parameter scales in which laws.

Outputs (world axes of the scenario, z up): ``<contact or tyre>.fx|fy|fz`` the ground's force on it (kind
``reaction``); ``cop.x``, ``cop.y`` the centre of pressure (kind ``cop``); ``margin`` the tipping margin, the
distance of the centre of pressure inside the nearest edge of the support polygon (kind ``margin``,
:mod:`shiftsim.ground.footprint`); a tyre counts at its contact point with the force on its centre and friction
point, as in the footprint. Contact forces change with the configuration through the core's contact stiffness
d force / d point; a tyre's force through the tyre law's stiffness d force / d (centre, spin axis, friction
point) and its contact point through d point / d (centre, spin axis), both from the core (src/ground.c).

At a knot of a law (a contact or tyre just lifting off, a contact at its friction limit) the equilibrium has only
one-sided derivatives: every output says so instead of a number.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

import numpy as np

from ..core import ground as core_ground
from ..ground.contacts import ContactField
from ..ground.footprint import footprint
from ..ground.stand import GroundField
from ..ground.tyres import OnGround, TyreField
from ..kinematics import State
from ..model import Model
from .parameters import Parameter, force_partials, point_shifts

PARAMETER_KINDS = ("ground", "contact", "tyre")
OUTPUT_KINDS = ("reaction", "cop", "margin")
FORCE_FIELDS = ("fx", "fy", "fz")
KNOT = 1e-9  # relative distance from a law's knot treated as on it
_CORNER = re.compile(r":corner[0-3]$")


@dataclass(frozen=True)
class GroundOutput:
    """One output of what the ground carries: ``name``, ``kind`` (:data:`OUTPUT_KINDS`), ``target`` (the contact
    or tyre index, contacts first; for a margin about a given edge its first contact, else -1), ``component``
    (axis; for a margin its edge's second contact, else -1)."""

    name: str
    kind: str
    target: int
    component: int


def parts(field: GroundField) -> tuple[ContactField | None, TyreField | None]:
    """The contacts and the tyres of a ground field, None where absent."""
    if isinstance(field, OnGround):
        return field.contacts, field.tyres
    return (None, field) if isinstance(field, TyreField) else (field, None)


def _groups(contacts) -> dict[str, list[int]]:
    """Contact groups by name: a box's four corners together, every other contact alone."""
    out: dict[str, list[int]] = {}
    for i, name in enumerate(contacts.names):
        out.setdefault(_CORNER.sub("", name), []).append(i)
    return out


def catalogue(field) -> list[Parameter]:
    """The ground field's parameters (see the module docstring). ``component`` is (field name, contact indices,
    tyre indices)."""
    contacts, tyres = parts(field)
    ground = (contacts or tyres).ground
    n_c = 0 if contacts is None else len(contacts.contacts)
    every_c = tuple(range(n_c))
    n_t = 0 if tyres is None else len(tyres.tyres)
    own_friction = tuple(i for i in range(n_t) if tyres.tyres[i].friction is not None) if n_t else ()
    out = []
    if n_c:
        out.append(Parameter("ground.stiffness", "ground", -1, ("stiffness", every_c, ()), float(contacts.normal[0])))
    if ground.tangential_stiffness is not None:
        out.append(Parameter("ground.tangential_stiffness", "ground", -1,
                             ("tangential", every_c, tuple(range(n_t))), float(ground.tangential_stiffness)))
    shared = tuple(i for i in range(n_t) if i not in own_friction)
    if n_c or shared:
        out.append(Parameter("ground.friction", "ground", -1, ("friction", every_c, shared), float(ground.friction)))
    for g, (name, members) in enumerate(_groups(contacts).items() if n_c else ()):
        out.append(Parameter(f"{name}.stiffness", "contact", g, ("stiffness", tuple(members), ()),
                             float(contacts.normal[members[0]])))
        out.append(Parameter(f"{name}.friction", "contact", g, ("friction", tuple(members), ()), float(ground.friction)))
    for t in range(n_t):
        name = tyres.tyres[t].name
        out += [Parameter(f"{name}.vertical_stiffness", "tyre", t, ("stiffness", (), (t,)), float(tyres.stiffness[t])),
                Parameter(f"{name}.radius", "tyre", t, ("radius", (), (t,)), float(tyres.radius[t])),
                Parameter(f"{name}.friction", "tyre", t, ("friction", (), (t,)), float(tyres.mu[t]))]
    return out


def output_catalogue(field) -> list[GroundOutput]:
    """The ground field's outputs: each contact's and tyre's force, the centre of pressure, the margin."""
    contacts, tyres = parts(field)
    names = (contacts.names if contacts is not None else []) + (tyres.names if tyres is not None else [])
    out = [GroundOutput(f"{name}.{f}", "reaction", i, c) for i, name in enumerate(names)
           for c, f in enumerate(FORCE_FIELDS)]
    out += [GroundOutput("cop.x", "cop", -1, 0), GroundOutput("cop.y", "cop", -1, 1), GroundOutput("margin", "margin", -1, -1)]
    return out


def margin_about(field, edge: tuple[str, str]) -> GroundOutput:
    """The output "distance of the centre of pressure inside the line through the contacts ``edge``" (m): the
    capacity search's tipping margin about its tipping edge."""
    a, b = (field.names.index(name) for name in edge)
    return GroundOutput(f"margin about {edge[0]} - {edge[1]}", "margin", a, b)


@dataclass(frozen=True)
class GroundState:
    """The ground field at one equilibrium, world axes (C contacts, T tyres): contact ``points``, ``forces`` (C, 3),
    ``stiffness`` (C, 3, 3) d force / d point, ``normal_force`` (C,) N the size of each normal part,
    ``penetration`` (C,) m, ``touching``/``slipping`` (C,); ``point_jacobian`` (C, nq, 3) of the world points; tyres: ``tyre_force``
    (T, 9) on the centre, the spin axis and the friction point, ``compression`` (T,) m, ``tyre_touching``,
    ``tyre_slipping`` (T,), ``tyre_jacobians`` (T, 3, nq, 3): d(centre, spin axis, friction point)/dq, world;
    ``stick_pull`` (C,), ``tyre_stick_pull`` (T,): what the stick springs pull with (slipping where more than
    the Coulomb limit); ``tyre_stiffness`` (T, 9, 9) d tyre force / d (centre, spin axis, friction point),
    ``tyre_points`` (T, 3) the tyres' contact points and ``tyre_point_jacobian`` (T, 3, 6) their derivative in
    (centre, spin axis) (the core's, src/ground.c)."""

    field: object
    points: np.ndarray
    forces: np.ndarray
    stiffness: np.ndarray
    normal_force: np.ndarray
    penetration: np.ndarray
    touching: np.ndarray
    slipping: np.ndarray
    point_jacobian: np.ndarray
    tyre_force: np.ndarray
    compression: np.ndarray
    tyre_touching: np.ndarray
    tyre_slipping: np.ndarray
    tyre_jacobians: np.ndarray
    stick_pull: np.ndarray
    tyre_stick_pull: np.ndarray
    tyre_stiffness: np.ndarray
    tyre_points: np.ndarray
    tyre_point_jacobian: np.ndarray

    def carried(self) -> tuple[np.ndarray, np.ndarray]:
        """What the ground carries as point forces (C + T, 3) each, world axes, contacts then tyres: the points and
        forces of :meth:`shiftsim.ground.tyres.OnGround.evaluate` (a tyre's at its contact point: the force on its
        centre and friction point)."""
        return (np.concatenate([self.points, self.tyre_points]),
                np.concatenate([self.forces, self.tyre_force[:, :3] + self.tyre_force[:, 6:]]))


def _stick_pull(part, points: np.ndarray) -> np.ndarray:
    """|k_t P (p - a)| (n,): what each stick spring of ``part`` (contacts or tyres) pulls with at world points
    ``points`` (n, 3), saturated or not."""
    pulled = np.einsum("nij,nj->ni", part.projector, points - part.anchors)
    return part.tangential * np.linalg.norm(pulled, axis=1)


def evaluate(field, model: Model, s: State) -> GroundState:
    """The field at the configuration of ``s`` (batch of one) by the compiled core, with each contact's normal force
    and the Jacobians of the points the forces act at."""
    contacts, tyres = parts(field)
    n_c = 0 if contacts is None else len(contacts.contacts)
    n_t = 0 if tyres is None else len(tyres.tyres)
    g = core_ground.points(field.core_field(model.n_nodes), n_c, n_t, s.rotation, s.position)
    rotation = (contacts or tyres).rotation
    nq = model.nq
    jac = np.zeros((n_c, nq, 3))
    normal_force, pen = np.zeros(n_c), np.zeros(n_c)
    if n_c:
        jac = _points_jacobian(model, s, contacts.nodes, contacts.model_points(s)[0]) @ rotation.T
        points = g.contact_point[0]
        heights, gradient, _ = contacts.ground.height(points[:, :2])
        pen = heights - points[:, 2]
        # the normal part k_n pen (-h_x, -h_y, 1) (src/ground.c)
        normal_force = contacts.normal * np.maximum(pen, 0.0) * np.sqrt(1.0 + np.sum(gradient ** 2, axis=1))
    tyre_jac, tyre_pull = np.zeros((n_t, 3, nq, 3)), np.zeros(n_t)
    if n_t:
        centre, axis, friction_point = tyres._vectors(s)
        tyre_pull = _stick_pull(tyres, friction_point[0] @ rotation.T + tyres.translation)
        moves = model.subtree[model.coordinate_node][:, tyres.nodes].T  # (T, nq): coordinate k moves tyre i
        tyre_jac[:, 0] = _points_jacobian(model, s, tyres.nodes, centre[0]) @ rotation.T
        tyre_jac[:, 1] = (np.cross(s.omega[0][None], axis[0][:, None]) * moves[..., None]) @ rotation.T
        tyre_jac[:, 2] = _points_jacobian(model, s, tyres.nodes, friction_point[0]) @ rotation.T
    return GroundState(field, g.contact_point[0], g.contact_force[0], g.contact_stiffness[0], normal_force,
                       pen, g.contact_touching[0], g.contact_slipping[0], jac, g.tyre_force[0],
                       g.tyre_compression[0], g.tyre_touching[0], g.tyre_slipping[0], tyre_jac,
                       _stick_pull(contacts, g.contact_point[0]) if n_c else np.zeros(0), tyre_pull,
                       g.tyre_stiffness[0], g.tyre_point[0], g.tyre_point_jacobian[0])


def _points_jacobian(model: Model, s: State, nodes: np.ndarray, points: np.ndarray) -> np.ndarray:
    """d(point)/dq (n, nq, 3) of model-frame points (n, 3) fixed to ``nodes`` (n,) at the state ``s`` (batch of one):
    omega_k x p + v_k where coordinate k moves the node (:func:`shiftsim.kinematics.point_jacobian`, all at once)."""
    moves = model.subtree[model.coordinate_node][:, nodes].T  # (n, nq)
    return (np.cross(s.omega[0][None], points[:, None]) + s.v[0][None]) * moves[..., None]


_ROWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Per ground field, its :func:`parameter_rows` by model size and parameter names (made once, as the model's own
parameters' core rows are)."""


def parameter_rows(field, model: Model, parameters: list[Parameter]) -> core_ground.ParameterRows:
    """The ground parameters among ``parameters`` as the compiled core takes them (src/partials.c, src/ground.c): what
    each scales in which contacts' and tyres' laws; a normal (radial) stiffness carries the stick stiffness with it
    where the ground gives none (the stick stiffness follows it, :meth:`shiftsim.ground.stand.Stand.build`). Made
    once per field, model size and parameter names."""
    known = _ROWS.setdefault(field, {})
    key = (model.n_nodes, tuple(p.name for p in parameters))
    if key not in known:
        known[key] = _parameter_rows(field, model, parameters)
    return known[key]


def _parameter_rows(field, model: Model, parameters: list[Parameter]) -> core_ground.ParameterRows:
    contacts, tyres = parts(field)
    follows = (contacts or tyres).ground.tangential_stiffness is None
    scaled = []
    for p in parameters:
        if p.kind not in PARAMETER_KINDS:
            scaled.append(None)
            continue
        what, on_contacts, on_tyres = p.component
        scaled.append(("stiffness_and_stick" if what == "stiffness" and follows else what, on_contacts, on_tyres))
    n_contacts, n_tyres = (0 if part is None else len(part.names) for part in (contacts, tyres))
    return core_ground.parameter_rows(field.core_field(model.n_nodes), n_contacts, n_tyres, scaled)


def equilibrium_partials(eq, parameters: list[Parameter]) -> tuple[np.ndarray, np.ndarray, tuple | None]:
    """dQ/dp (nq, P) and dg/dp (6 n_closures, P) at the equilibrium ``eq`` (:class:`.implicit.Equilibrium`) for
    ``parameters`` (:func:`.parameters.force_partials`), configuration and multipliers fixed, the columns of its
    ground field's parameters included, and the world forces' partials d(contact forces)/dp (C, 3, P) and d(tyre
    forces on centre, spin axis and friction point)/dp (T, 9, P) (None for a machine fixed to the world): all from
    one call of the compiled core."""
    ground = None if eq.ground is None else parameter_rows(eq.ground, eq.model, parameters)
    force, closure, *world = force_partials(eq.model, eq.state, eq.gravity, eq.loads, eq.closure_multipliers,
                                            parameters, ground)
    return force, closure, (tuple(world) if world else None)


def knot_reasons(gs: GroundState) -> list[str]:
    """Why the equilibrium has only one-sided derivatives: a contact or tyre at its lift-off knot (pressed in by
    less than :data:`KNOT` of the deepest), a contact at its friction limit."""
    contacts, tyres = parts(gs.field)
    out = []
    depth = max(float(np.max(np.abs(gs.penetration), initial=0.0)), float(np.max(np.abs(gs.compression), initial=0.0)))
    for names, pressed in ((contacts.names if contacts is not None else [], gs.penetration),
                           (tyres.names if tyres is not None else [], gs.compression)):
        for name, x in zip(names, pressed):
            if abs(x) <= KNOT * depth:
                out.append(f"not differentiable: {name!r} is just lifting off the ground (pressed in by {x:.3g} m, "
                           "the knot of its compression-only law)")
    # the stick spring's pull against the Coulomb limit mu N (N = k_n pen s = |normal part| for a contact, k e
    # for a tyre)
    limits = [(name, gs.stick_pull[i], contacts.ground.friction * gs.normal_force[i])
              for i, name in enumerate(contacts.names if contacts is not None else []) if gs.touching[i]]
    limits += [(name, gs.tyre_stick_pull[t], tyres.mu[t] * tyres.stiffness[t] * gs.compression[t])
               for t, name in enumerate(tyres.names if tyres is not None else []) if gs.tyre_touching[t]]
    for name, pull, limit in limits:
        if limit > 0.0 and abs(pull - limit) <= KNOT * limit:
            out.append(f"not differentiable: {name!r} is at its friction limit (stick turns to slip there)")
    return out


# ---------------------------------------------------------------------- outputs
def output_value(gs: GroundState, o: GroundOutput) -> float:
    if o.kind == "reaction":
        return float(gs.carried()[1][o.target, o.component])
    if o.kind == "cop":
        return float(_cop(*gs.carried())[0][o.component])
    return float(_margin(gs, o)[0])


def point_partials(gs: GroundState, model: Model, s: State, parameters: list[Parameter]) -> np.ndarray:
    """d(carried points)/dp (C + T, 3, P), world axes, at a fixed configuration (``s``, batch of one): a frame
    parameter whose move carries a contact or a tyre translates the contact's point (a contact standing at the
    frame itself by one more), and a tyre's centre (its contact point follows through d point / d centre);
    :meth:`GroundState.carried`'s order."""
    contacts, tyres = parts(gs.field)
    rotation = (contacts or tyres).rotation  # world <- model
    out = []
    if contacts is not None:
        moved = point_shifts(model, s, parameters, contacts.nodes, contacts.frames)
        out.append(np.einsum("ij,cjp->cip", rotation, moved))
    if tyres is not None:
        centre = np.einsum("ij,tjp->tip", rotation, point_shifts(model, s, parameters, tyres.nodes))
        out.append(np.einsum("tij,tjp->tip", gs.tyre_point_jacobian[:, :, :3], centre))
    return np.concatenate(out)


def linearization(gs: GroundState, outputs: list[GroundOutput], free: np.ndarray, n_multipliers: int,
                  world_partials: tuple[np.ndarray, np.ndarray], point_p: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """C (Y, nf + m) = dy/d(u, lambda), D (Y, P) explicit, and per output a reason it has none, for the ground
    outputs (see :func:`shiftsim.sensitivity.outputs.linearization`); ``world_partials`` the contact and tyre forces'
    partials in the P parameters (:func:`equilibrium_partials`), ``point_p`` their points' (:func:`point_partials`)."""
    nf = len(free)
    d_point, d_force, d_force_p = _carried_derivatives(gs, free, *world_partials)
    c, d = np.zeros((len(outputs), nf + n_multipliers)), np.zeros((len(outputs), d_force_p.shape[-1]))
    reasons: list[str | None] = [None] * len(outputs)
    for i, o in enumerate(outputs):
        if o.kind == "reaction":
            c[i, :nf], d[i] = d_force[o.target, o.component], d_force_p[o.target, o.component]
            continue
        if o.kind == "cop":
            _, g_point, g_force = _cop(*gs.carried(), True)
            g_point, g_force = g_point[o.component], g_force[o.component]
        else:
            value, g_point, g_force, why = _margin(gs, o, gradient=True)
            if why:
                reasons[i] = why
                continue
        c[i, :nf] = np.einsum("ci,cik->k", g_point, d_point) + np.einsum("ci,cik->k", g_force, d_force)
        d[i] = np.einsum("ci,cij->j", g_force, d_force_p) + np.einsum("ci,cij->j", g_point, point_p)
    return c, d, reasons


def _carried_derivatives(gs: GroundState, free: np.ndarray, contact_p: np.ndarray, tyre_p: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of what the ground carries (:meth:`GroundState.carried`, contacts then tyres): d point / du and d force / du
    (C + T, 3, nf), d force / dp (C + T, 3, P) from the contact and tyre forces' partials ``contact_p`` (C, 3, P) and
    ``tyre_p`` (T, 9, P). A contact's force moves with its point (its stiffness); a tyre's with its centre, spin axis
    and friction point (the tyre law's stiffness) and its contact point with its centre and axis."""
    d_point = np.transpose(gs.point_jacobian[:, free], (0, 2, 1))
    d_force = np.einsum("cij,cjk->cik", gs.stiffness, d_point)
    # each tyre's vectors (centre, axis, friction point) per free coordinate: (T, 9, nf)
    vectors = np.transpose(gs.tyre_jacobians[:, :, free], (0, 1, 3, 2)).reshape(len(gs.tyre_force), 9, len(free))
    reaction = gs.tyre_stiffness[:, :3] + gs.tyre_stiffness[:, 6:]  # (T, 3, 9): the centre's and friction point's
    tyre_point = np.einsum("tij,tjk->tik", gs.tyre_point_jacobian, vectors[:, :6])
    tyre_force = np.einsum("tij,tjk->tik", reaction, vectors)
    return (np.concatenate([d_point, tyre_point]), np.concatenate([d_force, tyre_force]),
            np.concatenate([contact_p, tyre_p[:, :3] + tyre_p[:, 6:]]))


def _loaded(forces: np.ndarray) -> np.ndarray:
    total = forces[:, 2].sum()
    return forces[:, 2] > 1e-6 * max(abs(total), 1e-300)  # as shiftsim.ground.footprint


def _cop(points: np.ndarray, forces: np.ndarray, gradient: bool = False):
    """The centre of pressure (3,) (as :func:`shiftsim.ground.footprint.footprint`) and, with ``gradient``, the
    gradients of its x and y with respect to the points and the forces ((2, C, 3) each)."""
    loaded = _loaded(forces)
    w = np.where(loaded, forces[:, 2], 0.0)
    level = float(w @ points[:, 2] / w.sum())
    total = forces.sum(axis=0)
    moment = np.cross(points, forces).sum(axis=0)
    cop = np.array([(level * total[0] - moment[1]) / total[2], (moment[0] + level * total[1]) / total[2], level])
    if not gradient:
        return cop, None, None
    g_point, g_force = np.zeros((2, *points.shape)), np.zeros((2, *forces.shape))
    # level = sum w z / sum w over the loaded contacts
    d_level_z = np.where(loaded, w / w.sum(), 0.0)
    d_level_fz = np.where(loaded, (points[:, 2] - level) / w.sum(), 0.0)
    # x = (level F_x - M_y) / F_z, y = (M_x + level F_y) / F_z with M = sum p x f:
    # dM_x = y df_z - z df_y + f_z dy - f_y dz; dM_y = z df_x - x df_z + f_x dz - f_z dx
    for axis in (0, 1):
        g_point[axis, :, 2] = total[axis] * d_level_z - forces[:, axis]
        g_point[axis, :, axis] = forces[:, 2]
        g_force[axis, :, 2] = total[axis] * d_level_fz + points[:, axis]
        g_force[axis, :, axis] = level - points[:, 2]
        g_force[axis, :, 2] -= cop[axis]  # the quotient's d/dF_z (after dividing by F_z below)
    return cop, g_point / total[2], g_force / total[2]


def _margin(gs: GroundState, o: GroundOutput, gradient: bool = False):
    """The margin output's value and, with ``gradient``, its gradient with respect to the contact points and
    forces (C, 3) each, and why it has none (None where it has one). The margin about a line through contacts
    a and b is the signed distance cross(b - a, c - a) / |b - a| of the centre of pressure c (positive on the
    left of a -> b: inside a counter-clockwise polygon)."""
    points, forces = gs.carried()
    if o.target >= 0:
        a, b = o.target, o.component
        why = None
    else:
        fp = footprint(points, forces)
        a, b = fp.edge
        why = _nearest_edge_reason(fp, points)
        if not gradient:
            return fp.margin, None, None, why
        if why:
            return fp.margin, None, None, why
    cop, g_cop_point, g_cop_force = _cop(points, forces, gradient)
    e = points[b, :2] - points[a, :2]
    r = cop[:2] - points[a, :2]
    length = float(np.linalg.norm(e))
    value = (e[0] * r[1] - e[1] * r[0]) / length
    if not gradient:
        return value, None, None, why
    # d value = (de x r + e x dr) / L - value (e . de) / L^2, de = d p_b - d p_a, dr = dc - d p_a
    d_c = np.array([-e[1], e[0]]) / length  # d value / d c (x, y)
    d_e = np.array([r[1], -r[0]]) / length - value * e / length ** 2
    g_point = np.einsum("a,aij->ij", d_c, g_cop_point)
    g_force = np.einsum("a,aij->ij", d_c, g_cop_force)
    g_point[b, :2] += d_e
    g_point[a, :2] -= d_e + d_c
    return value, g_point, g_force, why


def _nearest_edge_reason(fp, points: np.ndarray) -> str | None:
    """Why the nearest-edge margin has no derivative: the centre of pressure outside its support polygon (the
    distance is to a corner or a segment), or as near two edges (a kink)."""
    if len(fp.polygon) < 3 or fp.margin <= 0.0:
        return "not differentiable: the centre of pressure is not inside a support polygon of three or more contacts"
    xy, ring, cop = points[:, :2], fp.polygon, fp.centre_of_pressure[:2]
    distances = []
    for a, b in zip(ring, ring[1:] + ring[:1]):
        e = xy[b] - xy[a]
        distances.append((e[0] * (cop - xy[a])[1] - e[1] * (cop - xy[a])[0]) / np.linalg.norm(e))
    distances.sort()
    if distances[1] - distances[0] <= KNOT * max(abs(distances[0]), 1e-300):
        return "not differentiable: the centre of pressure is as near two edges of the support polygon (a kink)"
    return None
