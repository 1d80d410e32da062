"""Ground contacts and tyres in the compiled core (src/ground.c): the per-point laws against a numpy reference
written here, the generalized force against finite differences of the points and the energy, the stiffness against
finite differences of the force, a solve with native fields on two threads equal to one thread, and bad arrays."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from helpers.core import fails_cleanly_at_every_allocation
from helpers.scenario import model_path

from shiftsim import statics as st
from shiftsim.core import ground as core_ground
from shiftsim.formats import read_model
from shiftsim.ground.base import floating
from shiftsim.ground.contacts import ContactPoint, anchored_at
from shiftsim.ground.terrain import Ground
from shiftsim.ground.tyres import OnGround, anchored_tyres, read_tyres
from shiftsim.kinematics import state
from shiftsim.model import compile_model

GRID = (np.array([-5.0, 0.0, 5.0]), np.array([-5.0, 0.0, 4.0]),
        np.array([[0.1, 0.3, -0.2], [0.0, 0.05, 0.2], [0.3, -0.1, 0.4]]))
ROTATION = Rotation.from_euler("zyx", [0.3, 0.1, -0.05]).as_matrix()
TRANSLATION = np.array([0.2, -0.3, 0.0])


# ------------------------------------------------------------------ the reference laws, numpy, one point at a time
def height(ground: Ground, x: float, y: float) -> tuple[float, np.ndarray, float]:
    """h, (h_x, h_y), d2h/dxdy of the bilinear surface (edge cells extended) or the plane."""
    if ground.grid is None:
        return ground.level, np.zeros(2), 0.0
    gx, gy, gz = ground.grid
    i = min(max(int(np.sum(gx <= x)) - 1, 0), len(gx) - 2)
    j = min(max(int(np.sum(gy <= y)) - 1, 0), len(gy) - 2)
    wx, wy = gx[i + 1] - gx[i], gy[j + 1] - gy[j]
    u, v = (x - gx[i]) / wx, (y - gy[j]) / wy
    z00, z10, z01, z11 = gz[i, j], gz[i + 1, j], gz[i, j + 1], gz[i + 1, j + 1]
    t = z00 - z10 - z01 + z11
    h = z00 + (z10 - z00) * u + (z01 - z00) * v + t * u * v
    return h, np.array([((z10 - z00) + t * v) / wx, ((z01 - z00) + t * u) / wy]), t / (wx * wy)


def friction(projector, point, anchor, kt, limit, touching):
    """Stick spring -kt P (p - a) saturating at limit: force, d force/d p (limit fixed), energy, slipping, u."""
    if not touching:
        return np.zeros(3), np.zeros((3, 3)), 0.0, False, np.zeros(3)
    dt = projector @ (point - anchor)
    length = np.linalg.norm(dt)
    if not (kt * length > limit and length > 0.0):
        return -kt * dt, -kt * projector, 0.5 * kt * length**2, False, np.zeros(3)
    u = dt / length
    return -limit * u, -limit * (np.eye(3) - np.outer(u, u)) @ projector / length, \
        limit * length - limit**2 / (2 * kt), True, u


def contact_reference(ground, p, kn, kt, mu, anchor, projector):
    h, grad, twist = height(ground, p[0], p[1])
    pen = h - p[2]
    touching = pen > 0.0
    on = pen if touching else 0.0
    g = np.array([grad[0], grad[1], -1.0])
    curvature = np.array([[0.0, twist, 0.0], [twist, 0.0, 0.0], [0.0, 0.0, 0.0]])
    slope = np.sqrt(1.0 + grad @ grad)
    f, k, energy, slipping, u = friction(projector, p, anchor, kt, mu * kn * on * slope, touching)
    force = -kn * on * g + f
    stiffness = (-kn * (np.outer(g, g) + on * curvature) if touching else 0.0) + k
    if slipping:
        d_slope = np.array([grad[1] * twist, grad[0] * twist, 0.0]) / slope
        stiffness = stiffness - np.outer(u, mu * kn * (slope * g + on * d_slope))
    return force, stiffness, 0.5 * kn * on**2 + energy, touching, slipping


def tyre_reference(ground, c, a, b, radius, k, kt, mu, anchor, projector):
    """Force on (c, a, b) (9), compression, contact point, energy, touching, slipping: the compression
    e = r - (c_z - h) / sqrt(m.m - (m.a)^2) (|w| for a unit a; the law's function of (c, a)) and its gradient by
    central differences of e (a second algorithm: no hand gradient)."""
    def compression(x):
        h, grad, _ = height(ground, x[0], x[1])
        m = np.array([-grad[0], -grad[1], 1.0])
        w = m - (m @ x[3:]) * x[3:]
        big_w = m @ m - (m @ x[3:]) ** 2
        return radius - (x[2] - h) / np.sqrt(big_w), x[:3] - (x[2] - h) / big_w * w

    x = np.concatenate([c, a])
    e, point = compression(x)
    step = 1e-6
    gradient = np.array([(compression(x + step * d)[0] - compression(x - step * d)[0]) / (2 * step)
                         for d in np.eye(6)])
    touching = e > 0.0
    on = e if touching else 0.0
    f, _, energy, slipping, _ = friction(projector, b, anchor, kt, mu * k * on, touching)
    return np.concatenate([-k * on * gradient, f]), e, point, 0.5 * k * on**2 + energy, touching, slipping


# ------------------------------------------------------------------ fields on the car of models/shift
def car():
    return floating(compile_model(read_model(model_path("car_on_tyres"))))


def fields(model, ground):
    contacts = [ContactPoint(f"c{i}", int(model.body_node[1 + i % (len(model.body_node) - 1)]),
                             np.random.default_rng(i).normal(0.0, 0.5, 3)) for i in range(6)]
    contact = anchored_at(contacts, model, np.zeros(model.nq), ground, ROTATION, TRANSLATION, np.full(6, 3e5),
                          np.full(6, 2e5))
    tyres = anchored_tyres(read_tyres(model), model, np.zeros(model.nq), ground, ROTATION, TRANSLATION,
                           np.full(4, 1e5))
    return contact, tyres


def pressed(model, rng):
    """Random coordinates with the car pressed into the ground by up to 0.6 m and shifted (some points slip)."""
    q = rng.normal(0.0, 0.05, model.nq)
    q[2] -= rng.uniform(0.0, 0.6)
    q[:2] += rng.uniform(-0.3, 0.3, 2)
    return q


GROUNDS = [Ground(grid=GRID, friction=0.6), Ground(level=0.1, friction=0.5)]


@pytest.mark.slow
@pytest.mark.parametrize("ground", GROUNDS, ids=["grid", "plane"])
def test_the_core_laws_equal_the_reference_at_random_states(ground):
    model = car()
    contact, tyres = fields(model, ground)
    rng = np.random.default_rng(5)
    seen = {"touching": 0, "slipping": 0, "sticking": 0}
    for _ in range(20):
        s = state(model, pressed(model, rng)[None])
        c = contact.evaluate(s)
        points = contact.world_points(s)[0]
        for i in range(len(contact.contacts)):
            force, stiffness, energy, touching, slipping = contact_reference(
                ground, points[i], contact.normal[i], contact.tangential[i], ground.friction, contact.anchors[i],
                contact.projector[i])
            scale = max(np.abs(force).max(), 1.0)
            np.testing.assert_allclose(c.points[0, i], points[i], rtol=0, atol=1e-12)
            np.testing.assert_allclose(c.forces[0, i], force, rtol=0, atol=1e-12 * scale)
            np.testing.assert_allclose(c.stiffness[0, i], stiffness, rtol=0, atol=1e-12 * max(np.abs(stiffness).max(), 1))
            assert c.energy[0, i] == pytest.approx(energy, rel=1e-12, abs=1e-12)
            assert (c.touching[0, i], c.slipping[0, i]) == (touching, slipping)
            seen["touching"] += touching
            seen["slipping"] += slipping
            seen["sticking"] += touching and not slipping
        t = tyres.tyre_state(s)
        force_9 = core_ground.points(tyres.core_field(model.n_nodes), 0, 4, s.rotation, s.position).tyre_force[0]
        centre, axis, spot = (v[0] @ ROTATION.T for v in tyres._vectors(s))
        for i in range(4):
            force, e, point, energy, touching, slipping = tyre_reference(
                ground, centre[i] + TRANSLATION, axis[i], spot[i] + TRANSLATION, tyres.radius[i], tyres.stiffness[i],
                tyres.tangential[i], tyres.mu[i], tyres.anchors[i], tyres.projector[i])
            assert t.compression[0, i] == pytest.approx(e, rel=1e-12, abs=1e-12)
            np.testing.assert_allclose(t.points[0, i], point, rtol=0, atol=1e-12)
            np.testing.assert_allclose(force_9[i, 6:], force[6:], rtol=0, atol=1e-12 * max(np.abs(force).max(), 1))
            # the normal part from the reference's differenced gradient: to its truncation error
            np.testing.assert_allclose(force_9[i, :6], force[:6], rtol=0, atol=1e-7 * max(np.abs(force).max(), 1))
            assert (t.touching[0, i], t.slipping[0, i]) == (touching, slipping)
    assert seen["touching"] > 20 and seen["slipping"] > 5 and seen["sticking"] > 5


@pytest.mark.parametrize("ground", GROUNDS, ids=["grid", "plane"])
def test_generalized_force_and_stiffness_against_finite_differences(ground):
    """Q = sum J^T f with J from differenced world points (an independent Jacobian), Q = -dE/dq where nothing
    slips, and the analytic stiffness against central differences of Q, contacts and tyres in one native field."""
    model = car()
    contact, tyres = fields(model, ground)
    both = OnGround(contact, tyres)
    rng = np.random.default_rng(11)
    h = 1e-6
    for trial in range(4):
        q = pressed(model, rng)
        if trial < 2:  # small moves from the anchors: everything sticks
            q = rng.normal(0.0, 0.002, model.nq)
            q[2] -= 0.3
        s = state(model, q[None])
        terms = both.terms(model, s)
        assert terms.conservative == (not contact.evaluate(s).slipping.any() and not tyres.tyre_state(s).slipping.any())
        numeric = np.zeros((model.nq, model.nq))
        jacobian = np.zeros((len(contact.contacts), 3, model.nq))
        for k in range(model.nq):
            dq = np.eye(model.nq)[k] * h
            plus, minus = state(model, (q + dq)[None]), state(model, (q - dq)[None])
            numeric[:, k] = (both.terms(model, plus).Q[0] - both.terms(model, minus).Q[0]) / (2 * h)
            jacobian[:, :, k] = (contact.model_points(plus)[0] - contact.model_points(minus)[0]) / (2 * h)
            if terms.conservative:
                gradient = -(both.terms(model, plus).energy[0] - both.terms(model, minus).energy[0]) / (2 * h)
                assert gradient == pytest.approx(terms.Q[0, k], abs=1e-6 * np.abs(terms.Q).max())
        scale = np.abs(numeric).max()
        np.testing.assert_allclose(terms.stiffness[0], numeric, rtol=0, atol=1e-6 * scale)
        contact_q = np.einsum("nik,ni->k", jacobian, contact.evaluate(s).forces[0] @ ROTATION)
        np.testing.assert_allclose(contact.terms(model, s).Q[0], contact_q, rtol=0,
                                   atol=1e-7 * max(np.abs(contact_q).max(), 1.0))
        parts = contact.terms(model, s).Q[0] + tyres.terms(model, s).Q[0]
        np.testing.assert_allclose(terms.Q[0], parts, rtol=1e-12, atol=1e-9)


def test_a_batch_with_native_fields_runs_on_threads_as_alone():
    """Native fields call no Python: the car on its tyres (anchored where they touch a level ground) solved as a
    batch on two threads, each case equal to its single solve, and its tyres carry its weight."""
    model = car()
    tyres = anchored_tyres(read_tyres(model), model, np.zeros(model.nq), Ground(level=0.0, friction=0.8), np.eye(3),
                           np.zeros(3), np.full(4, 1e5))
    q = np.zeros((3, model.nq))
    q[:, 2], q[:, 0] = [-0.01, -0.02, -0.03], [0.0, 0.01, 0.02]
    free = np.arange(model.nq)
    gravity = np.array([0.0, 0.0, -9.81])
    together = st.solve_batch(model, q, free, gravity, fields=(tyres,), threads=2)
    assert together.converged.all() and together.stable.all()
    for b in range(3):
        alone = st.solve_batch(model, q[b:b + 1], free, gravity, fields=(tyres,), threads=1)
        np.testing.assert_array_equal(alone.q[0], together.q[b])
        carried = tyres.tyre_state(state(model, together.q[b:b + 1])).forces[0].sum(axis=0)
        np.testing.assert_allclose(carried, [0.0, 0.0, model.total_mass * 9.81], rtol=1e-8, atol=1e-6)


def test_bad_ground_arrays_are_refused_naming_the_array():
    model = car()
    contact, _ = fields(model, Ground())
    arrays = {"placement_rotation": np.eye(3), "placement_translation": np.zeros(3), "level": [0.0],
              "grid_x": [], "grid_y": [], "grid_z": []} | contact.core_arrays()
    with pytest.raises(ValueError, match="contact_node: entry 0 is 99"):
        core_ground.field(model.n_nodes, arrays | {"contact_node": np.full(6, 99)})
    with pytest.raises(ValueError, match="contact_anchor: 3 items, expected 18"):
        core_ground.field(model.n_nodes, arrays | {"contact_anchor": np.zeros(3)})
    with pytest.raises(ValueError, match="grid_y: entry 0 is not below the next"):
        core_ground.field(model.n_nodes, arrays | {"grid_x": [0.0, 1.0], "grid_y": [1.0, 1.0], "grid_z": np.zeros((2, 2))})
    capsule = core_ground.field(model.n_nodes, arrays)
    other = compile_model(read_model(model_path("car_on_tyres")))  # not floating: fewer nodes
    with pytest.raises(ValueError, match="built for a model of"):
        core_ground.terms(st.compiled(other), capsule, other.nq, *state(other, other.q0[None]).arrays)


def test_native_fields_fail_cleanly_at_every_allocation():
    """The ground's scratch comes from the core's checked allocator: a solve batch on two threads and the terms alone
    raise MemoryError at every failing allocation and leave nothing allocated, then give the undisturbed numbers."""
    model = car()
    tyres = anchored_tyres(read_tyres(model), model, np.zeros(model.nq), Ground(level=0.0, friction=0.8), np.eye(3),
                           np.zeros(3), np.full(4, 1e5))
    q = np.zeros((2, model.nq))
    q[:, 2] = [-0.01, -0.02]
    free, gravity = np.arange(model.nq), np.array([0.0, 0.0, -9.81])
    for call in (lambda: st.solve_batch(model, q, free, gravity, fields=(tyres,), threads=2).q,
                 lambda: tyres.terms(model, state(model, q)).stiffness):
        reference = call()
        result, failures = fails_cleanly_at_every_allocation(call)
        assert failures >= 1 and np.array_equal(result, reference)
