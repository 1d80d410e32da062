"""The ground parameters' partial derivatives in the compiled core (``ground_partials`` in src/ground.c, rows of kind
ground in ``_core.partials``) against central differences of the core's own ground terms with the law's number moved
in the field's arrays (a new capsule per difference, not through the partials code): the generalized force
(``ground_terms``) and the world forces on each contact and tyre (``ground_points``).

The model is the car on its four tyres with two more contacts, under its boot and its front-left seat, on a twisted
height grid, pressed in and slid from the anchors so that contacts and tyres stick and slip side by side; one wheel
is lifted clear. Each law is linear in each number within its regime (touching or clear, sticking or slipping), so
a central difference is exact up to rounding; a column taken from the wrong regime (slip as stick, or the stick
stiffness not following the normal one) differs by the whole stick or slip force.

Also: a batch over threads equals each configuration alone, bad ground rows are refused naming the row, and a failed
allocation leaves nothing behind.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers.core import fails_cleanly_at_every_allocation
from helpers.sensitivity import edited, richardson
from helpers.vehicle import car

from shiftsim.core import ground as core_ground
from shiftsim.core.layout import compiled
from shiftsim.core.library import core
from shiftsim.ground.contacts import ContactPoint, surface_arrays
from shiftsim.ground.stand import Stand
from shiftsim.ground.terrain import Ground
from shiftsim.ground.tyres import read_tyres
from shiftsim.kinematics import state
from shiftsim.model import compile_model
from shiftsim.sensitivity.parameters import Parameter, catalogue, force_partials_batch
from shiftsim.spec import FrameSpec
from shiftsim.statics import Load

GRID = (np.array([-5.0, 0.0, 5.0]), np.array([-5.0, 0.0, 4.0]),
        np.array([[0.01, 0.03, -0.02], [0.0, 0.005, 0.02], [0.03, -0.01, 0.04]]))
N_CONTACTS = 2
# what each ground parameter scales: the arrays of the field it moves (contacts', tyres')
MOVES = {"stiffness": (("contact_normal",), ("tyre_stiffness",)),
         "stiffness_and_stick": (("contact_normal", "contact_tangential"), ("tyre_stiffness", "tyre_tangential")),
         "tangential": (("contact_tangential",), ("tyre_tangential",)),
         "friction": (("contact_friction",), ("tyre_friction",)),
         "radius": ((), ("tyre_radius",))}


def setting(tangential: float | None, model=None):
    """The car's model (or ``model``, the car with its frames moved), its ground field's arrays (two skids under
    the chassis, four tyres) and three configurations (B, nq), pressed 3 cm in: as anchored, the front-left wheel
    lifted clear; turned about z so far that the tyres, further from the middle, and the rear skid slip and the front
    skid sticks, the same wheel clear; turned 0.1 rad (all slip)."""
    model = car() if model is None else model
    chassis = model.frame_node[model.frame_index("car:chassis:origin")]
    s = state(model, np.zeros((1, model.nq)))
    skids = [ContactPoint(f"car:chassis:{name}", chassis,
                          s.rotation[0, chassis].T @ (np.array(point) - s.position[0, chassis]))
             for name, point in (("skid_front", (0.3, 0.4, 0.01)), ("skid_rear", (-0.5, -0.3, 0.01)))]
    ground = Ground(grid=GRID, stiffness=2e5, friction=0.5, tangential_stiffness=tangential)
    stand = Stand.build(model, skids, ground, np.eye(3), np.zeros(3), tyres=tuple(read_tyres(model)))
    field = stand.field(np.zeros(model.nq))
    arrays = (surface_arrays(ground, field.contacts.rotation, field.contacts.translation)
              | field.contacts.core_arrays() | field.tyres.core_arrays())
    q = np.zeros((3, model.nq))
    q[:, 2] = -0.03
    q[:, 3] = [0.0, 0.025 if tangential is None else 0.05, 0.1]
    q[:2, 6] = 0.1  # the front-left suspension: its wheel clear of the ground
    return model, {name: np.array(value, dtype=np.int64 if name.endswith(("_node", "_frame")) else float)
                   for name, value in arrays.items()}, q


def evaluated(model, arrays, q):
    """The ground's generalized force (B, nq), contact forces (B, C, 3), tyre forces (B, T, 9) and the flags."""
    capsule = core_ground.field(model.n_nodes, arrays)
    s = state(model, q)
    q_force, *_ = core_ground.terms(compiled(model), capsule, model.nq, *s.arrays)
    g = core_ground.points(capsule, len(arrays["contact_node"]), len(arrays["tyre_node"]), s.rotation, s.position)
    return q_force, g


def core_partials(model, arrays, q, scaled, threads=1):
    """The core's dQ/dp (B, nq, P) and world partials (B, C, 3, P), (B, T, 9, P) for ground parameters ``scaled``
    (what, contact indices, tyre indices)."""
    n_c, n_t = len(arrays["contact_node"]), len(arrays["tyre_node"])
    rows = core_ground.parameter_rows(core_ground.field(model.n_nodes, arrays), n_c, n_t, scaled)
    params = [Parameter(f"ground parameter {i}", "ground", -1, item, 1.0) for i, item in enumerate(scaled)]
    force, _, contact, tyre = force_partials_batch(model, q, np.zeros((len(q), 0)), model.gravity, (), params,
                                                   threads=threads, ground=rows)
    return force, contact, tyre


def differences(model, arrays, q, what, contacts, tyres, h):
    """Central differences of the ground's force, contact and tyre forces with ``what`` of every member moved by
    ``h``."""
    out = []
    for sign in (1.0, -1.0):
        moved = {name: value.copy() for name, value in arrays.items()}
        for names, members in zip(MOVES[what], (contacts, tyres)):
            for name in names:
                moved[name][list(members)] += sign * h
        q_force, g = evaluated(model, moved, q)
        out.append((q_force, g.contact_force, g.tyre_force))
    return [(up - down) / (2 * h) for up, down in zip(*out)]


@pytest.mark.parametrize("tangential", [None, 1e5], ids=["stick stiffness follows", "stick stiffness given"])
def test_every_ground_parameter_against_central_differences_of_the_core_s_own_forces(tangential):
    model, arrays, q = setting(tangential)
    _, g = evaluated(model, arrays, q)
    # both regimes side by side, a wheel clear
    assert g.contact_touching.any() and g.tyre_slipping.any() and (g.tyre_touching & ~g.tyre_slipping).any()
    assert (g.contact_touching & g.contact_slipping).any() and (g.contact_touching & ~g.contact_slipping).any()
    assert not g.tyre_touching[0, 0]
    n_c, n_t = N_CONTACTS, 4
    follows = tangential is None
    scaled = [(what, (i,), ()) for i in range(n_c) for what in MOVES if what != "radius"]
    scaled += [(what, (), (t,)) for t in range(n_t) for what in MOVES]
    scaled.append(("friction", (0, 1), (1, 3)))  # a group: the sum of its members' columns
    force, contact, tyre = core_partials(model, arrays, q, scaled)
    for j, (what, contacts, tyres) in enumerate(scaled):
        h = 1e-4 * arrays[MOVES[what][0 if contacts else 1][0]][(contacts or tyres)[0]]
        d_q, d_contact, d_tyre = differences(model, arrays, q, what, contacts, tyres, h)
        for mine, reference in ((force[..., j], d_q), (contact[..., j], d_contact), (tyre[..., j], d_tyre)):
            scale = max(float(np.max(np.abs(reference))), 1e-300)
            assert np.max(np.abs(mine - reference)) <= 1e-7 * scale, (what, contacts, tyres)
        # where a member's law has no such term (clear, or the other friction regime) its column is exactly zero
        for b in range(len(q)):
            for flags, partials, members in (((g.contact_touching, g.contact_slipping), contact, contacts),
                                             ((g.tyre_touching, g.tyre_slipping), tyre, tyres)):
                for i in members:
                    touching, slipping = flags[0][b, i], flags[1][b, i]
                    if not touching or (what == "tangential" and slipping) or (what == "friction" and not slipping):
                        assert not np.any(partials[b, i, :, j]), (b, i, what)
            for t in tyres:  # a sticking tyre's friction does not depend on its radius
                if what == "radius" and g.tyre_touching[b, t] and not g.tyre_slipping[b, t]:
                    assert not np.any(tyre[b, t, 6:, j]) and np.any(tyre[b, t, :6, j])


def with_wheel_skid(model, arrays):
    """The field's arrays with a third contact on the rear-right wheel, 2 cm ahead of its centre and 30 cm below
    (pressed 2 cm in at the configurations of :func:`setting`; a frame that moves the wheel moves it)."""
    wheel = model.frame_node[model.frame_index("car:wheel_rr:origin")]
    out = {name: value.copy() for name, value in arrays.items()}
    out["contact_node"] = np.append(arrays["contact_node"], wheel)
    out["contact_local"] = np.vstack([arrays["contact_local"], [0.02, 0.0, -0.3]])
    for name in ("contact_normal", "contact_tangential", "contact_friction"):
        out[name] = np.append(arrays[name], arrays[name][0])
    s = state(model, np.zeros((1, model.nq)))
    out["contact_anchor"] = np.vstack([arrays["contact_anchor"],
                                       s.rotation[0, wheel] @ [0.0, 0.0, -0.3] + s.position[0, wheel]])
    out["contact_projector"] = np.concatenate([arrays["contact_projector"], arrays["contact_projector"][:1]])
    out["contact_frame"] = np.append(arrays["contact_frame"], -1)
    return out


@pytest.mark.parametrize("tangential", [None, 1e5], ids=["stick stiffness follows", "stick stiffness given"])
def test_frames_that_carry_tyres_and_contacts_against_differences_of_the_core_s_own_forces(tangential):
    """A suspension seat on the chassis carries its wheel, with its tyre (and on the rear right a contact): moving
    the seat moves them at a fixed configuration. Its column of the ground's generalized force and its partials of
    the world contact and tyre forces against Richardson differences of the core's ground terms on the car
    compiled again with the seat moved in its spec, the field's arrays unchanged (gravity zero: the ground's terms
    alone); sticking and slipping tyres, the front-left wheel clear in two of the configurations."""
    model, arrays, q = setting(tangential)
    arrays = with_wheel_skid(model, arrays)
    _, g = evaluated(model, arrays, q)
    assert g.contact_touching[:, 2].all() and g.tyre_slipping.any() and (g.tyre_touching & ~g.tyre_slipping).any()
    params = [p for p in catalogue(model) if p.kind == "frame"]
    assert {p.name.split(":")[-1].split(".")[0] for p in params} == {"seat_fl", "seat_fr", "seat_rl", "seat_rr"}
    frame_columns_match_edited_specs(model, lambda _: arrays, q, params)


def frame_columns_match_edited_specs(model, arrays_of, q, params):
    """The frame parameters' ``params`` columns of the ground's generalized force and their partials of the world
    contact and tyre forces against Richardson differences of the core's ground terms on the model compiled again
    with the frame moved in its spec, the field's arrays ``arrays_of(model)`` (gravity zero: the ground's terms
    alone)."""
    arrays = arrays_of(model)
    n_c, n_t = len(arrays["contact_node"]), len(arrays["tyre_node"])
    rows = core_ground.parameter_rows(core_ground.field(model.n_nodes, arrays), n_c, n_t, [None] * len(params))
    force, _, contact, tyre = force_partials_batch(model, q, np.zeros((len(q), 0)), np.zeros(3), (), params,
                                                   ground=rows)

    def moved(step, name):
        spec, _ = edited(model.spec, [], name, step)
        edited_model = compile_model(spec)
        q_force, g = evaluated(edited_model, arrays_of(edited_model), q)
        return np.concatenate([q_force.reshape(len(q), -1), g.contact_force.reshape(len(q), -1),
                               g.tyre_force.reshape(len(q), -1)], axis=1)

    for j, p in enumerate(params):
        reference = richardson(lambda step: moved(step, p.name), 1e-4)  # the slip lengths are centimetres
        mine = np.concatenate([force[..., j], contact[..., j].reshape(len(q), -1), tyre[..., j].reshape(len(q), -1)],
                              axis=1)
        scale = float(np.max(np.abs(reference)))
        assert scale > 1.0 and np.max(np.abs(mine - reference)) <= 1e-7 * scale, (p.name, mine - reference)


def with_pad_frame(model):
    """The car with a frame ``pad`` on its chassis where :func:`setting`'s front skid stands (a frame that a load on
    it makes a parameter; no joint attaches to it)."""
    chassis = model.frame_node[model.frame_index("car:chassis:origin")]
    s = state(model, np.zeros((1, model.nq)))
    local = s.rotation[0, chassis].T @ (np.array([0.3, 0.4, 0.01]) - s.position[0, chassis])
    bodies = [dataclasses.replace(b, frames={**b.frames, "pad": FrameSpec("pad", translation=local)})
              if b.name == "car:chassis" else b for b in model.spec.bodies]
    return compile_model(dataclasses.replace(model.spec, bodies=bodies))


def standing_at(model, arrays, frame: str):
    """The field's arrays with the front skid standing at ``frame``: its local point that frame's offset on its
    node, its frame index recorded (its anchor and projector kept)."""
    index = model.frame_index(frame)
    out = {name: value.copy() for name, value in arrays.items()}
    out["contact_local"][0] = model.frame_offset[index][:3, 3]
    out["contact_frame"][0] = index
    return out


@pytest.mark.parametrize("tangential", [None, 1e5], ids=["stick stiffness follows", "stick stiffness given"])
def test_a_contact_standing_at_the_moved_frame_against_differences_of_the_core_s_own_forces(tangential):
    """The front skid stands at a frame of its own on the chassis (``car:chassis:pad``, loaded, so a parameter):
    moving the frame moves the skid and nothing else. Its columns (the ground's generalized force, every contact
    and tyre force) against Richardson differences of the core's ground terms on the car compiled again with the
    frame moved in its spec and the skid's local point re-read from the moved frame (gravity zero: the ground's
    terms alone). The old columns (the skid left where it stood) are zero: the check fails on them."""
    model, arrays, q = setting(tangential, with_pad_frame(car()))
    frame = "car:chassis:pad"
    moved_arrays = standing_at(model, arrays, frame)
    np.testing.assert_allclose(moved_arrays["contact_local"], arrays["contact_local"], atol=1e-15)
    _, g = evaluated(model, moved_arrays, q)
    assert g.contact_touching[:, 0].all() and g.contact_slipping[:, 0].any() and not g.contact_slipping[:, 0].all()
    loads = (Load(frame, force=(0.0, 0.0, -100.0)),)
    params = [p for p in catalogue(model, loads) if p.kind == "frame" and p.name.startswith(frame + ".")]
    assert len(params) == 3
    frame_columns_match_edited_specs(model, lambda edited_model: standing_at(edited_model, arrays, frame), q, params)


def test_slip_is_not_taken_for_stick_nor_the_stick_stiffness_left_behind():
    """The regimes' columns differ by the whole stick or slip force. Each law is homogeneous in its numbers, so the
    force the core evaluates (``ground_points``) rebuilds from its columns: sticking, f = k_n df/dk_n + k_t df/dk_t
    with friction's column zero; slipping, f = k_n df/dk_n (the Coulomb limit scales with k_n) with the stick
    stiffness' column zero. Where the stick stiffness follows the normal one, a sticking contact's column carries
    its stick force per unit stiffness on top of the normal part, a slipping one's does not."""
    model, arrays, q = setting(None)
    _, g = evaluated(model, arrays, q)
    whats = ("stiffness", "stiffness_and_stick", "tangential", "friction")
    scaled = [(what, (i,), ()) for i in range(N_CONTACTS) for what in whats]
    _, contact, _ = core_partials(model, arrays, q, scaled)
    kn, kt = arrays["contact_normal"], arrays["contact_tangential"]
    seen = set()
    for b, i in zip(*np.nonzero(g.contact_touching)):
        normal, with_stick, tangential, friction = (contact[b, i, :, len(whats) * i + k] for k in range(len(whats)))
        force, slipping = g.contact_force[b, i], bool(g.contact_slipping[b, i])
        seen.add(slipping)
        if slipping:
            np.testing.assert_allclose(kn[i] * normal, force, rtol=1e-12, atol=1e-12 * np.linalg.norm(force))
            assert not np.any(tangential) and np.array_equal(with_stick, normal) and np.any(friction)
        else:
            np.testing.assert_allclose(kn[i] * normal + kt[i] * tangential, force, rtol=1e-12,
                                       atol=1e-12 * np.linalg.norm(force))
            assert np.linalg.norm(kt[i] * tangential) > 1e-3 * np.linalg.norm(force)  # a stick force worth seeing
            np.testing.assert_allclose(with_stick - normal, tangential, rtol=0.0, atol=1e-14 * np.linalg.norm(normal))
            assert not np.any(friction)
    assert seen == {True, False}


def test_a_batch_over_threads_equals_each_configuration_alone():
    model, arrays, q = setting(1e5)
    scaled = [(what, (0, 1), (0, 1, 2, 3)) for what in ("stiffness", "tangential", "friction")]
    scaled.append(("radius", (), (0, 1, 2, 3)))
    batch = core_partials(model, arrays, q, scaled, threads=3)
    for b in range(len(q)):
        alone = core_partials(model, arrays, q[b:b + 1], scaled)
        assert all(np.array_equal(together[b], one[0]) for together, one in zip(batch, alone))
    assert not np.array_equal(batch[0][0], batch[0][2])


def _call(model, arrays, rows, members, ground=True):
    P = len(rows)
    n_c, n_t = len(arrays["contact_node"]), len(arrays["tyre_node"])
    frames = np.zeros(0, dtype=np.int64)
    core.partials(compiled(model), model.q0[None].copy(), np.zeros((1, 0)), model.gravity[None].copy(), frames,
                  np.zeros((1, 0, 3)), np.zeros((1, 0, 3)), np.zeros((1, 0)), frames,
                  np.ascontiguousarray(rows, dtype=np.int64), np.zeros(len(model.frame_names) + 1, dtype=np.int64),
                  np.zeros((0, 4), dtype=np.int64), np.zeros((1, model.nq, P)), np.zeros((1, 0, P)), 1,
                  *((core_ground.field(model.n_nodes, arrays), np.asarray(members, dtype=np.int64),
                     np.zeros((1, n_c, 3, P)), np.zeros((1, n_t, 9, P))) if ground else (None,)))


def test_bad_ground_rows_are_refused_naming_the_row():
    model, arrays, _ = setting(None)
    kind = core.PARAMETER_KINDS.index("ground")
    radius = core_ground.GROUND_PARAMETERS.index("radius")
    _call(model, arrays, [[kind, 0, 0, 2], [kind, radius, 2, 1]], [0, 5, 5])
    with pytest.raises(ValueError, match="parameter row 1 .* no ground field was given"):
        _call(model, arrays, [[core.PARAMETER_KINDS.index("none"), 0, 0, 0], [kind, 0, 0, 1]], [0], ground=False)
    with pytest.raises(ValueError, match="parameter row 0 .* not a contact or tyre"):
        _call(model, arrays, [[kind, 0, 0, 1]], [6])
    with pytest.raises(ValueError, match="parameter row 0 .* radius of a member that is not a tyre"):
        _call(model, arrays, [[kind, radius, 0, 1]], [1])
    with pytest.raises(ValueError, match="parameter row 1 .* outside ground_members"):
        _call(model, arrays, [[kind, 0, 0, 1], [kind, 0, 1, 2]], [0, 1])
    with pytest.raises(ValueError, match="parameter row 0 .* scales no law number"):
        _call(model, arrays, [[kind, len(core_ground.GROUND_PARAMETERS), 0, 1]], [0])


def test_a_failed_allocation_leaves_nothing_behind():
    model, arrays, q = setting(None)
    scaled = [("stiffness_and_stick", (0, 1), (1,)), ("radius", (), (2,))]

    def call():
        return core_partials(model, arrays, q[:1], scaled)

    (force, _, _), failures = fails_cleanly_at_every_allocation(call)
    assert failures >= 1 and np.array_equal(force, call()[0])
