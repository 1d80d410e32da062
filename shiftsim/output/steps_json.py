"""results.json's ``steps`` as JSON text, written a block of steps at a time.

A step of the block path (:class:`~shiftsim.scenario.chain.BlockStep`) is a row of its block's arrays, and every step
of a block has the same entries (tracked joints, frames, bodies, pin reactions) with different numbers. So a block's
steps are written from one template: the step object of results.json with a placeholder for each number
(:meth:`~shiftsim.scenario.chain.StepBlock.entries` given placeholder rows), serialized once and cut at the
placeholders; each step is the template's pieces with its numbers' texts between them, the texts of a block's numbers
written by orjson at once (as it writes each float of a step object: the same text). Other
steps (the step path; a block step with collisions or remarks, which its block does not hold) are written from their
step objects (:meth:`~shiftsim.scenario.runner.StepResult.as_dict`). The text parses to the document of
``[step.as_dict() for step in steps]``, number for number.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

import numpy as np
import orjson

from ..jsonio import dumps
from ..scenario.chain import BlockStep, StepBlock
from ..scenario.runner import StepResult

_PLACE = re.compile(r'"\\u0000(\d+)"')  # a placeholder as the template's JSON holds it


class _Place:
    """A placeholder for one number of a block's step: ``source`` ``values``, ``extras`` or a step field, ``column``."""

    __slots__ = ("source", "column")

    def __init__(self, source: str, column: int = 0):
        self.source, self.column = source, column


class _Row:
    """A row of placeholders standing for a row of a block's ``source`` array (items and slices, as a list)."""

    def __init__(self, source: str, width: int):
        self.source, self.width = source, width

    def __len__(self) -> int:
        return self.width

    def __getitem__(self, at: int | slice) -> Any:
        if isinstance(at, slice):
            return [_Place(self.source, k) for k in range(*at.indices(self.width))]
        return _Place(self.source, range(self.width)[at])


def steps_json(steps: list[StepResult]) -> bytes:
    """The JSON array of the step objects of ``steps`` (see the module docstring), a step a line, UTF-8."""
    texts: list[str] = []
    for block, group in _groups(steps):
        if block is None:
            texts += [dumps(step.as_dict(), indent=False)[:-1].decode() for step in group]
        else:
            texts += _block_texts(block, np.array([step.row for step in group]))
    return ("[\n" + ",\n".join(texts) + "\n]").encode()


def _groups(steps: list[StepResult]) -> Iterator[tuple[StepBlock | None, list[StepResult]]]:
    """Runs of consecutive steps: of one block, written from its arrays (block None: written one by one)."""
    group: list[StepResult] = []
    block = None
    for step in steps:
        own = step.block if isinstance(step, BlockStep) and step.collisions is None and not step.remarks else None
        if group and (own is not block or own is None):
            yield block, group
            group = []
        block = own
        group.append(step)
    if group:
        yield block, group


def _block_texts(block: StepBlock, rows: np.ndarray) -> list[str]:
    """The step objects of ``block``'s ``rows`` (k,) as JSON texts, from its template (see the module docstring)."""
    values, extras = block.values, block.extras
    names = block.scenario.sweep.names
    template: dict[str, Any] = {
        "index": _Place("index"), "parameters": {name: _Place("parameters", j) for j, name in enumerate(names)},
        "status": "converged", "iterations": _Place("iterations"), "residual": _Place("residual"),
        "stable": _Place("stable"), "stability": _Place("stability")}
    numbers, more = _Row("values", values.shape[1]), _Row("extras", extras.shape[1])
    for key, kind in (("joints", "joint"), ("frames", "frame"), ("bodies", "body"), ("pin_reactions", "pin")):
        entries = block.entries(kind, numbers, more)
        if entries or kind != "pin":  # as BlockStep.as_dict: pin reactions only when there are some
            template[key] = entries
    places: list[_Place] = []

    def mark(place: _Place) -> str:
        places.append(place)
        return f"\x00{len(places) - 1}"

    pieces = _PLACE.split(orjson.dumps(template, default=mark).decode())  # text, place number, text, ..., text
    stability = block.stability[rows].tolist()
    quoted = {text: orjson.dumps(str(text)).decode() for text in set(stability)}  # each verdict's JSON string, once
    columns = {"index": [str(int(i)) for i in block.indices[rows]],
               "iterations": [str(int(i)) for i in block.iterations[rows]],
               "residual": _json_numbers(block.residual[rows].astype(float)),
               "stable": ["true" if text == "stable" else "false" for text in stability],
               "stability": [quoted[text] for text in stability]}
    arrays = {"values": values[rows], "extras": extras[rows], "parameters": block.table[rows].astype(float)}
    used = {source: sorted({p.column for p in places if p.source == source}) for source in arrays}
    texts = {source: dict(zip(used[source], _json_numbers(array[:, used[source]]).T))
             for source, array in arrays.items() if used[source]}
    table = np.empty((len(rows), len(pieces)), dtype=object)
    table[:, 0::2] = np.array(pieces[0::2], dtype=object)
    for k, number in enumerate(pieces[1::2]):
        place = places[int(number)]
        table[:, 2 * k + 1] = texts[place.source][place.column] if place.source in texts else columns[place.source]
    return list(map("".join, table.tolist()))


def _json_numbers(numbers: np.ndarray) -> np.ndarray:
    """JSON texts of float ``numbers`` (any shape, the same shape out), as orjson writes a float (``null`` for NaN and
    infinities): the whole array serialized at once and cut at its commas."""
    if not numbers.size:
        return np.empty(numbers.shape, dtype=object)
    flat = orjson.dumps(np.ascontiguousarray(numbers, dtype=float).ravel(), option=orjson.OPT_SERIALIZE_NUMPY)
    return np.array(flat.decode()[1:-1].split(","), dtype=object).reshape(numbers.shape)


__all__ = ["steps_json"]
