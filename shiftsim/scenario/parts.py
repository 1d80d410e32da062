"""A machine entry read from its model file, before composition and compilation; attachments.

A :class:`Part` is one ``machines[]`` entry with its model's own spec
(assemblies switched), what the scenario's ``joints`` left for the model's
joints after the format took its own names (MFK value references, Mdx pose
components), and how to make the machine's :class:`~.machines.Vocabulary`.

An :class:`Attachment` is a machine joined into its host's model at a mount
frame with :func:`shiftsim.compose.attach`; :func:`compose` applies a list of
them in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..compose import attach
from ..spec import ModelSpec
from .machines import PLAIN, Vocabulary
from .placement import Placement


@dataclass(frozen=True)
class Attachment:
    """Machine ``prefix`` (its spec with its own attachments) mounted at frame ``mount`` (``body:frame``)
    of its host, its ground at pose ``offset`` (4x4) in the mount frame."""

    mount: str
    prefix: str
    spec: ModelSpec
    offset: np.ndarray


def compose(spec: ModelSpec, attachments: tuple[Attachment, ...] | list[Attachment]) -> ModelSpec:
    """``spec`` with every attachment joined in order (a mount may name a frame of an earlier one)."""
    for a in attachments:
        spec = attach(spec, a.mount, a.spec, a.prefix, placement=a.offset)
    return spec


VocabularyMaker = Callable[[tuple[Attachment, ...]], Vocabulary]


def plain(attachments: tuple[Attachment, ...]) -> Vocabulary:
    """The vocabulary of a model without names of its own format: every name is a joint."""
    return PLAIN


@dataclass
class Part:
    """One ``machines[index]`` entry read from its model file.

    ``placement``: world <- model for a machine standing in the world (an MFK
    machine's site placement included); the mounting offset in the mount frame
    for an attached one. ``joints``: the entry's ``joints`` that name model
    joints. ``vocabulary`` makes the machine's vocabulary once its attachments
    are known (an MFK machine rebuilds its model with them).
    """

    index: int
    entry: dict[str, Any]
    source: Path
    spec: ModelSpec
    placement: Placement
    joints: dict[str, Any]
    vocabulary: VocabularyMaker = plain

    @property
    def id(self) -> str:
        return self.entry["id"]

    @property
    def where(self) -> str:
        return f"machines[{self.index}]"
