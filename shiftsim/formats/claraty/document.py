"""Reading a CLARAty XML file into a small element tree that knows its place.

Parsing goes through :mod:`defusedxml` (SAX driver): entity declarations
(the "billion laughs" bomb, external entities) are refused, and an external
DTD named by ``<!DOCTYPE ... SYSTEM "...">`` is never fetched. Each
:class:`Element` keeps its line number and a readable path such as
``Mechanism_Model/ME_Body[@name='link2']/ME_Joint`` for error messages.
Before parsing, :func:`~.lenient.repair` undoes the typographic damage of
documents that print CLARAty XML; its notes become warnings.
"""

from __future__ import annotations

import codecs
import io
import re
import xml.sax
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from defusedxml.common import DefusedXmlException, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.expatreader import DefusedExpatParser

from ...errors import ModelError, Problem
from .lenient import repair

MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 100
"""Deepest element nesting read (a Mechanism_Model nests about six levels); deeper files are refused."""
_DECLARED_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_DECLARATION_ENCODING = re.compile(r"""^(\s*<\?xml[^>]*?encoding\s*=\s*)(["'])[A-Za-z0-9._-]+\2""")


@dataclass
class Element:
    """An XML element: ``tag``, ``attrib``, child elements, first non-blank ``text``, ``line``, ``path``."""

    tag: str
    attrib: dict[str, str]
    line: int
    children: list[Element] = field(default_factory=list)
    text: str = ""
    text_line: int = 0
    path: str = ""

    @property
    def where(self) -> str:
        return f"{self.path} (line {self.line})"

    def children_named(self, tag: str) -> list[Element]:
        return [c for c in self.children if c.tag == tag]


@dataclass
class Document:
    root: Element
    warnings: list[str]


class _DtdSubsetSkippingParser(DefusedExpatParser):
    """defusedxml's parser, except that the external DTD subset is skipped instead of refused.

    Entity declarations stay forbidden, so no other external reference can
    exist; a ``<!DOCTYPE ... SYSTEM "x.dtd">`` line is common in CLARAty files
    and is simply not loaded (the DTD's defaults are applied by the reader).
    """

    def defused_external_entity_ref_handler(self, context, base, sysid, pubid):
        if context is None:  # the external DTD subset named by <!DOCTYPE ... SYSTEM ...>
            return 1
        raise ExternalReferenceForbidden(context, base, sysid, pubid)


class _TooDeep(Exception):
    """Raised by the SAX handler at the first element nested deeper than :data:`MAX_DEPTH`."""

    def __init__(self, tag: str, line: int):
        super().__init__(tag)
        self.tag, self.line = tag, line


class _TreeBuilder(xml.sax.handler.ContentHandler):
    def __init__(self) -> None:
        super().__init__()
        self.locator = None
        self.stack: list[Element] = []
        self.root: Element | None = None

    def setDocumentLocator(self, locator) -> None:  # noqa: N802 (SAX API)
        self.locator = locator

    def startElement(self, name, attrs) -> None:  # noqa: N802
        element = Element(name, dict(attrs), self.locator.getLineNumber() if self.locator else 0)
        if len(self.stack) >= MAX_DEPTH:
            raise _TooDeep(name, element.line)
        if self.stack:
            self.stack[-1].children.append(element)
        else:
            self.root = element
        self.stack.append(element)

    def endElement(self, name) -> None:  # noqa: N802
        self.stack.pop()

    def characters(self, content) -> None:
        element = self.stack[-1] if self.stack else None
        if element is not None and content.strip() and not element.text:
            element.text = content.strip()
            element.text_line = self.locator.getLineNumber() if self.locator else 0


def _assign_paths(element: Element, path: str) -> None:
    """Give every element its path: named steps as ``Tag[@name='x']``, repeated unnamed ones as ``Tag[k]``."""
    element.path = path
    counts = Counter(child.tag for child in element.children)
    seen: Counter[str] = Counter()
    for child in element.children:
        seen[child.tag] += 1
        if "name" in child.attrib:
            step = f"{child.tag}[@name='{child.attrib['name']}']"
        elif counts[child.tag] > 1:
            step = f"{child.tag}[{seen[child.tag]}]"
        else:
            step = child.tag
        _assign_paths(child, f"{path}/{step}")


def _decode(path: Path, raw: bytes) -> tuple[str, list[str]]:
    file = str(path)
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return raw.decode("utf-16"), []
        except UnicodeDecodeError:
            raise ModelError([Problem(file, "", "broken UTF-16 text", "a UTF-8 or UTF-16 file")]) from None
    match = _DECLARED_ENCODING.match(raw)
    declared = match.group(1).decode("ascii") if match else "utf-8"
    try:
        return raw.decode(declared), []
    except LookupError:
        raise ModelError([Problem(file, "line 1", f"unknown encoding {declared!r} in the XML declaration",
                                  "UTF-8, US-ASCII or ISO-8859-1")]) from None
    except UnicodeDecodeError as error:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            line = raw.count(b"\n", 0, error.start) + 1
            raise ModelError([Problem(file, f"line {line}", f"bytes that are not {declared} text",
                                      f"text in the declared encoding {declared}")]) from None
        line = raw.count(b"\n", 0, error.start) + 1
        return text, [f"{file}: line {line}: the file declares {declared} but holds UTF-8 text; read as UTF-8"]


def parse_document(path: str | Path) -> Document:
    """Parse ``path`` into an :class:`Element` tree; raise :class:`ModelError` for anything not XML."""
    path = Path(path)
    file = str(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ModelError([Problem(file, "", f"file larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB",
                                      "a mechanism model file")])
        raw = path.read_bytes()
    except OSError as error:
        raise ModelError([Problem(file, "", f"cannot read the file: {error.strerror}", "a readable file")]) from None
    text, warnings = _decode(path, raw)
    text, notes = repair(text)
    warnings += [f"{file}: {note}" for note in notes]
    text = _DECLARATION_ENCODING.sub(lambda m: f"{m.group(1)}{m.group(2)}UTF-8{m.group(2)}", text, count=1)

    builder = _TreeBuilder()
    parser = _DtdSubsetSkippingParser()
    parser.setContentHandler(builder)
    parser.setErrorHandler(xml.sax.handler.ErrorHandler())
    try:
        parser.parse(io.BytesIO(text.encode("utf-8")))
    except xml.sax.SAXParseException as error:
        where = f"line {error.getLineNumber()}, column {error.getColumnNumber() + 1}"
        message = error.getMessage()
        hint = "a well-formed XML document (a Mechanism_Model)"
        if "duplicate attribute" in message:
            hint = "each attribute at most once per element"
        raise ModelError([Problem(file, where, f"not well-formed XML: {message}", hint)]) from None
    except EntitiesForbidden as error:
        raise ModelError([Problem(file, "DOCTYPE", f"declares the entity {error.name!r}; entity declarations are "
                                  "refused (they enable 'billion laughs' XML bombs and reading other files)",
                                  "XML without <!ENTITY> declarations")]) from None
    except ExternalReferenceForbidden as error:
        raise ModelError([Problem(file, "DOCTYPE", f"refers to the external resource {error.sysid!r}; refused",
                                  "XML without external references")]) from None
    except _TooDeep as error:
        raise ModelError([Problem(file, f"line {error.line}", f"element <{error.tag}> is nested more than "
                                  f"{MAX_DEPTH} levels deep", f"at most {MAX_DEPTH} levels of elements")]) from None
    except DefusedXmlException as error:
        raise ModelError([Problem(file, "", f"refused unsafe XML: {error}", "plain XML")]) from None
    if builder.root is None:
        raise ModelError([Problem(file, "", "no XML element found", "a Mechanism_Model document")])
    _assign_paths(builder.root, builder.root.tag)
    return Document(builder.root, warnings)
