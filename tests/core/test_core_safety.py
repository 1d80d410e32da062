"""The compiled core cannot be made to read or write out of range from Python (issue 25 item 3).

Each hostile call runs in a subprocess: on a core that trusts its inputs it dies by a signal (or silently
writes past an array), which a test in this process could not survive. Here each must raise a Python error
naming the array, and the subprocess must exit normally.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from shiftsim import load_model
from shiftsim.core.layout import compiled, model_arrays
from shiftsim.core.library import core

FOUR_BAR = Path(__file__).resolve().parents[2] / "models" / "shift" / "four_bar.json"

PRELUDE = f"""
import dataclasses, pickle, numpy as np
import shiftsim
from shiftsim.core.library import core
from shiftsim.core.layout import compiled, model_arrays
m = shiftsim.load_model({str(FOUR_BAR)!r})
"""


def outcome(body: str) -> tuple[int, str]:
    """Run ``body`` after the prelude; its last expression's exception type and message are printed."""
    script = (PRELUDE + "try:\n" + textwrap.indent(textwrap.dedent(body).strip() + '\nprint("NO ERROR")', "    ")
              + "\nexcept Exception as error:\n    print(type(error).__name__ + ': ' + str(error))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout.strip() + done.stderr.strip()[-2000:]


@pytest.mark.slow
def test_model_arrays_are_read_only():
    code, out = outcome("""
        m.node_parent[1] = 10**9
        """)
    assert code == 0 and out.startswith("ValueError") and "read-only" in out, out


@pytest.mark.slow
@pytest.mark.parametrize("field, value, named", [
    ("node_parent", "np.array([-1] + [10**9] * (m.n_nodes - 1))", "parent"),
    ("frame_node", "np.full(len(m.frame_node), 10**9)", "frame_node"),
    ("node_coordinate", "np.full(m.n_nodes, 10**9)", "coordinate"),
    ("node_parent", "np.array([-1])", "items"),  # a short array: sizes disagree
])
def test_replaced_arrays_are_refused_when_compiled(field, value, named):
    code, out = outcome(f"""
        bad = dataclasses.replace(m, {field}={value})
        shiftsim.forward(bad, bad.q0)
        """)
    assert code == 0 and out.startswith("ValueError") and named in out, out


@pytest.mark.slow
def test_a_tampered_pickle_is_refused():
    code, out = outcome("""
        rebuild, arguments, state = m.__reduce_ex__(2)[:3]  # what pickle.loads does with a model's bytes
        state["node_parent"] = np.array([-1] + [10**9] * (m.n_nodes - 1))
        bad = rebuild(*arguments)
        getattr(bad, "__setstate__", bad.__dict__.update)(state)  # as pickle does
        bad = pickle.loads(pickle.dumps(bad))
        assert not bad.node_parent.flags.writeable
        shiftsim.forward(bad, bad.q0)
        """)
    assert code == 0 and out.startswith("ValueError") and "parent" in out, out


@pytest.mark.slow
def test_pivoted_rank_refuses_a_short_order():
    code, out = outcome("""
        a = np.random.default_rng(1).normal(size=(40, 4000))
        core.pivoted_rank(a, 1e-9, np.zeros(2, np.int64))
        """)
    assert code == 0 and out.startswith("ValueError") and "order" in out, out


@pytest.mark.slow
def test_polynomials_refuse_short_outputs():
    code, out = outcome("""
        count = 100000
        core.polynomials(np.ones((count, 3)), np.ones(count), np.zeros(1), np.zeros(1), np.zeros(1))
        """)
    assert code == 0 and out.startswith("ValueError") and "items" in out, out


@pytest.mark.slow
def test_terms_refuse_missing_q():
    code, out = outcome("""
        nq = m.nq
        core.terms(compiled(m), 1, None, None, None, None, None, None, None, None, None, None, None, None, None,
                   np.zeros(nq), np.zeros((nq, nq)), np.zeros(1))
        """)
    assert code == 0 and out.startswith("ValueError") and "q" in out, out


@pytest.mark.slow
def test_terms_refuse_an_unknown_term():
    code, out = outcome("""
        nq = m.nq
        core.terms(compiled(m), 7, np.zeros(nq), None, None, None, None, None, None, None, None, None, None, None,
                   None, np.zeros(nq), np.zeros((nq, nq)), np.zeros(1))
        """)
    assert code == 0 and out.startswith("ValueError") and "which" in out, out


def test_a_valid_model_compiles_and_its_arrays_stay_read_only():
    model = load_model(FOUR_BAR)
    assert compiled(model) is not None
    arrays = model_arrays(model)
    assert not any(x.flags.writeable for x in arrays[:-1]) and not any(x.flags.writeable for x in arrays.laws)
    with pytest.raises(ValueError):
        model.q0[0] = 1.0
    # the polynomial entry point still agrees with numpy on a sound call
    c = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]])
    x = np.array([0.7, -2.0])
    f, df, e = np.zeros(2), np.zeros(2), np.zeros(2)
    core.polynomials(c, x, f, df, e)
    for i in range(2):
        p = np.polynomial.Polynomial(c[i])
        assert f[i] == pytest.approx(p(x[i])) and df[i] == pytest.approx(p.deriv()(x[i]))
        assert e[i] == pytest.approx(p.integ()(x[i]))
