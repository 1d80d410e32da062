"""``read_claraty(path) -> ModelSpec``: the CLARAty Mechanism_Model XML reader.

Parses the file safely (:mod:`.document`), reads the elements against the
DTD (:mod:`.elements`) and maps the records to a ModelSpec (:mod:`.build`).
All problems of a file are reported together as one
:class:`~shiftsim.errors.ModelError`.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import ModelError, Problems
from ...spec import ModelSpec
from .build import build_spec
from .document import parse_document
from .elements import BodyRecord, ElementReader

ROOT = "Mechanism_Model"


def read_claraty(path: str | Path) -> ModelSpec:
    """Read a CLARAty mechanism model (ME_Body form or Block_DH + Block_Joint table)."""
    path = Path(path)
    document = parse_document(path)
    problems = Problems(str(path), ModelError)
    warnings = list(document.warnings)
    root = document.root
    if root.tag != ROOT:
        problems.add(root.where, f"the root element is <{root.tag}>", f"<{ROOT}>")
        problems.raise_if_any()
    reader = ElementReader(problems, warnings)
    reader.check(root, ("name", "version"), {"ME_Body": (0, None), "Block_DH": (0, 1), "Block_Joint": (0, 1)})
    name = (reader.text(root, "name") or "").strip()
    version = root.attrib.get("version", "")
    if "version" not in root.attrib:
        reader.warn(root, "no version attribute")
    bodies = root.children_named("ME_Body")
    block_dh, block_joint = root.children_named("Block_DH"), root.children_named("Block_Joint")
    records: list[BodyRecord] = []
    layout = "bodies"
    if bodies and (block_dh or block_joint):
        problems.add(root.where, "both <ME_Body> elements and a DH table", "either <ME_Body> elements or "
                     "<Block_DH> + <Block_Joint>")
    elif bodies:
        records = [reader.body(element) for element in bodies]
    elif block_dh and block_joint:
        records = reader.table(block_dh[0], block_joint[0])
        layout = "table"
    else:
        present = "only <Block_DH>" if block_dh else "only <Block_Joint>" if block_joint else "no bodies"
        problems.add(root.where, f"{present} in <{ROOT}>", "<ME_Body> elements, or <Block_DH> and <Block_Joint>")
    reader.finish()
    spec = build_spec(path, name, version, layout, records, problems, warnings)
    problems.raise_if_any()
    return spec
