"""Reading report.html back in tests: its tables under their headings (no tests here)."""

from __future__ import annotations

from html.parser import HTMLParser


class Tables(HTMLParser):
    """The page's tables as (heading: the h2 or h3 above it, headers, rows of cell text, row classes)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[str], list[list[str]], list[str]]] = []
        self.heading, self.cell, self.text = "", None, None
        self.headers: list[str] = []
        self.rows: list[list[str]] = []
        self.classes: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "h3"):
            self.text = []
        elif tag == "table":
            self.headers, self.rows, self.classes = [], [], []
        elif tag == "tr":
            self.rows.append([])
            self.classes.append(dict(attrs).get("class") or "")
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag in ("h2", "h3"):
            self.heading, self.text = "".join(self.text), None
        elif tag in ("td", "th"):
            (self.headers if tag == "th" else self.rows[-1]).append("".join(self.cell))
            self.cell = None
        elif tag == "table":
            rows = [(r, c) for r, c in zip(self.rows, self.classes) if r]
            self.tables.append((self.heading, self.headers, [r for r, _ in rows], [c for _, c in rows]))

    def handle_data(self, data):
        for sink in (self.cell, self.text):
            if sink is not None:
                sink.append(data)
