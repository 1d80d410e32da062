"""Sensitivities of a machine standing on its contacts (shiftsim/sensitivity/ground.py) and of a capacity chart's
tipping, hydraulic and rated loads (shiftsim/sensitivity/chart.py), against independent answers:

* Richardson central differences of tight re-solves of the standing machine (the model spec, the ground's
  stiffness and friction edited; the contacts' anchors kept), with the outputs read by the ground footprint code
  (``ContactField.evaluate``, ``footprint``), not by the sensitivity code: every parameter kind and every output
  kind, sticking and slipping;
* forward and adjoint modes agree to 1e-10;
* Richardson differences of whole capacity re-solves (search tolerance 1e-12) of the tipping, hydraulic and rated
  loads;
* the rigid lifter on four pads, standing on very stiff ground: d(tipping load)/d(base mass) = g a / b about its
  tipping edge.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers.ground import OPTIONS, free_of, lift_points, machine, standing
from helpers.sensitivity import edited

from shiftsim.ground.base import floating
from shiftsim.ground.contacts import ContactField
from shiftsim.ground.footprint import footprint
from shiftsim.ground.rating import Cylinder, capacity
from shiftsim.ground.terrain import Ground
from shiftsim.kinematics import state
from shiftsim.model import compile_model
from shiftsim.sensitivity import sensitivity
from shiftsim.sensitivity.chart import Chart, chart_sensitivities
from shiftsim.statics import Load, SolverOptions, solve

# the contact forces' round-off keeps a standing solve from a relative force tolerance of 1e-14
TIGHT = SolverOptions(force_tolerance=1e-12, closure_tolerance=1e-14)
OF = ["reaction", "cop", "margin", "base.x", "base.z", "base.ry"]
WRT = ["box.mass", "upper.com.x", "box:slew_seat.z", "upper:hook.x", "load:upper:hook.fx", "load:upper:hook.factor",
       "gravity.x", "ground.stiffness", "ground.friction", "box:c2.stiffness"]


def stood(sideways: float):
    """The box with its upper body standing on four pads (1e7 N/m, friction 0.3) under 3 kN down and
    ``sideways`` N along x at the hook; the slew held."""
    model = machine(reach=3.0)
    stand, q = standing(model, Ground(stiffness=1e7, friction=0.3))
    field = stand.field(q)
    loads = [Load("upper:hook", force=(sideways, 0.0, -3000.0))]
    solution = solve(stand.model, hold=["slew"], loads=loads, q_start=q, fields=(field,), options=TIGHT)
    assert solution.converged
    return model, field, loads, solution


def footprint_outputs(field: ContactField, model, loads, q_start) -> np.ndarray:
    """The outputs ``OF`` of a tight re-solve, read by the ground's own code."""
    found = solve(model, hold=["slew"], loads=loads, q_start=q_start, fields=(field,), options=TIGHT)
    if not found.converged:  # a tolerance below the round-off of this case: the default one ends a step later
        found = solve(model, hold=["slew"], loads=loads, q_start=q_start, fields=(field,))
    assert found.converged
    c = field.evaluate(state(model, found.q[None]))
    fp = footprint(c.points[0], c.forces[0])
    base = [found.q[model.coordinates_of(name)[0]] for name in ("base.x", "base.z", "base.ry")]
    return np.array([*c.forces[0].ravel(), *fp.centre_of_pressure[:2], fp.margin, *base])


def edited_outputs(model, field: ContactField, loads, q_start, name: str, delta: float) -> np.ndarray:
    normal, tangential, ground = field.normal.copy(), field.tangential.copy(), field.ground
    if name == "ground.stiffness":  # the stick stiffness follows the normal one (the ground gives none)
        normal, tangential = normal + delta, tangential + delta
    elif name == "box:c2.stiffness":
        normal[2], tangential[2] = normal[2] + delta, tangential[2] + delta
    elif name == "ground.friction":
        ground = dataclasses.replace(ground, friction=ground.friction + delta)
    spec, loads = edited(model.spec, loads, name, delta) if not name.startswith(("ground.", "box:c")) else \
        (model.spec, loads)
    moved = ContactField(field.contacts, ground, field.rotation, field.translation, normal, tangential, field.anchors)
    return footprint_outputs(moved, floating(compile_model(spec)), loads, q_start)


STEPS = {"box.mass": 10.0, "upper.com.x": 1e-2, "box:slew_seat.z": 1e-2, "upper:hook.x": 1e-2,
         "load:upper:hook.fx": 10.0, "load:upper:hook.factor": 1e-2, "gravity.x": 1e-2, "ground.stiffness": 1e5,
         "ground.friction": 1e-2, "box:c2.stiffness": 1e5}


@pytest.mark.slow
@pytest.mark.parametrize("sideways", [0.0, 2500.0], ids=["sticking", "rear pads slipping"])
def test_every_ground_parameter_and_output_kind_against_finite_differences(sideways):
    model, field, loads, solution = stood(sideways)
    slipping = field.evaluate(state(field.contacts and solution.model, solution.q[None])).slipping[0]
    assert list(slipping) == ([False] * 4 if sideways == 0.0 else [False, False, True, True])
    result = sensitivity(solution, of=OF, wrt=WRT, hold=["slew"], loads=loads, ground=field)
    assert not any(result.reasons)
    assert result.outputs[:3] == ("box:c0.fx", "box:c0.fy", "box:c0.fz") and result.outputs[12:15] == (
        "cop.x", "cop.y", "margin")
    assert np.allclose(result.values, footprint_outputs(field, solution.model, loads, solution.q), rtol=1e-9,
                       atol=1e-9)
    for j, name in enumerate(result.parameters):
        h = STEPS[name]

        def central(step):
            return (edited_outputs(model, field, loads, solution.q, name, step)
                    - edited_outputs(model, field, loads, solution.q, name, -step)) / (2 * step)

        reference = (4 * central(h / 2) - central(h)) / 3
        # per output kind, relative to the largest change of that kind (a pad's sideways force is round-off
        # small beside its vertical one)
        for kind in (slice(0, 12), slice(12, 15), slice(15, 18)):
            scale = max(float(np.max(np.abs(reference[kind]))), 1e-12)
            assert np.max(np.abs(result.derivative[kind, j] - reference[kind])) <= 1e-6 * scale, (name, kind)
    if sideways:  # the slipping pads' friction moves the forces
        d = dict(zip(result.parameters, result.derivative.T))
        assert np.max(np.abs(d["ground.friction"][:12])) > 100.0


@pytest.mark.parametrize("sideways", [0.0, 2500.0])
def test_forward_and_adjoint_agree_and_contact_groups_add_up_to_the_ground(sideways):
    _, field, loads, solution = stood(sideways)
    forward = sensitivity(solution, of=OF, wrt=["all"], hold=["slew"], loads=loads, ground=field, mode="forward")
    adjoint = sensitivity(solution, of=OF, wrt=["all"], hold=["slew"], loads=loads, ground=field, mode="adjoint")
    assert np.max(np.abs(forward.derivative - adjoint.derivative)) <= 1e-10 * np.max(np.abs(forward.derivative))
    d = dict(zip(forward.parameters, forward.derivative.T))
    for field_name in ("stiffness", "friction"):
        assert np.allclose(sum(d[f"box:c{i}.{field_name}"] for i in range(4)), d[f"ground.{field_name}"],
                           rtol=1e-9, atol=1e-12 * np.max(np.abs(forward.derivative)))
    # the free base's massless links are no design bodies; no frame parameter moves a pad
    assert not any(name.startswith("float_base") for name in forward.parameters)
    assert "box:c0.x" not in forward.parameters


class GroupFriction(ContactField):
    """A contact field whose contacts ``members`` have their own Coulomb coefficient ``friction`` (the core takes
    one per contact; the ground's for the others)."""

    def __init__(self, field: ContactField, members: list[int], friction: float):
        super().__init__(field.contacts, field.ground, field.rotation, field.translation, field.normal,
                         field.tangential, field.anchors)
        self.members, self.friction = members, friction

    def core_arrays(self):
        arrays = super().core_arrays()
        arrays["contact_friction"] = arrays["contact_friction"].copy()
        arrays["contact_friction"][self.members] = self.friction
        return arrays


@pytest.mark.slow
@pytest.mark.parametrize("pad", [0, 2, 3])
def test_one_contact_group_s_friction_against_re_solves_with_only_its_coefficient_moved(pad):
    """The rear pads (c2, c3) slip under the sideways load: each one's own friction moves every output, as
    Richardson differences of re-solves with only that pad's coefficient moved say; a sticking pad's (c0) moves
    nothing."""
    model, field, loads, solution = stood(2500.0)
    name = f"box:c{pad}.friction"
    result = sensitivity(solution, of=OF, wrt=[name], hold=["slew"], loads=loads, ground=field)
    assert not any(result.reasons) and result.parameter_values[0] == field.ground.friction

    def central(step):
        return (footprint_outputs(GroupFriction(field, [pad], field.ground.friction + step), solution.model, loads,
                                  solution.q)
                - footprint_outputs(GroupFriction(field, [pad], field.ground.friction - step), solution.model, loads,
                                    solution.q)) / (2 * step)

    h = 1e-2
    reference = (4 * central(h / 2) - central(h)) / 3
    ours = result.derivative[:, 0]
    if pad == 0:
        assert np.all(ours == 0.0) and np.max(np.abs(reference)) <= 1e-6
        return
    assert np.max(np.abs(ours[:12])) > 100.0  # a slipping pad's friction moves the forces
    for kind in (slice(0, 12), slice(12, 15), slice(15, 18)):
        scale = max(float(np.max(np.abs(reference[kind]))), 1e-12)
        assert np.max(np.abs(ours[kind] - reference[kind])) <= 1e-6 * scale, (kind, ours[kind], reference[kind])


# ---------------------------------------------------------------------- the capacity chart
SLEWS = np.array([0.0, 0.5, 1.0])
GRAVITY = np.array([0.0, 0.0, -9.81])
SEARCH = dataclasses.replace(OPTIONS, tolerance=1e-12, max_solves=120,
                             solver=dataclasses.replace(OPTIONS.solver, force_tolerance=1e-12))


def chart(spec=None, stiffness=1e8, bore=0.05, options=SEARCH):
    """The box with a 100 kg mast 3 m out on its slew, standing on four pads, at three slew angles; its lift
    cylinder (bore ``bore``, rod 0.03 m, 2 MPa) holds the mast; a 1 kN load at the hook."""
    model = machine(reach=3.0, mast=True) if spec is None else compile_model(spec)
    stand, q = standing(model, Ground(stiffness=stiffness))
    free = free_of(stand.model)
    starts, load = lift_points(stand, q, SLEWS, "mast:hook")
    cylinders = (Cylinder("lift", bore, 0.03, 2e6),)
    result = capacity(stand, starts, free, GRAVITY, load, list(cylinders), options)
    return Chart(stand, stand.field(starts[0]), free, GRAVITY, load, (), cylinders, options), result


@pytest.fixture(scope="module")
def charted():
    found, result = chart()
    return result, chart_sensitivities(found, result)


def rerun(name: str, delta: float, stiffness: float = 1e8):
    """The chart re-solved with one parameter moved: (tipping, hydraulic, rated) factors (B,) each. The tipping
    factor is the path's, moved by the gap the sensitivities report to where they take the event (the centre of
    pressure 1e-7 of the edge's length inside it); the rated factor is then the smaller of the rated branches."""
    if name == "ground.stiffness":
        found, result = chart(stiffness=stiffness + delta)
    elif name == "lift.bore":
        found, result = chart(stiffness=stiffness, bore=0.05 + delta)
    else:
        found, result = chart(edited(machine(reach=3.0, mast=True).spec, [], name, delta)[0], stiffness=stiffness)
    gaps = np.array([p.tipping_gap for p in chart_sensitivities(found, result, wrt=["gravity.z"])])
    tipping = result.tipping * (1.0 + gaps)
    return tipping, result.hydraulic, np.minimum(SEARCH.tipping_fraction * tipping,
                                                 SEARCH.hydraulic_fraction * result.hydraulic)


def richardson(name: str, h: float, stiffness: float = 1e8):
    def central(step):
        return [(up - down) / (2 * step) for up, down in zip(rerun(name, step, stiffness),
                                                              rerun(name, -step, stiffness))]

    return [(4 * fine - coarse) / 3 for fine, coarse in zip(central(h / 2), central(h))]


@pytest.mark.slow
@pytest.mark.parametrize("name, h", [("box.mass", 10.0), ("upper.com.x", 1e-2), ("mast:hook.x", 1e-2),
                                     ("mast.mass", 1.0), ("lift.bore", 1e-4)])
def test_tipping_hydraulic_and_rated_loads_against_whole_capacity_re_solves(charted, name, h):
    result, points = charted
    assert result.event == ["lift-off"] * 3 and result.governs == ["hydraulic"] * 3
    # the search stops within 1e-12 of its event: its noise over the step is the floor
    floor = 4e-12 * np.max(result.tipping) / h
    # the hydraulic load does not depend on the slew (the base held): every point has it (the middle slew once
    # landed exactly on the cylinder's limit and was reported as 0 before ground/path.py knew an exact zero)
    assert np.allclose(result.hydraulic, result.hydraulic[0], rtol=1e-9) and result.hydraulic[0] > 0.0
    has = [b for b, p in enumerate(points) if p.hydraulic is not None]
    assert has == [0, 1, 2]
    for branch, reference in zip(("tipping", "hydraulic", "rated"), richardson(name, h)):
        cases = range(3) if branch == "tipping" else has
        ours = np.array([dict(zip(getattr(points[b], branch).parameters,
                                  getattr(points[b], branch).derivative)).get(name, 0.0) for b in cases])
        reference = reference[list(cases)]
        assert np.all(np.abs(ours - reference) <= 1e-6 * np.abs(reference) + floor), (branch, ours, reference)
    for b in has:
        p = points[b]
        assert p.rated.governs == "hydraulic" and not p.rated.near_switch
        assert p.reasons == {"tipping": None, "hydraulic": None, "rated": None}
    assert all(abs(p.tipping_gap) < 1e-5 for p in points)


@pytest.mark.slow
def test_at_the_shipped_tolerance_the_tipping_branch_is_taken_at_the_path_s_last_state(charted, monkeypatch):
    """A search to 1e-6 (the shipped charts') ends within that of the lift-off: the tipping branch is the
    derivative there, without Newton steps to the event (no standing solve), and agrees to 1e-6 with the one of
    the search to 1e-12 (checked against whole re-solves above), which steps back from the lift-off knot."""
    import shiftsim.sensitivity.chart as chart_module

    _, tight = charted
    found, result = chart(options=dataclasses.replace(SEARCH, tolerance=1e-6, max_solves=60))
    assert result.event == ["lift-off"] * 3

    def no_solve(*args, **kwargs):
        raise AssertionError("a standing solve toward the event")

    monkeypatch.setattr(chart_module, "_standing_at", no_solve)
    points = chart_sensitivities(found, result)
    for ours, reference in zip(points, tight):
        assert np.max(np.abs(ours.tipping.derivative - reference.tipping.derivative)) <= 1e-6 * np.max(
            np.abs(reference.tipping.derivative))
        assert ours.tipping.factor == pytest.approx(reference.tipping.factor, rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("stiffness", [1e6, 1e7])
def test_the_ground_stiffness_moves_the_tipping_load_as_re_solved(stiffness):
    """A stiffer ground tilts the machine less toward its load and lifts a little more (on 1e8 N/m pads the
    change is below the search's noise)."""
    found, result = chart(stiffness=stiffness)
    ours = np.array([p.tipping.derivative[0] for p in chart_sensitivities(found, result, wrt=["ground.stiffness"])])
    reference = richardson("ground.stiffness", 0.01 * stiffness, stiffness)[0]
    assert np.all(ours > 0.0)
    assert np.allclose(ours, reference, rtol=1e-6, atol=0.0), (ours, reference)


@pytest.mark.slow
def test_the_rigid_lifter_on_four_pads_tips_as_its_closed_form():
    """On ground 1e9 N/m stiff (the pads sink micrometres), the box tips about its front pads (x = 1 m) at
    lambda* F b = m_box g a + ... so d(tipping load)/d(box mass) = g a / b with a = 1 m (the box's centre of mass
    behind the edge) and b = 2 m (the hook ahead of it); d/d(mast mass) = -g (its weight hangs at the hook).
    (On stiffer ground still the pads off the edge press by less than the positions' round-off near the event:
    the derivative says they are at their knot.)"""
    found, result = chart(stiffness=1e9)
    point = chart_sensitivities(found, result, wrt=["box.mass", "mast.mass"])[0]
    assert result.edge[0] == ("box:c1", "box:c0")
    d = dict(zip(point.tipping.parameters, point.tipping.derivative))
    size = 1000.0
    assert size * d["box.mass"] == pytest.approx(9.81 * 1.0 / 2.0, rel=2e-5)
    assert size * d["mast.mass"] == pytest.approx(-9.81, rel=2e-5)
    assert point.tipping.factor * size == pytest.approx((1200.0 * 9.81 * 1.0 - 100.0 * 9.81 * 2.0) / 2.0, rel=2e-5)


# ---------------------------------------------------------------------- tyres
@pytest.mark.parametrize("shift", [0.0, 0.3], ids=["sticking", "some slipping"])
def test_tyre_and_ground_parameters_move_the_tyre_forces_as_re_evaluated(shift):
    """The car on its tyres on a twisted height grid, pressed in at random coordinates: dQ/dp of every tyre
    parameter, the ground's friction and tangential stiffness against central differences of the compiled core's
    generalized tyre forces with the parameter moved (anchors kept). The laws are linear in each parameter within
    their regime, so the differences are exact but for round-off."""
    from helpers.vehicle import car

    from shiftsim.ground.tyres import TyreField, anchored_tyres, read_tyres
    from shiftsim.sensitivity import ground as ground_terms
    from shiftsim.sensitivity.parameters import force_partials

    model = car()
    grid = (np.array([-5.0, 0.0, 5.0]), np.array([-5.0, 0.0, 5.0]),
            np.array([[0.1, 0.3, -0.2], [0.0, 0.05, 0.2], [0.3, -0.1, 0.4]]))
    ground = Ground(grid=grid, friction=0.6, tangential_stiffness=1e5)
    field = anchored_tyres(read_tyres(model), model, np.zeros(model.nq), ground, np.eye(3), np.zeros(3),
                           np.full(4, 1e5))
    q = np.random.default_rng(1).normal(0.0, 0.05, model.nq)
    q[2] -= 0.3
    q[:2] += shift
    s = state(model, q[None])
    gs = ground_terms.evaluate(field, model, s)
    assert gs.tyre_touching.sum() >= 3 and gs.tyre_slipping.any() == (shift > 0.1)
    parameters = ground_terms.catalogue(field)
    # the tyres have their own friction (0.9 in the file): the ground's moves none of them and is no parameter
    assert [p.name for p in parameters][:4] == ["ground.tangential_stiffness", "tyre_fl.vertical_stiffness",
                                                "tyre_fl.radius", "tyre_fl.friction"]
    partial = force_partials(model, s, model.gravity, (), np.zeros(0), parameters,
                             ground_terms.parameter_rows(field, model, parameters))[0]

    def moved(p, delta):
        tyres, g = list(field.tyres), ground
        tangential = field.tangential.copy()
        what, _, members = p.component
        if p.kind == "ground":
            g = dataclasses.replace(g, **{"tangential": {"tangential_stiffness": g.tangential_stiffness + delta},
                                          "friction": {"friction": g.friction + delta}}[what])
            tangential = tangential + delta if what == "tangential" else tangential
        else:
            t = members[0]
            key = {"stiffness": "stiffness", "radius": "radius", "friction": "friction"}[what]
            tyres[t] = dataclasses.replace(tyres[t], **{key: getattr(field.tyres[t], key) + delta}) \
                if what != "friction" else dataclasses.replace(tyres[t], friction=field.mu[t] + delta)
        other = TyreField(tyres, g, field.rotation, field.translation, tangential, field.friction_points,
                          field.anchors)
        return other.terms(model, s).Q[0]

    for j, p in enumerate(parameters):
        h = 1e-3 * abs(p.value)
        reference = (moved(p, h) - moved(p, -h)) / (2 * h)
        scale = max(float(np.max(np.abs(reference))), float(np.max(np.abs(partial))) * 1e-9)
        assert np.max(np.abs(partial[:, j] - reference)) <= 1e-7 * scale, p.name
    d = dict(zip([p.name for p in parameters], partial.T))
    friction = sum(d[f"tyre_{w}.friction"] for w in ("fl", "fr", "rl", "rr"))
    assert (np.max(np.abs(friction)) > 0.0) == bool(gs.tyre_slipping.any())


def test_a_contact_just_lifting_off_says_so_on_every_output():
    """A fifth contact placed exactly at the ground under the standing box (its compression-only law at its knot):
    every output names it instead of a number; a millimetre higher it is clear and changes nothing."""
    from shiftsim.ground.contacts import ContactPoint
    from shiftsim.ground.stand import Stand

    model, field, loads, solution = stood(0.0)
    s = state(solution.model, solution.q[None])
    node = field.contacts[0].node
    rotation, origin = s.rotation[0, node], s.position[0, node]
    results = []
    for height in (0.0, 1e-3):  # world height above the ground of the probe, under the box's middle
        local = np.array([0.0, 0.0, (height - origin[2]) / rotation[2, 2]])
        probe = ContactPoint("box:probe", node, local)
        stand = Stand.build(solution.model, [*field.contacts, probe], field.ground, np.eye(3), np.zeros(3))
        five = ContactField(stand.contacts, field.ground, field.rotation, field.translation, np.full(5, 1e7),
                            np.full(5, 1e7), np.vstack([field.anchors, (rotation @ local + origin)[None]]))
        again = solve(solution.model, hold=["slew"], loads=loads, q_start=solution.q, fields=(five,), options=TIGHT)
        assert again.converged
        results.append(sensitivity(again, of=["box:c0.fz", "margin", "base.z"], wrt=["box.mass"], hold=["slew"],
                                   loads=loads, ground=five))
    at_knot, clear = results
    assert all(r and "'box:probe' is just lifting off" in r for r in at_knot.reasons)
    assert np.all(np.isnan(at_knot.derivative))
    assert not any(clear.reasons)
    reference = sensitivity(solution, of=["box:c0.fz", "margin", "base.z"], wrt=["box.mass"], hold=["slew"],
                            loads=loads, ground=field)
    np.testing.assert_allclose(clear.derivative, reference.derivative, rtol=1e-9)
