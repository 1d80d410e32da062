"""The safe expression language of CLARAty attributes and joint constraints."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shiftsim.errors import SolveError
from shiftsim.formats.claraty.expressions import (
    MAX_DEPTH,
    ExpressionError,
    coupling_functions,
    evaluate_number,
    parse_expression,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0.0),
        ("1.5", 1.5),
        (".25", 0.25),
        ("1.", 1.0),
        ("1e-3", 1e-3),
        ("2.5E+2", 250.0),
        ("M_PI", math.pi),
        ("M_PI_2", math.pi / 2),
        ("-M_PI", -math.pi),
        ("M_PI/2", math.pi / 2),
        ("-M_PI/4 + 1", 1 - math.pi / 4),
        ("2*3+4", 10.0),
        ("2*(3+4)", 14.0),
        ("10-4-3", 3.0),  # left associative
        ("24/4/3", 2.0),
        ("2^3^2", 512.0),  # right associative
        ("-2^2", -4.0),  # ^ binds tighter than unary minus
        ("2^-1", 0.5),
        ("--3", 3.0),
        ("+3", 3.0),
        ("3*-2", -6.0),
        ("sqrt(16) + cos(0)", 5.0),
        ("atan2(1, 1)", math.pi / 4),
        ("pow(2, 10)", 1024.0),
        ("abs(-3.5)", 3.5),
        ("exp(log(7))", 7.0),
        ("  M_SQRT2 * M_SQRT1_2 ", 1.0),
    ],
)
def test_constant_expressions_evaluate_like_math(text: str, expected: float) -> None:
    assert evaluate_number(text) == pytest.approx(expected, rel=1e-15, abs=1e-15)


def test_variables_are_listed_in_order_of_first_use() -> None:
    e = parse_expression("joint3 + 2*joint1 - joint3", ["joint1", "joint2", "joint3"])
    assert e.variables == ("joint3", "joint1")
    assert float(e.value({"joint1": 0.5, "joint3": 4.0})) == pytest.approx(1.0)


def test_constants_take_precedence_over_a_joint_of_the_same_name() -> None:
    assert float(parse_expression("M_PI", ["M_PI"]).value()) == pytest.approx(math.pi)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("__import__('os')", "unknown function '__import__'"),
        ("joint1.__class__", "unexpected character '.'"),
        ("open('x')", "unknown function 'open'"),
        ("eval(1)", "unknown function 'eval'"),
        ("lambda: 1", "unexpected character ':'"),
        ("lambda", "unknown name 'lambda'"),
        ("1; 2", "unexpected character ';'"),
        ("[1]", "unexpected character '['"),
        ("'a'", "unexpected character \"'\""),
        ("1 if 1 else 2", "unexpected 'if'"),
        ("joint9 + 1", "unknown name 'joint9'"),
        ("2**3", "'**' is not an operator"),
        ("1.2.3", "malformed number '1.2.3'"),
        ("2pi", "malformed number '2pi'"),
        ("1e", "malformed number '1e'"),
        ("M_PI/", "expected a number, a name or '(', found the end"),
        ("(1 + 2", "expected ')', found the end"),
        ("sin", "function 'sin' needs arguments"),
        ("atan2(1)", "atan2() takes 2 argument(s), got 1"),
        ("", "empty expression"),
        ("1 2", "unexpected '2'"),
    ],
)
def test_refused_input_says_what_is_wrong(text: str, fragment: str) -> None:
    with pytest.raises(ExpressionError) as error:
        parse_expression(text, ["joint1", "joint2"])
    assert fragment in str(error.value)


def test_unknown_name_suggests_close_names() -> None:
    with pytest.raises(ExpressionError) as error:
        parse_expression("2*jiont1", ["joint1", "joint2"])
    assert "joint1" in error.value.expected


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(ExpressionError, match=f"more than {MAX_DEPTH} levels"):
        parse_expression("(" * 1000 + "1" + ")" * 1000)
    with pytest.raises(ExpressionError, match="levels"):
        parse_expression("-" * 1000 + "1")
    parse_expression("(" * (MAX_DEPTH - 1) + "1" + ")" * (MAX_DEPTH - 1))


def test_very_long_text_is_refused() -> None:
    with pytest.raises(ExpressionError, match="longer than"):
        parse_expression("1+" * 3000 + "1")


def test_non_finite_constant_is_refused() -> None:
    with pytest.raises(ExpressionError, match="evaluates to inf"):
        evaluate_number("1/0")
    with pytest.raises(ExpressionError, match="evaluates to nan"):
        evaluate_number("sqrt(-1)")


def test_numeric_attributes_cannot_name_joints() -> None:
    with pytest.raises(ExpressionError, match="unknown name 'joint1'"):
        evaluate_number("joint1")


LAWS = [
    "2*joint1 + 0.1",
    "0.5*sin(joint1) + joint2^2",
    "atan2(sin(joint1), 2 + cos(joint2)) - sqrt(joint3 + 3)",
    "joint1*joint2/(1 + joint3^2) - tan(joint1/3)",
    "exp(-joint2) * log(2 + joint3) + abs(joint1)",
    "joint1^joint3 + pow(joint2 + 2, joint1)",
    "acos(joint1/2) + asin(joint2/3) + atan(joint3)",
]


def _central_difference(expression, point: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    out = np.empty(len(names))
    for k in range(len(names)):
        h = 1e-6
        plus, minus = point.copy(), point.copy()
        plus[k] += h
        minus[k] -= h
        out[k] = (float(expression.value(dict(zip(names, plus)))) - float(expression.value(dict(zip(names, minus))))) / (2 * h)
    return out


@pytest.mark.parametrize("law", LAWS)
def test_gradients_match_central_differences(law: str) -> None:
    names = ("joint1", "joint2", "joint3")
    expression = parse_expression(law, names)
    rng = np.random.default_rng(7)
    for point in rng.uniform([0.2, -0.9, 0.1], [0.9, 0.9, 0.9], size=(5, 3)):
        _, gradient = expression.value_and_gradient(dict(zip(names, point)), names)
        np.testing.assert_allclose(gradient, _central_difference(expression, point, names), rtol=1e-6, atol=1e-8)


def test_gradient_of_unused_name_is_zero_and_constant_law_has_zero_gradient() -> None:
    e = parse_expression("3*joint1", ["joint1", "joint2"])
    _, g = e.value_and_gradient({"joint1": 1.0, "joint2": 5.0}, ("joint1", "joint2"))
    np.testing.assert_array_equal(g, [3.0, 0.0])
    c = parse_expression("M_PI_4")
    v, g = c.value_and_gradient({"joint1": 1.0}, ("joint1",))
    assert float(v) == pytest.approx(math.pi / 4)
    np.testing.assert_array_equal(g, [0.0])


def test_power_with_constant_exponent_differentiates_negative_bases() -> None:
    e = parse_expression("joint1^3", ["joint1"])
    _, g = e.value_and_gradient({"joint1": -2.0}, ("joint1",))
    assert g[0] == pytest.approx(12.0)


def test_coupling_functions_work_on_single_values_and_batches() -> None:
    e = parse_expression("0.5*sin(joint1) + joint2^2", ["joint1", "joint2"])
    function, gradient = coupling_functions(e, ("joint1", "joint2"))
    assert function(np.array([0.3, 2.0])) == pytest.approx(0.5 * math.sin(0.3) + 4.0)
    np.testing.assert_allclose(gradient(np.array([0.3, 2.0])), [0.5 * math.cos(0.3), 4.0])
    batch = np.array([[0.3, 2.0], [1.0, -1.0], [0.0, 0.0]])
    np.testing.assert_allclose(function(batch), 0.5 * np.sin(batch[:, 0]) + batch[:, 1] ** 2)
    assert gradient(batch).shape == (3, 2)


def test_coupling_function_outside_its_domain_raises_a_solve_error() -> None:
    e = parse_expression("sqrt(joint1)", ["joint1"])
    function, _ = coupling_functions(e, ("joint1",))
    with pytest.raises(SolveError, match=r"'sqrt\(joint1\)' is undefined .* joint1=-1.0"):
        function(np.array([-1.0]))


# --- property test: random expressions evaluated alongside their value worked out with math ---
_leaf = st.one_of(
    st.floats(0.1, 9.0, allow_nan=False).map(lambda x: (repr(round(x, 3)), round(x, 3))),
    st.sampled_from([("M_PI", math.pi), ("M_PI_2", math.pi / 2), ("M_E", math.e)]),
)


def _extend(children):
    binary = st.tuples(children, st.sampled_from(["+", "-", "*"]), children).map(
        lambda t: (f"({t[0][0]} {t[1]} {t[2][0]})",
                   {"+": t[0][1] + t[2][1], "-": t[0][1] - t[2][1], "*": t[0][1] * t[2][1]}[t[1]]))
    unary = st.tuples(st.sampled_from(["sin", "cos", "-"]), children).map(
        lambda t: (f"-({t[1][0]})", -t[1][1]) if t[0] == "-" else
        (f"{t[0]}({t[1][0]})", getattr(math, t[0])(t[1][1])))
    return st.one_of(binary, unary)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.recursive(_leaf, _extend, max_leaves=12))
def test_random_expressions_evaluate_like_math(case) -> None:
    text, value = case
    assert evaluate_number(text) == pytest.approx(value, rel=1e-12, abs=1e-12)
