"""Choosing parameters or outputs by name or kind, with errors that list what is valid."""

from __future__ import annotations

from ..errors import InputError, Problem


def choose(items: list, wanted, kinds: tuple[str, ...], what: str, where: str) -> list:
    """The ``items`` (each with ``name`` and ``kind``) named in ``wanted``: exact names first (a joint may be
    called like a kind), then kinds; unknown names and kinds the model lacks are one InputError."""
    by_name = {item.name: item for item in items}
    chosen, problems = [], []
    for text in wanted:
        if text in by_name:
            chosen.append(by_name[text])
        elif text in kinds:
            of_kind = [item for item in items if item.kind == text]
            if not of_kind:
                problems.append(Problem(where, text, f"the model has no {what} of this kind",
                                        f"one of the kinds it has: {', '.join(sorted({x.kind for x in items}))}"))
            chosen += of_kind
        else:
            known = ", ".join(list(by_name)[:12])
            article = "an" if what[0] in "aeiou" else "a"
            problems.append(Problem(where, text, f"unknown {what}",
                                    f"{article} {what} kind ({', '.join(kinds)}) or a name such as {known}, ..."))
    if not wanted:
        problems.append(Problem(where, "", f"no {what} asked for", f"at least one {what} name or kind"))
    if problems:
        raise InputError(problems)
    return list(dict.fromkeys(chosen))
