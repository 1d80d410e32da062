"""One workspace per case (issue 24): a solve allocates its working memory once, before the Newton iteration, and
never again, however many iterations, cases or load steps it takes.

``_core.allocations()`` counts the allocations the core makes and the requests a workspace could not serve from its
own block (an overflow: its size, computed from the model and the problem, was too small). A solve of one case on one
thread allocates one workspace; a batch one per thread, reused over that thread's cases. The counts of a solve are
compared between runs of few and of many iterations, so the test fails if anything in the loop allocates.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.ground import GRAVITY, free_of, machine, standing

from shiftsim.core.library import core
from shiftsim.loading import load_model
from shiftsim.statics import SolverOptions, free_coordinates, resolve_prescribed, solve, solve_batch

MODELS = Path(__file__).resolve().parents[2] / "models" / "shift"
HELD = {"excavator_hydraulic.json": ["arm:boom_cyl", "arm:stick_cyl", "arm:bucket_cyl"]}


def counted(call):
    """call()'s result, the allocations it made and the workspace overflows it caused."""
    made, overflows = core.allocations()
    result = call()
    after = core.allocations()
    return result, after[0] - made, after[1] - overflows


def batch(name, count, threads, options=SolverOptions()):
    """``count`` cases of a shipped model under gravity scaled from 0.2 to 1.5."""
    model = load_model(MODELS / name)
    q, prescribed = resolve_prescribed(model, {}, HELD.get(name, []))
    free = free_coordinates(model, prescribed)
    starts = np.repeat(q[None], count, axis=0)
    gravity = model.gravity[None] * np.linspace(0.2, 1.5, count)[:, None]
    return lambda: solve_batch(model, starts, free, gravity, threads=threads, options=options)


@pytest.mark.parametrize("options", [SolverOptions(), SolverOptions(structured_from=0),
                                     SolverOptions(finite_difference_stiffness=True)],
                         ids=["dense", "tree", "finite-differences"])
def test_a_solve_allocates_one_workspace_however_many_iterations_it_takes(options):
    model = load_model(MODELS / "cantilever10.json")
    free = np.arange(model.nq)
    many, made_many, overflows_many = counted(lambda: solve_batch(model, model.q0[None], free, model.gravity[None],
                                                                  threads=1, options=options))
    few, made_few, overflows_few = counted(lambda: solve_batch(model, many.q, free, model.gravity[None], threads=1,
                                                               options=options))
    assert few.converged.all() and many.converged.all()
    assert many.iterations[0] >= few.iterations[0] + 3  # the loop ran more times: the count could grow
    assert made_few == made_many == 1 and overflows_few == overflows_many == 0


def test_load_stepping_allocates_nothing_more():
    stepped, made, overflows = counted(batch("cantilever10.json", 1, 1, SolverOptions(full_load_iterations=1)))
    assert stepped.converged.all() and stepped.iterations[0] > 1  # the full load failed after one: load stepping
    assert made == 1 and overflows == 0


@pytest.mark.parametrize("name", ["cantilever10.json", "four_bar.json", "excavator_hydraulic.json"])
def test_a_batch_allocates_one_workspace_per_thread_and_reuses_it(name):
    one, made_one, _ = counted(batch(name, 1, 1))
    eight, made_eight, overflows = counted(batch(name, 8, 1))
    on_two, made_two, overflows_two = counted(batch(name, 8, 2))
    assert one.converged.all() and eight.converged.all() and on_two.converged.all()
    assert eight.iterations.sum() > 4 * one.iterations[0]  # eight cases, one workspace
    assert made_eight == made_one and made_two == made_one + 1 and overflows == overflows_two == 0


def test_escapes_couplings_and_ground_contacts_fit_their_workspace():
    """The paths beyond a plain Newton step: the escape from an unstable equilibrium (eigenvectors of the reduced
    stiffness), couplings called back into Python, ground contacts evaluated in the core."""
    pendulum = load_model(MODELS / "double_pendulum.json")
    hanging = solve(pendulum).q
    upright = hanging + [np.pi, 0.0]  # an equilibrium too, unstable: the solve leaves it
    escaped, _, overflows = counted(lambda: solve(pendulum, q_start=upright))
    assert escaped.converged and escaped.stability == "stable" and overflows == 0
    assert np.cos(escaped.q[0] - hanging[0]) == pytest.approx(1.0, abs=1e-9)  # it left the top and hangs again
    coupled = load_model(Path(__file__).resolve().parents[1] / "data" / "claraty" / "two_link_sample.xml")
    assert coupled.couplings
    result, _, overflows = counted(lambda: solve(coupled))
    assert result.converged and overflows == 0
    stand, q = standing(machine())
    (stood, _), made, overflows = counted(lambda: stand.solve(q, free_of(stand.model), GRAVITY, []))
    assert stood.converged and overflows == 0


@pytest.mark.parametrize("name", ["four_bar.json", "excavator_hydraulic.json"])
def test_a_workspace_too_small_takes_further_blocks_and_gives_the_same_numbers(name):
    """The fallback for a size computed too small (never reached by the cases above): each request beyond the block
    takes a block of its own, freed with its mark; the solve is the same to the last bit and leaves nothing."""
    reference, _, _ = counted(batch(name, 4, 2))
    core.cap_workspaces(4096)
    try:
        small, made, overflows = counted(batch(name, 4, 2))
    finally:
        core.cap_workspaces(0)
    assert overflows > 100 and made > overflows and core.live_allocations() == 0
    assert np.array_equal(small.q, reference.q) and np.array_equal(small.iterations, reference.iterations)
