"""The shared typed-reading checks (shiftsim.typed) and the rotation rule (shiftsim.formats.rotations)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from shiftsim import typed
from shiftsim.formats.rotations import ROTATION_TOLERANCE, RotationRounding, nearest_rotation
from shiftsim.typed import Mismatch


@pytest.mark.parametrize("value, words", [
    (None, "null"), (True, "a boolean"), (3, "the number 3"), (2.5, "the number 2.5"),
    ("ab", "the string 'ab'"), ([1], "an array of 1 item"), ([1, 2], "an array of 2 items"), ({}, "an object"),
    (10**400, "an integer of about 401 digits"), (float("nan"), "the number NaN"),
])
def test_one_wording_of_json_types(value, words):
    assert typed.json_type(value) == words


@pytest.mark.slow
def test_echoes_are_capped_even_for_huge_values():
    huge = list(range(1_000_000))
    text = typed.shown(huge)
    assert len(text) == typed.ECHO_LIMIT and text.startswith("[0, 1, 2") and text.endswith("...")
    assert len(typed.json_type("x" * 10**6)) < typed.ECHO_LIMIT + 20
    assert typed.shown({"a": [1, None, True], "b": "c"}) == "{'a': [1, null, true], 'b': 'c'}"
    nested: list = []
    for _ in range(100_000):  # deeper than Python's recursion limit: shown() must not recurse
        nested = [nested]
    assert typed.shown(nested).startswith("[[[[")


@pytest.mark.parametrize("value", [True, "1", None, [1], float("nan"), float("inf"), -float("inf"), 10**401])
def test_number_refuses_non_numbers_and_non_finite(value):
    with pytest.raises(Mismatch) as error:
        typed.number(value, "m")
    assert error.value.expected.startswith("a finite number (m)")
    assert len(error.value.what) < typed.ECHO_LIMIT + 50


def test_number_bounds_by_unit():
    assert typed.number(9.81, "m/s^2") == 9.81
    assert typed.number(10**6, "m") == 1e6
    for unit, value in (("m", 1.5e6), ("kg", 1e308), ("m/s^2", 1e308), ("", 1e13)):
        with pytest.raises(Mismatch) as error:
            typed.number(value, unit)
        assert error.value.what == f"is {value!r}"
        assert f"{typed.bound_of(unit):g}" in error.value.expected
    with pytest.raises(Mismatch) as error:
        typed.number(-1, "kg", minimum=0.0)
    assert "at least 0" in error.value.expected


def test_integer_string_array_object():
    assert typed.integer(3.0) == 3 and isinstance(typed.integer(3.0), int)
    for bad in (2.5, "3", True, float("nan"), 10**30):
        with pytest.raises(Mismatch):
            typed.integer(bad)
    assert typed.string("b", ("a", "b")) == "b"
    with pytest.raises(Mismatch) as error:
        typed.string("c", ("a", "b"))
    assert error.value.expected == "one of 'a', 'b'"
    assert typed.array([1, 2], 2) == [1, 2]
    with pytest.raises(Mismatch):
        typed.array([1], 2)
    with pytest.raises(Mismatch) as error:
        typed.obj([])
    assert error.value.what == "is an array of 0 items"


def test_vector_names_the_bad_item_and_direction_normalizes():
    np.testing.assert_array_equal(typed.vector([1, 2, 3], 3), [1.0, 2.0, 3.0])
    with pytest.raises(Mismatch) as error:
        typed.vector([0, 1e308, 0], 3)
    assert error.value.place == "[1]" and error.value.what == "is 1e+308"
    np.testing.assert_allclose(typed.direction([0, 3, 4]), [0, 0.6, 0.8])
    with pytest.raises(Mismatch) as error:
        typed.direction([0, 0, 0])
    assert "zero length" in error.value.what


def rounded(matrix: np.ndarray, decimals: int) -> np.ndarray:
    return np.round(matrix, decimals)


def test_rounded_rotation_is_accepted_and_made_exact():
    exact = Rotation.from_euler("z", 2, degrees=True).as_matrix()
    typed_in = rounded(exact, 5)  # as a file types it: |R^T R - I| ~ 1e-6
    rotation, deviation = nearest_rotation(typed_in)
    assert deviation == pytest.approx(np.max(np.abs(typed_in.T @ typed_in - np.eye(3))))
    assert deviation > 1e-6
    np.testing.assert_allclose(rotation.T @ rotation, np.eye(3), atol=1e-14)
    assert np.linalg.det(rotation) == pytest.approx(1.0, abs=1e-14)
    # the nearest rotation is at least as close to the typed matrix as the exact one it was rounded from
    assert np.linalg.norm(rotation - typed_in) <= np.linalg.norm(exact - typed_in) + 1e-15
    np.testing.assert_allclose(rotation, exact, atol=1e-5)


def test_rotation_beyond_tolerance_or_reflection_is_refused_with_the_number():
    skew = np.eye(3)
    skew[1, 2] = 0.01
    with pytest.raises(Mismatch) as error:
        nearest_rotation(skew)
    assert "max |R^T R - I| = 0.01" in error.value.what and f"{ROTATION_TOLERANCE:g}" in error.value.expected
    with pytest.raises(Mismatch) as error:
        nearest_rotation(np.diag([1.0, 1.0, -1.0]))
    assert "reflection" in error.value.what and "det R = -1" in error.value.what


def test_rounding_warns_once_with_the_worst_place():
    rounding = RotationRounding()
    exact = Rotation.from_euler("xyz", [10, 20, 30], degrees=True).as_matrix()
    rounding.rotation(exact, "a")  # exact: no notice
    assert rounding.warning() is None
    rounding.rotation(rounded(exact, 5), "b")
    rounding.rotation(rounded(exact, 3), "c")
    rounding.rotation(rounded(exact, 4), "d")
    text = rounding.warning()
    assert text.startswith("3 rotation matrices are not orthonormal") and "at c)" in text


def test_rounding_warning_names_what_was_read():
    """CLARAty's quaternions are named as rotations, one and several."""
    exact = Rotation.from_euler("xyz", [10, 20, 30], degrees=True).as_matrix()
    rounding = RotationRounding()
    rounding.rotation(rounded(exact, 4), "q1")
    assert rounding.warning("a rotation", "rotations").startswith("a rotation is not orthonormal (worst ")
    rounding.rotation(rounded(exact, 3), "q2")
    assert rounding.warning("a rotation", "rotations").startswith("2 rotations are not orthonormal (worst ")
    assert "at q2); replaced by the nearest rotation" in rounding.warning()
