"""The wrench of a joint that carries the ground on its child side (shiftsim/sensitivity/wrenches.py): the car's
suspension joints, each with a wheel below it standing on a tyre (6 kN sideways at the boot: the rear right one
slips), or on two contact points under the wheel (3 kN: all stick), against
Richardson central differences of tight re-solves with one parameter moved, the wrenches read by the solution's own
joint loads (``Solution.joint_loads``, which add the fields' point forces in the compiled core), not by the
sensitivity code."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.sensitivity import edited, edited_field, richardson
from helpers.vehicle import RADIUS, car

from shiftsim.ground.contacts import ContactPoint, anchored_at
from shiftsim.ground.terrain import Ground
from shiftsim.ground.tyres import anchored_tyres, read_tyres
from shiftsim.model import compile_model
from shiftsim.sensitivity import sensitivity
from shiftsim.statics import Load, SolverOptions, solve

TIGHT = SolverOptions(force_tolerance=1e-12, closure_tolerance=1e-14)

def loads(sideways: float) -> list[Load]:
    return [Load("car:chassis:boot", force=(300.0, sideways, -2000.0))]


OF = [f"car:suspension_{w}.{c}" for w in ("fl", "rr") for c in ("fx", "fy", "fz", "mx", "my", "mz")]
GROUND = Ground(friction=0.6, tangential_stiffness=1e5)


def on_tyres(model):
    return anchored_tyres(read_tyres(model), model, model.q0, GROUND, np.eye(3), np.zeros(3), np.full(4, 1e5))


def on_contacts(model):
    """Two contacts under each wheel (0.1 m ahead and behind its lowest point), 2e5 N/m."""
    wheels = [int(model.frame_node[model.frame_index(f"car:wheel_{w}:origin")]) for w in ("fl", "fr", "rl", "rr")]
    points = [ContactPoint(f"wheel_{w}:{end}", node, np.array([x, 0.0, -RADIUS]))
              for w, node in zip(("fl", "fr", "rl", "rr"), wheels) for end, x in (("front", 0.1), ("rear", -0.1))]
    return anchored_at(points, model, model.q0, GROUND, np.eye(3), np.zeros(3), np.full(8, 2e5), np.full(8, 1e5))


def moved(model, field, given: list[Load], name: str, delta: float):
    """The model, field and loads with one parameter moved (the anchors kept)."""
    if name.startswith(("tyre_", "ground.")):
        return model, edited_field(field, name, delta), given
    spec, changed = edited(model.spec, given, name, delta)
    return compile_model(spec), field, changed


def wrenches(model, field, loads, q_start) -> np.ndarray:
    found = solve(model, loads=loads, q_start=q_start, fields=(field,), options=TIGHT)
    assert found.converged
    return np.concatenate([found.joint_loads[f"car:suspension_{w}"].wrench_world for w in ("fl", "rr")])


STEPS = {"car:chassis.mass": 10.0, "car:wheel_fl.mass": 1.0, "car:suspension_fl.k": 500.0,
         "load:car:chassis:boot.fy": 10.0, "ground.tangential_stiffness": 1e3, "tyre_fl.vertical_stiffness": 2000.0,
         "ground.stiffness": 2000.0, "car:chassis:seat_fl.x": 1e-3, "car:chassis:seat_rr.y": 1e-5,
         "car:chassis:seat_rr.z": 1e-3}  # a seat moves its wheel with the tyre or contacts under it


@pytest.mark.slow
@pytest.mark.parametrize("standing, sideways", [(on_tyres, 6000.0), (on_contacts, 3000.0)], ids=["tyres", "contacts"])
def test_a_suspension_joint_s_wrench_with_the_ground_below_it_against_re_solves(standing, sideways):
    model = car()
    field = standing(model)
    given = loads(sideways)
    solution = solve(model, loads=given, fields=(field,), options=TIGHT)
    assert solution.converged
    wanted = [n for n in STEPS if n != ("ground.stiffness" if standing is on_tyres else "tyre_fl.vertical_stiffness")]
    result = sensitivity(solution, of=OF, wrt=wanted, loads=given, ground=field)
    assert not any(result.reasons)
    assert np.allclose(result.values, wrenches(model, field, given, solution.q), rtol=1e-10, atol=1e-8)
    for j, name in enumerate(result.parameters):
        reference = richardson(lambda delta: wrenches(*moved(model, field, given, name, delta), solution.q),
                               STEPS[name])
        scale = float(np.max(np.abs(reference)))
        assert scale > 0.0 and np.max(np.abs(result.derivative[:, j] - reference)) <= 1e-6 * scale, name
