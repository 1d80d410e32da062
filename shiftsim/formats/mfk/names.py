"""Names of an MFK machine's parts in shiftsim's one naming scheme (``docs/naming.md``).

Names are paths whose parts ``:`` separates, the same for every format:

* component ``C`` (its index in the ``components`` array) is the assembly ``cC``;
* node ``boom`` of component 1 is the body ``c1:boom``;
* an articulated node value is the joint ``c1:boom.ry``; a node without one
  hangs by the rigid joint ``c1:boom``;
* a point of interest (a frame) and a collision shape are named on their
  node's body: ``c1:tracks:base_fr``, ``c1:tracks:tracks``;
* an MFK value reference outside its component carries the component's
  assembly name: ``c1:topcon.nodes.boom.ry`` (command line ``--set``, decoded
  replicate values, scenario geometry and placement values). The bare index
  (``1:topcon.nodes.boom.ry``) is not a name; :func:`canonical_bare_index`
  recognises it so that messages can give the canonical form.
"""

from __future__ import annotations

import re

ASSEMBLY = re.compile(r"^c(\d+)$")
BARE_INDEX = re.compile(r"^(\d+):(.*)$")


def assembly_name(component: int) -> str:
    """``c1`` for component 1."""
    return f"c{component}"


def body_name(component: int, node: str) -> str:
    """``c1:boom``: the body of node ``boom`` of component 1."""
    return f"{assembly_name(component)}:{node}"


def joint_name(component: int, node: str, value: str | None = None) -> str:
    """``c1:boom.ry`` for an articulated value, ``c1:boom`` for a node's rigid joint."""
    return body_name(component, node) + (f".{value}" if value else "")


def member_name(component: int, node: str, member: str) -> str:
    """``c1:tracks:base_fr``: a frame (point of interest) or shape on node ``tracks`` of component 1."""
    return f"{body_name(component, node)}:{member}"


def component_index(prefix: str) -> int | None:
    """The index of an assembly name ``cC``, or None when ``prefix`` is not one."""
    match = ASSEMBLY.match(prefix)
    return int(match.group(1)) if match else None


def canonical_bare_index(text: str) -> str | None:
    """``c1:rest`` when ``text`` is ``1:rest`` (the bare component index, not a name), else None."""
    match = BARE_INDEX.match(text)
    return f"{assembly_name(int(match.group(1)))}:{match.group(2)}" if match else None
