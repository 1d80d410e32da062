"""Sensitivities of what a car on four tyres carries (shiftsim/sensitivity/ground.py with the core's tyre stiffness):
each tyre's reaction, the centre of pressure and the tipping margin, against Richardson central differences of tight
re-solves of the standing car with one parameter moved (the model file's numbers, the tyres', the ground's), the
outputs read by the tyres' own field and the footprint code (``TyreField.evaluate``, ``footprint``), not by the
sensitivity code; with the tyres sticking, and under a sideways load that makes the rear right one slip."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.sensitivity import edited, edited_field, richardson
from helpers.vehicle import car

from shiftsim.ground.footprint import footprint
from shiftsim.ground.terrain import Ground
from shiftsim.ground.tyres import TyreField, anchored_tyres, read_tyres
from shiftsim.kinematics import state
from shiftsim.model import compile_model
from shiftsim.sensitivity import sensitivity
from shiftsim.statics import Load, SolverOptions, solve

TIGHT = SolverOptions(force_tolerance=1e-12, closure_tolerance=1e-14)

def loads(sideways: float) -> list[Load]:
    return [Load("car:chassis:boot", force=(300.0, sideways, -2000.0))]


OF = ["reaction", "cop", "margin"]
STEPS = {"car:chassis.mass": 10.0, "car:chassis.com.x": 1e-2, "car:chassis:boot.y": 1e-2,
         "load:car:chassis:boot.fy": 10.0, "car:suspension_fl.k": 500.0, "tyre_fl.vertical_stiffness": 2000.0,
         "tyre_rr.radius": 1e-3, "ground.tangential_stiffness": 1e3, "tyre_rr.friction": 1e-2,
         "car:chassis:seat_fl.x": 1e-3, "car:chassis:seat_fl.z": 1e-3, "car:chassis:seat_rr.y": 1e-5,
         "car:chassis:seat_rr.z": 1e-3}  # a seat moves its wheel and tyre (1e-5: the slipping tyre nears stick)


def stood(sideways: float):
    """The car on level ground (tangential stiffness 1e5 N/m), its tyres anchored where they stand at the file's
    coordinates, under a load at its boot with ``sideways`` N along y."""
    model = car()
    field = anchored_tyres(read_tyres(model), model, model.q0, Ground(friction=0.6, tangential_stiffness=1e5),
                           np.eye(3), np.zeros(3), np.full(4, 1e5))
    solution = solve(model, loads=loads(sideways), fields=(field,), options=TIGHT)
    assert solution.converged
    return model, field, solution


def read_off(model, field: TyreField, loads, q_start) -> np.ndarray:
    """Every tyre's reaction (12), the centre of pressure (2) and the margin of a tight re-solve, read by the field."""
    found = solve(model, loads=loads, q_start=q_start, fields=(field,), options=TIGHT)
    assert found.converged
    c = field.evaluate(state(model, found.q[None]))
    fp = footprint(c.points[0], c.forces[0])
    return np.array([*c.forces[0].ravel(), *fp.centre_of_pressure[:2], fp.margin])


def moved(model, field: TyreField, given: list[Load], name: str, delta: float):
    """The model, tyre field and loads with one parameter moved."""
    if name.startswith(("tyre_", "ground.")):
        return model, edited_field(field, name, delta), given
    spec, changed = edited(model.spec, given, name, delta)
    return compile_model(spec), field, changed


@pytest.mark.slow
@pytest.mark.parametrize("sideways", [200.0, 6000.0], ids=["sticking", "rear right slipping"])
def test_tyre_reactions_centre_of_pressure_and_margin_against_re_solves(sideways):
    model, field, solution = stood(sideways)
    slipping = field.tyre_state(state(model, solution.q[None])).slipping[0]
    assert list(slipping) == [False, False, False, sideways > 1000.0]
    given = loads(sideways)
    result = sensitivity(solution, of=OF, wrt=list(STEPS), loads=given, ground=field)
    assert not any(result.reasons)
    assert result.outputs[:3] == ("tyre_fl.fx", "tyre_fl.fy", "tyre_fl.fz") and result.outputs[12:] == (
        "cop.x", "cop.y", "margin")
    assert np.allclose(result.values, read_off(model, field, given, solution.q), rtol=1e-9, atol=1e-9)
    for j, name in enumerate(result.parameters):
        reference = richardson(lambda delta: read_off(*moved(model, field, given, name, delta), solution.q),
                               STEPS[name])
        for kind in (slice(0, 12), slice(12, 14), slice(14, 15)):  # per output kind, against its largest change
            scale = max(float(np.max(np.abs(reference[kind]))), 1e-12)
            assert np.max(np.abs(result.derivative[kind, j] - reference[kind])) <= 1e-6 * scale, (name, kind)
    d = dict(zip(result.parameters, result.derivative.T))
    assert (np.max(np.abs(d["tyre_rr.friction"])) > 0.0) == (sideways > 1000.0)  # it moves only a slipping tyre


def test_forward_and_adjoint_agree_on_a_car_on_tyres():
    _, field, solution = stood(6000.0)
    forward = sensitivity(solution, of=OF, wrt=["all"], loads=loads(6000.0), ground=field, mode="forward")
    adjoint = sensitivity(solution, of=OF, wrt=["all"], loads=loads(6000.0), ground=field, mode="adjoint")
    assert not any(forward.reasons)
    assert np.max(np.abs(forward.derivative - adjoint.derivative)) <= 1e-10 * np.max(np.abs(forward.derivative))
