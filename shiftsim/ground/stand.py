"""A machine standing on the ground: its free-base model, its contacts, and its equilibria.

:class:`Stand` holds the floating model (:func:`.base.floating`), the contact
points, the ground and the placement of the model frame in the world. Its
solves are the statics solver's (``solve_batch`` with the contacts as a force
field); what a stand adds is the start: the base lowered (along the world
vertical) until the lowest contact is pressed in by the sinkage the machine's
weight would give on all contacts, so every solve starts touching, never in
the air; and seated starts (:meth:`Stand.seat`) for batches of lift points.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field

import numpy as np

from .. import statics as st
from ..forces import AppliedLoad
from ..kinematics import state
from ..model import Model
from ..solution import Solution
from .base import base_coordinates
from .contacts import ContactField, ContactPoint, anchored_at
from .footprint import Footprint, footprint
from .terrain import Ground, default_stiffness
from .tyres import OnGround, Tyre, TyreField, anchored_tyres

GroundField = ContactField | OnGround
"""What holds a standing machine: its contacts, or its contacts and tyres together."""


@dataclass(frozen=True)
class Stand:
    """A floating ``model`` on ``ground`` with ``contacts`` and ``tyres``; ``rotation``/``translation``: world <- model
    frame; ``normal``/``tangential``: stiffness per contact (N/m); ``tyre_tangential``: stick stiffness per tyre."""

    model: Model
    contacts: tuple[ContactPoint, ...]
    ground: Ground
    rotation: np.ndarray
    translation: np.ndarray
    normal: np.ndarray
    tangential: np.ndarray
    tyres: tuple[Tyre, ...] = ()
    tyre_tangential: np.ndarray = dataclass_field(default_factory=lambda: np.zeros(0))

    @classmethod
    def build(cls, model: Model, contacts: list[ContactPoint], ground: Ground, rotation: np.ndarray,
              translation: np.ndarray, gravity: float = 9.81, tyres: tuple[Tyre, ...] = ()) -> Stand:
        """A stand with the ground's stiffness, or the default one from the machine's weight; tyres have their own
        radial stiffness, and stick with the ground's tangential stiffness or else their radial one."""
        n = len(contacts)
        if n and not ground.stiffness and not model.total_mass * gravity > 0.0:
            raise ValueError(f"a weightless machine ({model.total_mass:g} kg at gravity {gravity:g} m/s^2) on contacts "
                             "needs the ground's stiffness: the default one comes from the weight")
        normal = ground.stiffness or (default_stiffness(model.total_mass * gravity, n) if n else 0.0)
        tangential = ground.tangential_stiffness or normal
        tyre_tangential = np.array([ground.tangential_stiffness or t.stiffness for t in tyres], float)
        return cls(model, tuple(contacts), ground, np.asarray(rotation, float), np.asarray(translation, float),
                   np.full(n, float(normal)), np.full(n, float(tangential)), tuple(tyres), tyre_tangential)

    @property
    def base(self) -> list[int]:
        return base_coordinates(self.model)

    def field(self, q_anchor: np.ndarray) -> GroundField:
        """The contacts (and tyres) with their tangential springs anchored where they stand at ``q_anchor`` (nq,)."""
        contacts = anchored_at(list(self.contacts), self.model, q_anchor, self.ground, self.rotation,
                               self.translation, self.normal, self.tangential)
        if not self.tyres:
            return contacts
        return OnGround(contacts, self._tyre_field(q_anchor))

    def _tyre_field(self, q_anchor: np.ndarray) -> TyreField:
        return anchored_tyres(list(self.tyres), self.model, q_anchor, self.ground, self.rotation, self.translation,
                              self.tyre_tangential)

    def settle(self, q: np.ndarray, gravity: float = 9.81) -> np.ndarray:
        """``q`` (nq,) with the base moved along the world vertical so that the most pressed-in contact or tyre is
        pressed in by ``weight / (sum of the contacts' and tyres' normal stiffness)``."""
        s = state(self.model, np.asarray(q, float)[None])
        contacts = anchored_at(list(self.contacts), self.model, q, self.ground, self.rotation, self.translation,
                               self.normal, self.tangential)
        points = contacts.world_points(s)[0]
        heights, _, _ = self.ground.height(points[:, :2])
        pressed = [heights - points[:, 2]]
        stiffness = float(np.sum(self.normal))
        if self.tyres:
            pressed.append(self._tyre_field(q).tyre_state(s).compression[0])
            stiffness += sum(t.stiffness for t in self.tyres)
        sinkage = self.model.total_mass * gravity / stiffness
        drop = sinkage - float(np.max(np.concatenate(pressed)))
        q = np.array(q, float)
        q[self.base[:3]] += self.rotation.T @ np.array([0.0, 0.0, -drop])
        return q

    def seat(self, q_start: np.ndarray, free: np.ndarray, gravity: np.ndarray, loads: list[AppliedLoad],
             options: st.SolverOptions = st.SolverOptions()) -> np.ndarray:
        """Starts (B, nq) for standing solves: the machine's own equilibrium with its base held where ``q_start``
        (B, nq) puts it (a start whose loops were closed by moving springs anywhere holds huge spring forces;
        a first Newton step from there throws the machine off its contacts). Cases that fail keep their start."""
        held = np.array([i for i in free if i not in self.base], dtype=int)
        result = solve_grouped(self.model, q_start, held, gravity, loads, options)
        return np.where(result.converged[:, None], result.q, q_start)

    def solve(self, q_start: np.ndarray, free: np.ndarray, gravity: np.ndarray, loads: list[AppliedLoad],
              rates: np.ndarray | None = None, options: st.SolverOptions = st.SolverOptions(),
              q_anchor: np.ndarray | None = None) -> tuple[Solution, GroundField]:
        """One equilibrium from ``q_start`` (nq,) with the contacts anchored where they stand at ``q_anchor``
        (default: the start), and its reference as :func:`shiftsim.statics.solve` makes it (gravity and loads
        off, contacts on, from the same start). ``gravity`` (3,) model frame."""
        q_start = np.asarray(q_start, float)
        field = self.field(q_start if q_anchor is None else q_anchor)
        rows = st.independent_rows(self.model, q_start, free)
        reference = st.solve_batch(self.model, q_start[None], free, np.zeros(3), [], None, options, rows, (field,))
        loaded = st.solve_batch(self.model, q_start[None], free, gravity[None], loads,
                                None if rates is None else np.atleast_2d(rates), options, rows, (field,))
        return Solution.build(self.model, loaded, reference, gravity, loads, q_start, (field,)), field

    def footprints(self, field: GroundField, q: np.ndarray) -> tuple[list[Footprint], np.ndarray, np.ndarray]:
        """Footprints at coordinates ``q`` (B, nq), and the contact points and forces (B, n, 3), world axes."""
        c = field.evaluate(state(self.model, np.atleast_2d(q)))
        return [footprint(p, f) for p, f in zip(c.points, c.forces)], c.points, c.forces


def take(load: AppliedLoad, cases: np.ndarray) -> AppliedLoad:
    """A load restricted to some cases of its batch."""
    return AppliedLoad(load.frame, load.force[cases], load.torque[cases], load.follow)


@dataclass
class Equilibria:
    """What the capacity search needs of a batch of solves: q (B, nq), multipliers (B, 6 n_closures),
    converged and stable (B,) flags."""

    q: np.ndarray
    multipliers: np.ndarray
    converged: np.ndarray
    stable: np.ndarray


def closure_rows(model: Model, q: np.ndarray, free: np.ndarray) -> list[tuple[int, ...]]:
    """Each case's independent closure rows at ``q`` (B, nq) (:func:`shiftsim.statics.independent_rows`)."""
    return [tuple(st.independent_rows(model, row, free).tolist()) for row in q]


def solve_grouped(model: Model, q_start: np.ndarray, free: np.ndarray, gravity: np.ndarray, loads: list[AppliedLoad],
                  options: st.SolverOptions, fields: tuple = (), rows: list[tuple[int, ...]] | None = None) -> Equilibria:
    """``solve_batch`` on cases grouped by their independent closure rows (a planar linkage slewed 90 degrees
    has other redundant rows than unslewed; one set of rows for both makes the closure system singular): ``rows``
    per case (:func:`closure_rows`), default those at the starts. A start predicted off the loops' manifold (a
    path's next step) takes the rows of an equilibrium on the path, where its loops close: off the manifold a
    redundant row looks independent, and its multiplier then absorbs a real residual (a start reported converged
    that is no equilibrium)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for b, case_rows in enumerate(closure_rows(model, q_start, free) if rows is None else rows):
        groups.setdefault(case_rows, []).append(b)
    out = Equilibria(q_start.copy(), np.zeros((q_start.shape[0], 6 * len(model.closures))),
                     np.zeros(q_start.shape[0], dtype=bool), np.zeros(q_start.shape[0], dtype=bool))
    for rows, members in groups.items():
        cases = np.array(members)
        part = st.solve_batch(model, q_start[cases], free, gravity[cases], [take(l, cases) for l in loads], None,
                              options, np.array(rows, dtype=int), fields)
        out.q[cases], out.multipliers[cases] = part.q, part.multipliers
        out.converged[cases], out.stable[cases] = part.converged, part.stable
    return out
