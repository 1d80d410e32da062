"""Machines of a scenario standing on the ground: the ``ground`` section, ``contacts``, and what each step reports.

A machine entry with ``contacts``, or with tyres (Shift ``force_modules`` of type
``tire``, :mod:`shiftsim.ground.tyres`) in a scenario with a ``ground``, is not
welded to the world: its model gets a free base (:func:`shiftsim.ground.base.floating`) held only by its contacts
against the scenario's ``ground`` (a level plane at ``height``, or a ``grid``).
Its start is settled onto the ground (:meth:`shiftsim.ground.stand.Stand.settle`).
At each step the tangential springs are anchored where the contacts stand in the
machine's start with the step's joint values (:func:`step_anchor`): where the
machine stood at the start, unless the step's joints move the contacts
themselves (an MFK machine turning its tracks). Every solved step reports, per standing machine, world axes:
``contact_forces`` (N, per contact), ``contact_points`` (m, where each contact is), ``ground_reaction`` (``force`` N,
``moment`` N m about the world origin), ``centre_of_pressure`` (m),
``support_polygon`` (the loaded contacts on the hull, counter-clockwise from
above), ``tipping_margin`` (m, negative outside; null when nothing presses on the
ground) and ``tipping_edge``, and ``impossible``: why the equilibrium cannot be (a contact sunk
too deep, a tyre bottomed, the base body below the ground; docs/ground.md), which fails the step. Contacts are named as frames in the scenario
(``ex1:lower:carbody:track_fl``; a box corner ``ex1:body:shape:corner0`` … ``corner3``); a tyre by its
force module's name (``car1:tyre_fl``), after the contacts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import statics as st
from ..errors import Problems, SolveError, suggest
from ..ground.base import BASE_COORDINATES, base_coordinates, contact_points, floating, is_floating, lift_coordinates
from ..ground.footprint import footprint
from ..ground.stand import GroundField, Stand
from ..ground.terrain import DEFAULT_FRICTION, Ground
from ..ground.tyres import read_tyres, tyre_modules
from ..ground.validity import Limits, violations
from ..kinematics import assemble, state
from ..model import Model
from .machines import Machine
from .placement import Placement


@dataclass(frozen=True)
class Support:
    """How a machine stands: its contact entries (as written), the ground, and the start its springs anchor to."""

    entries: tuple[Any, ...]
    ground: Ground
    gravity: float
    q_anchor: np.ndarray
    tyred: bool = False  # the machine stands on tyres: each step starts from the settled start (see step_start)
    tyre_parameters: dict[str, Any] | None = None  # the machine entry's ``tyres`` (read_tyres' ``given``)
    limits: Limits = Limits()  # what makes an equilibrium impossible (ground.sink_limit, ground.tyre_compression_limit)

    def stand(self, model: Model, machine: Machine, placement: Placement | None = None) -> Stand:
        """The stand of a floating ``model`` of the machine (contacts resolved on it) at ``placement``
        (default the machine's; a swept MFK placement value moves it)."""
        problems = Problems(str(machine.source))
        points = contact_points(model, list(self.entries), f"{machine.where}.contacts", problems)
        problems.raise_if_any()
        placement = placement or machine.placement
        return Stand.build(model, points, self.ground, placement.rotation, placement.position, self.gravity,
                           tuple(read_tyres(model, self.tyre_parameters, f"{machine.where}.tyres")))

    def field(self, model: Model, machine: Machine, placement: Placement | None = None,
              q_anchor: np.ndarray | None = None) -> GroundField:
        """The contacts (and tyres) as a force field on ``model`` at ``placement``, their tangential springs
        anchored where they stand at ``q_anchor`` (default the machine's start). The stand is made once per
        model and placement."""
        return self.stand_of(model, machine, placement).field(self.q_anchor if q_anchor is None else q_anchor)

    def stand_of(self, model: Model, machine: Machine, placement: Placement | None = None) -> Stand:
        """:meth:`stand`, made once per model and placement."""
        placement = placement or machine.placement
        cache = model.cache.setdefault("support_stands", {})
        key = placement.matrix.tobytes()
        if key not in cache:
            cache[key] = self.stand(model, machine, placement)
        return cache[key]


def step_anchor(model: Model, q: np.ndarray, values: dict[str, Any]) -> np.ndarray:
    """Where a step's tangential springs are anchored: the machine's start ``q`` (nq,) with the step's
    prescribed joint ``values`` (name -> value) in place."""
    q = np.array(q, float)
    for name, value in values.items():
        q[list(model.coordinates_of(name))] = value
    return q


def step_start(machine: Machine, model: Model, previous: np.ndarray, anchor: np.ndarray,
               set_values: dict[str, Any]) -> np.ndarray:
    """Where a step of a standing machine starts (nq,): the step's joint ``set_values`` in place, the base where
    the machine was settled (``anchor``: its settled start with the step's joint values), the loops closed from
    the ``previous`` equilibrium by moving the passive joints only (:func:`closed_start`) -- the start of the
    capacity search's lift points (:func:`shiftsim.scenario.capacity_analysis.lift_points`). Closing the loops by
    also moving the base and the oil columns (as a welded machine's step does) stretches a stiff oil column by
    the stroke change and lifts the machine off its contacts; Newton then fails from there ("no equilibrium
    after 85 iterations" at 1 t on the shipped excavator chart). A machine on tyres starts from its settled
    start rather than its previous equilibrium: from a loaded, pitched, sprung equilibrium the unloaded
    reference throws some wheels clear of the ground, where the free base has no stiffness. Where the loops
    cannot close that way, the previous equilibrium (the anchor for tyres), for the solver to assemble."""
    fallback = anchor if machine.support is not None and machine.support.tyred else previous
    q, held = st.resolve_prescribed(model, set_values, [])
    guess = np.array(fallback, float)
    guess[held] = q[held]
    base = base_coordinates(model)
    guess[base] = anchor[base]
    try:
        return closed_start(model, guess, held, fallback)
    except SolveError:
        return fallback


def closed_start(model: Model, q: np.ndarray, held: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """``q`` (nq,) with its loops closed by moving the passive joints only, from ``previous`` (nq,): the held
    coordinates, the base (the loops do not reach it) and the sprung coordinates (oil columns) travel to their
    values in ``q`` and stay there, so no spring starts stretched (closing a loop by stretching a stiff spring
    would make a lift point the geometry cannot reach, and a start far from equilibrium). SolveError when the
    loops cannot close."""
    sprung = [*model.joint_springs.coordinates.tolist(), *(r.coordinate for r in model.joint_restraints)]
    kept = sorted({*np.asarray(held, int).tolist(), *base_coordinates(model), *sprung})
    return assemble(model, q, held=kept, start=previous).q


def floating_model(model: Model) -> Model:
    """``model`` on a free base (itself when it already has one)."""
    return model if is_floating(model) else floating(model)


def read_limits(document: dict[str, Any]) -> Limits:
    """The scenario's (schema-checked) ``ground.sink_limit`` and ``ground.tyre_compression_limit``, defaults
    :class:`~shiftsim.ground.validity.Limits`'."""
    entry, defaults = document.get("ground", {}), Limits()
    return Limits(float(entry.get("sink_limit", defaults.sink)),
                  float(entry.get("tyre_compression_limit", defaults.tyre_compression)))


def read_ground(document: dict[str, Any]) -> Ground:
    """The scenario's (schema-checked) ``ground`` section; absent: a level plane at z = 0."""
    entry = document.get("ground", {})
    grid = entry.get("grid")
    if grid is not None:
        grid = (np.asarray(grid["x"], float), np.asarray(grid["y"], float), np.asarray(grid["z"], float))
    return Ground(float(entry.get("height", 0.0)), grid, entry.get("stiffness"), entry.get("tangential_stiffness"),
                  float(entry.get("friction", DEFAULT_FRICTION)))


def _check_grid(document: dict[str, Any], problems: Problems) -> None:
    grid = document.get("ground", {}).get("grid")
    if grid is None:
        return
    for axis in ("x", "y"):
        values = np.asarray(grid[axis], float)
        if np.any(np.diff(values) <= 0.0):
            problems.add(f"ground.grid.{axis}", f"{axis} values do not increase strictly", f"strictly increasing {axis} (m)")
    shape = (len(grid["x"]), len(grid["y"]))
    rows = grid["z"]
    if len(rows) != shape[0] or any(len(row) != shape[1] for row in rows):
        problems.add("ground.grid.z", f"{len(rows)} rows of {sorted({len(r) for r in rows})} values",
                     f"{shape[0]} rows (one per x) of {shape[1]} values (one per y)")


def stands_on_ground(entry: dict[str, Any], model: Model, document: dict[str, Any]) -> bool:
    """Whether the machine of scenario entry ``entry`` (compiled ``model``) stands on the ground: it has
    ``contacts``, or tyres in a scenario with a ``ground``. Such a machine is loaded on a free base from the start,
    so that its base joints (``ID:base.z``) can be held, swept and tracked."""
    return "contacts" in entry or ("ground" in document and bool(tyre_modules(model)))


def stand_machines(document: dict[str, Any], machines: list[Machine], gravity: np.ndarray,
                   problems: Problems) -> list[Machine]:
    """The machines, those with ``contacts`` or tyres on a free base, settled on the ground, with their
    :class:`Support`."""
    _check_grid(document, problems)
    _check_tyre_entries(document, machines, problems)
    standing = {m.id for m in machines if stands_on_ground(document["machines"][_index(m)], m.model, document)}
    if problems.items or not standing:
        return machines
    ground = read_ground(document)
    out = []
    for machine in machines:
        entry = document["machines"][_index(machine)]
        if machine.id not in standing:
            out.append(machine)
            continue
        model = floating_model(machine.model)
        if _upside_down(machine, gravity, problems):
            continue
        before = len(problems.items)
        points = contact_points(model, entry.get("contacts", []), f"{machine.where}.contacts", problems)
        if len(problems.items) > before:
            continue
        g = float(np.linalg.norm(gravity))
        if points and not ground.stiffness and not model.total_mass * g > 0.0:
            problems.add("ground", f"machine {machine.id!r} stands on contacts but weighs nothing ({model.total_mass:g} "
                         f"kg at gravity {g:g} m/s^2), and the default contact stiffness comes from its weight",
                         "a 'stiffness' (N/m per contact) in 'ground' for a weightless machine")
            continue
        tyres = read_tyres(model, entry.get("tyres"), f"{machine.where}.tyres")
        stand = Stand.build(model, points, ground, machine.placement.rotation, machine.placement.position, g,
                            tuple(tyres))
        lifted = lift_coordinates(machine.model, model, machine.q_start)
        q = stand.settle(lifted, g)
        given = [c for name in entry.get("joints", {}) if name in BASE_COORDINATES for c in model.coordinates_of(name)]
        q[given] = lifted[given]  # a base joint the scenario gives a value keeps it (ID:base.z held at a height)
        support = Support(tuple(entry.get("contacts", [])), ground, g, q, bool(stand.tyres), entry.get("tyres"),
                          read_limits(document))
        out.append(replace(machine, model=model, q_start=q, support=support))
    return out


def _upside_down(machine: Machine, gravity: np.ndarray, problems: Problems) -> bool:
    """A machine whose own gravity, placed in the world, points up (a z-down model, gravity +z as in Shift's SAE
    frame, placed without a rotation) would stand on its roof: a problem naming the placement to give."""
    own = machine.placement.vector_to_world(machine.model.gravity)
    if not own @ np.asarray(gravity, float) < 0.0:
        return False
    up = np.round(own / np.linalg.norm(own), 3).tolist()
    problems.add(f"{machine.where}.placement", f"machine {machine.id!r} stands on the ground, but its model's own gravity "
                 f"points along {up} in the world after placement, against the world's: it would stand on its roof",
                 "a placement rotation that turns the model's down to the world's: {\"rotation\": {\"roll\": 180}} "
                 "for a z-down model (gravity +z in its file, as the public Shift vehicles) on a z-up site")
    return True


def _check_tyre_entries(document: dict[str, Any], machines: list[Machine], problems: Problems) -> None:
    """A machine entry's ``tyres`` applies: the scenario has a ``ground``, the model has tyres, and each name in
    ``each`` is one of them."""
    for machine in machines:
        given = document["machines"][_index(machine)].get("tyres")
        if given is None:
            continue
        where = f"{machine.where}.tyres"
        names = [module.get("name") for _, module in tyre_modules(machine.model)]
        if not names:
            problems.add(where, f"machine {machine.id!r} has no tyres (Shift 'tire' force modules)",
                         "'tyres' only for a machine whose model file declares tyres")
        elif "ground" not in document:
            problems.add(where, "the scenario has no 'ground' for the tyres to stand on", "a 'ground' section")
        for name in given.get("each", {}):
            if names and name not in names:
                problems.add(f"{where}.each.{name}", f"machine {machine.id!r} has no tyre {name!r}",
                             suggest(name, [n for n in names if isinstance(n, str)]))


def _index(machine: Machine) -> int:
    return int(machine.where.split("[")[1].rstrip("]"))


def step_report(machine: Machine, model: Model, q: np.ndarray, field: GroundField,
                placement: Placement | None = None) -> dict[str, Any]:
    """What the ground carries (through ``field``) at coordinates ``q`` (nq,) of a standing machine (see the
    module docstring), and ``impossible``: why the equilibrium cannot be (:mod:`shiftsim.ground.validity`;
    empty: it can; the runner fails such a step)."""
    stand = machine.support.stand_of(model, machine, placement)
    impossible = [v.message(machine.name) for v in violations(stand, field, np.asarray(q, float)[None],
                                                                machine.support.limits)[0]]
    c = field.evaluate(state(model, np.asarray(q, float)[None]))
    names = [machine.name(n) for n in field.names]
    print_ = footprint(c.points[0], c.forces[0])
    return {
        "contact_forces": {name: c.forces[0, i].tolist() for i, name in enumerate(names)},
        "contact_points": {name: c.points[0, i].tolist() for i, name in enumerate(names)},
        "ground_reaction": {"force": print_.force.tolist(), "moment": print_.moment.tolist()},
        "centre_of_pressure": [finite_or_none(v) for v in print_.centre_of_pressure],
        "support_polygon": [names[i] for i in print_.polygon],
        "tipping_margin": finite_or_none(print_.margin),
        "tipping_edge": [names[i] for i in print_.edge] if print_.edge[0] >= 0 else [],
        "impossible": impossible,
    }



def finite_or_none(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
