"""Repairs for the typographic damage in CLARAty XML copied from documents.

The XML printed in the CLARAty design document (and files copied from it or
from a browser's XML view) is not well-formed: typographic quotes close
attribute values, non-breaking spaces indent lines, a ``- `` (the browser's
fold marker) precedes elements, ``Rotation`` repeats its ``angle`` attribute
three times, and the JPL file header puts ``--`` rulers inside comments.
:func:`repair` fixes exactly these five things, outside comments for the
first four and inside comments for the last, keeping every line where it was
(so parser line numbers still point into the user's file), and reports each
kind of fix once with the lines involved. Everything else is left to the XML
parser to refuse.
"""

from __future__ import annotations

import re
from typing import Callable

_TYPOGRAPHIC_DOUBLE_QUOTES = re.compile("[\u201c\u201d\u201e\u201f]")
_NO_BREAK_SPACE = re.compile("\u00a0")
_FOLD_MARKER = re.compile(r"(?m)^([ \t]*)-(?=[ \t]*(?:<|\r?$))")
_ROTATION_TAG = re.compile(r"<Rotation\b[^<>]*>")
_ANGLE_ATTRIBUTE = re.compile(r"(?<=\s)angle(?=\s*=)")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def _lines_text(lines: list[int], limit: int = 6) -> str:
    unique = sorted(set(lines))
    shown = ", ".join(str(n) for n in unique[:limit])
    more = f" and {len(unique) - limit} more" if len(unique) > limit else ""
    return f"line{'s' if len(unique) > 1 else ''} {shown}{more}"


def _number_angles(tag: str) -> str:
    counter = iter(range(1, 100))
    return _ANGLE_ATTRIBUTE.sub(lambda _: f"angle{next(counter)}", tag)


def _fix_ruler(comment: str) -> str:
    body = re.sub(r"-{2,}", lambda m: "=" * len(m.group()), comment[4:-3])
    if body.endswith("-"):
        body = body[:-1] + "="
    return f"<!--{body}-->"


# (pattern finding the damage, replacement, note) applied outside comments, in this order
_MARKUP_FIXES: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str], str]] = [
    (_TYPOGRAPHIC_DOUBLE_QUOTES, lambda m: '"', "typographic quotes (\u201c \u201d) read as '\"'"),
    (_NO_BREAK_SPACE, lambda m: " ", "non-breaking spaces read as spaces"),
    (_FOLD_MARKER, lambda m: m.group(1) + " ", "stray '-' before markup (a browser's fold marker) ignored"),
]


def repair(text: str) -> tuple[str, list[str]]:
    """Return ``(repaired text, notes)``; each note names a fix and the lines it touched."""
    pieces: list[tuple[bool, int, str]] = []  # (is comment, first line, text)
    position, line = 0, 1
    for match in _COMMENT.finditer(text):
        markup = text[position : match.start()]
        pieces.append((False, line, markup))
        line += markup.count("\n")
        pieces.append((True, line, match.group()))
        line += match.group().count("\n")
        position = match.end()
    pieces.append((False, line, text[position:]))

    touched: dict[str, list[int]] = {}

    def lines_of(piece: str, first: int, pattern: re.Pattern[str]) -> list[int]:
        return [first + piece.count("\n", 0, m.start()) for m in pattern.finditer(piece)]

    repaired: list[str] = []
    for is_comment, first, piece in pieces:
        if is_comment:
            if "--" in piece[4:-3] or piece[4:-3].endswith("-"):
                touched.setdefault("'--' inside a comment (not allowed in XML) ignored", []).append(first)
                piece = _fix_ruler(piece)
            repaired.append(piece)
            continue
        for pattern, replacement, note in _MARKUP_FIXES:
            found = lines_of(piece, first, pattern)
            if found:
                touched.setdefault(note, []).extend(found)
                piece = pattern.sub(replacement, piece)
        angle_tags = [m for m in _ROTATION_TAG.finditer(piece) if len(_ANGLE_ATTRIBUTE.findall(m.group())) > 1]
        if angle_tags:
            note = ("<Rotation> repeats the attribute 'angle' (not allowed in XML); "
                    "read in order as angle1, angle2, angle3")
            touched.setdefault(note, []).extend(first + piece.count("\n", 0, m.start()) for m in angle_tags)
            piece = _ROTATION_TAG.sub(lambda m: _number_angles(m.group()), piece)
        repaired.append(piece)
    order = [note for _, _, note in _MARKUP_FIXES]
    notes = sorted(touched, key=lambda n: order.index(n) if n in order else len(order))
    return "".join(repaired), [f"{_lines_text(touched[n])}: {n}" for n in notes]
