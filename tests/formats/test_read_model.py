"""shiftsim.formats.read_model: format dispatch and the MFK '#'-comment fallback."""

import json
from pathlib import Path

import pytest

from shiftsim.errors import ModelError
from shiftsim.formats import read_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_mfk_with_hash_comments_loads_with_a_warning(tmp_path):
    data = json.loads((ROOT / "models/mfk/excavator.json").read_text())
    text = json.dumps(data, indent=2).replace('"components": [', '"components": [  # machine and bucket', 1)
    path = tmp_path / "commented.json"
    path.write_text(text)
    spec = read_model(path)
    assert spec.format == "mfk"
    assert any("'#' comments removed" in w for w in spec.warnings)


def test_shift_with_hash_comments_is_refused_with_line_and_column(tmp_path):
    text = (ROOT / "models/shift/double_pendulum.json").read_text().replace("{", "{ # comment", 1)
    path = tmp_path / "commented.json"
    path.write_text(text)
    with pytest.raises(ModelError) as error:
        read_model(path)
    assert "line 1, column 3" in str(error.value) and "not valid JSON" in str(error.value)


@pytest.mark.parametrize("name, kind", [("models/shift/four_bar.json", "shift"), ("models/mfk/crane.json", "mfk"),
                                        ("models/mdx/chair.json", "mdx"), ("models/claraty/rover_arm_5dof.xml", "claraty"),
                                        ("tests/data/mirabuf/HingeTestFission_v1.mira", "mirabuf")])
def test_every_format_is_dispatched(name, kind):
    assert read_model(ROOT / name).format == kind


def test_unknown_extension_is_refused(tmp_path):
    path = tmp_path / "model.stl"
    path.write_text("solid")
    with pytest.raises(ModelError, match="unknown model file type '.stl'"):
        read_model(path)


@pytest.mark.parametrize("model, kind", [("shift/four_bar.json", "shift"), ("mfk/crane.json", "mfk"),
                                         ("mdx/chair.json", "mdx"), ("claraty/simple_two_link.xml", "claraty"),
                                         ("mirabuf/hinge_test.mira", "mirabuf")])
def test_every_format_is_read_through_the_registry_with_one_signature(model, kind):
    from shiftsim.formats import READERS

    path = ROOT / "models" / model
    spec = READERS[path.suffix](path, None)
    assert spec.format == kind and spec.bodies
    assert [b.name for b in read_model(path).bodies] == [b.name for b in spec.bodies]
    if path.suffix == ".json":  # a caller that has parsed the file passes its content: the same model
        given = READERS[".json"](path, json.loads(path.read_text()))
        assert [(j.name, j.type) for j in given.joints] == [(j.name, j.type) for j in spec.joints]


def test_an_unknown_suffix_names_the_known_ones(tmp_path):
    path = tmp_path / "model.urdf"
    path.write_text("<robot/>")
    with pytest.raises(ModelError, match=r"unknown model file type '\.urdf'.*one of \.json, \.json5, \.mfk, \.mira, \.xml"):
        read_model(path)
