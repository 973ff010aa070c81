"""Link every "Authors year" citation in the documentation to the bibliography.

Docstrings and pages cite papers as prose: "Guo et al. 2017", "Guo et al.
(2017)", "Chidambaram & Ge's (2024)", "Kirchenbauer, Oaks & Heim (2022, App.
B)". This extension reads ``references.bib``, builds from every entry the ways
its authors are written (one author: "Platt"; two: "Gruber & Buettner" or
"Gruber and Buettner"; three or more: "Guo et al." or the full list
"Guo, Pleiss, Sun & Weinberger"), and after each document is read turns every
such author text followed by the entry's year into a link to the entry on the
bibliography page (the ``.. bibliography::`` of sphinxcontrib-bibtex, whose
entries carry the ids ``cite-<key>``). The text stays as written.

It works on the doctree, so it sees docstrings (autodoc, autosummary tables),
Markdown pages (MyST) and the gallery alike, and it leaves code, literals,
titles, links and math alone. A citation whose authors are known but whose
year is not, or an "X et al. YEAR" / "X & Y YEAR" whose authors are not in
the bibliography, is a build warning (an error under ``-W``).

The matching functions need neither Sphinx nor docutils, so the tests use
them on the docstrings directly (``tests/test_docs_site.py``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BibEntry",
    "Citation",
    "CitationTable",
    "parse_bib",
    "find_candidates",
    "fold",
    "anchor",
    "setup",
]

YEAR = r"(?:19|20)\d\d"

#: Capitalised words followed by a year that are not authors (single-name candidates only).
NOT_AUTHORS = frozenset(
    """January February March April May June July August September October November
    December Spring Summer Autumn Fall Winter In Since Until From Before After As By Of
    Up For On At To Version Python NumPy SciPy Julia Table Figure Fig Section Appendix
    Chapter Eq Example Theorem Lemma Proposition NeurIPS Sept Dec Nov Oct Jan Feb Mar
    Apr Jun Jul Aug Sep Copyright""".split()
)

_FOLD_SPECIAL = {
    "ł": "l",
    "Ł": "L",
    "ø": "o",
    "Ø": "O",
    "đ": "d",
    "Đ": "D",
    "ß": "s",
    "æ": "a",
    "Æ": "A",
    "œ": "o",
    "Œ": "O",
    "ı": "i",
    "’": "'",
    "‘": "'",
    "\u00a0": " ",
}


def fold(text: str) -> str:
    """Fold ``text`` to ASCII letters one character for one: "Błasiok" -> "Blasiok".

    The result has the length of ``text``, so positions found in it are
    positions in ``text``.
    """
    if text.isascii():
        return text
    out = []
    for ch in text:
        if ch.isascii():
            out.append(ch)
        elif ch in _FOLD_SPECIAL:
            out.append(_FOLD_SPECIAL[ch])
        else:
            base = unicodedata.normalize("NFKD", ch)
            base = "".join(c for c in base if not unicodedata.combining(c))
            out.append(base[0] if len(base) == 1 and base.isascii() else ch)
    return "".join(out)


def anchor(key: str) -> str:
    """The HTML id of ``key``'s entry on the bibliography page (``bibtex_cite_id``)."""
    return "cite-" + re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")


# --------------------------------------------------------------------------- BibTeX


@dataclass(frozen=True)
class BibEntry:
    """One entry of the ``.bib`` file: its key, authors' surnames and year."""

    key: str
    surnames: tuple[str, ...]
    year: str
    title: str = ""


_LATEX = {
    r"\l": "ł",
    r"\L": "Ł",
    r"\o": "ø",
    r"\O": "Ø",
    r"\ss": "ß",
    r"\&": "&",
}
_ACCENT = {"'": "\u0301", "`": "\u0300", '"': "\u0308", "^": "\u0302", "~": "\u0303", "c": "\u0327"}


def _delatex(text: str) -> str:
    text = re.sub(
        r"\{?\\([`'\"^~c])\s*\{?([A-Za-z])\}?\}?",
        lambda m: unicodedata.normalize("NFC", m.group(2) + _ACCENT[m.group(1)]),
        text,
    )
    text = re.sub(
        r"\{?(\\(?:ss|l|L|o|O|&))\{?\}?\}?(?![A-Za-z])", lambda m: _LATEX[m.group(1)], text
    )
    return re.sub(r"\s+", " ", text.replace("{", "").replace("}", "")).strip()


def _split_top(text: str, sep: str) -> list[str]:
    """Split ``text`` at ``sep`` (a regex) outside braces."""
    parts, depth, start, i = [], 0, 0, 0
    pattern = re.compile(sep)
    while i < len(text):
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            m = pattern.match(text, i)
            if m and m.end() > i:
                parts.append(text[start:i])
                start = i = m.end()
                continue
        i += 1
    parts.append(text[start:])
    return parts


def _surname(name: str) -> str:
    """Surname of one BibTeX author: "Silva Filho, Telmo" or "Telmo {Silva Filho}"."""
    parts = _split_top(name.strip(), ",")
    if len(parts) > 1:
        return _delatex(parts[0])
    words = _split_top(parts[0], r"\s+")
    return _delatex(words[-1]) if words else ""


def _read_value(text: str, i: int) -> tuple[str, int]:
    """Read one field value starting at ``text[i]``; return it and the index after it."""
    if text[i] == "{":
        depth, j = 0, i
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    return text[i + 1 : j], j + 1
            j += 1
        raise ValueError("unbalanced braces in a .bib value")
    if text[i] == '"':
        depth, j = 0, i + 1
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
            elif text[j] == '"' and depth == 0:
                return text[i + 1 : j], j + 1
            j += 1
        raise ValueError("unterminated quoted .bib value")
    m = re.compile(r"[^,}\s]+").match(text, i)
    if not m:
        raise ValueError(f"cannot read a .bib value at {text[i : i + 30]!r}")
    return m.group(0), m.end()


def parse_bib(text: str) -> list[BibEntry]:
    """Parse the entries of a ``.bib`` file (authors, year, title; enough to link citations).

    Raises
    ------
    ValueError
        For an entry without author (or editor) or year, or a malformed field.
    """
    entries = []
    pos = 0
    head = re.compile(r"@\s*(\w+)\s*[{(]\s*")
    while True:
        m = head.search(text, pos)
        if not m:
            break
        kind = m.group(1).lower()
        i = m.end()
        if kind in {"comment", "preamble", "string"}:
            _, pos = _read_value(text, m.end() - 1) if text[m.end() - 1] == "{" else ("", i)
            continue
        km = re.compile(r"([^,\s]+)\s*,").match(text, i)
        if not km:
            raise ValueError(f"no key after {m.group(0)!r}")
        key = km.group(1)
        i = km.end()
        fields: dict[str, str] = {}
        while True:
            fm = re.compile(r"\s*,?\s*([A-Za-z][\w-]*)\s*=\s*").match(text, i)
            if not fm:
                break
            value, i = _read_value(text, fm.end())
            fields[fm.group(1).lower()] = value
        end = re.compile(r"\s*,?\s*[})]").match(text, i)
        if not end:
            raise ValueError(f"cannot parse entry {key!r} near {text[i : i + 40]!r}")
        pos = end.end()
        people = fields.get("author") or fields.get("editor")
        year = re.search(r"\d{4}", fields.get("year", ""))
        if not people or not year:
            raise ValueError(f"entry {key!r} needs an author and a year")
        surnames = tuple(
            _surname(n) for n in _split_top(people, r"\s+and\s+") if n.strip() != "others"
        )
        entries.append(BibEntry(key, surnames, year.group(0), _delatex(fields.get("title", ""))))
    return entries


# --------------------------------------------------------------------------- matching


@dataclass(frozen=True)
class Citation:
    """A citation found in a text.

    ``start:end`` is the whole citation ("Guo et al. (2017, §4.1" included),
    ``start:link_end`` the part to link, ``key`` the entry (None when no entry
    has these authors and this year) and ``text`` the citation as written.
    """

    start: int
    end: int
    link_end: int
    key: str | None
    text: str
    authors: str
    year: str


def _norm_authors(text: str) -> str:
    text = fold(re.sub(r"\s+", " ", text)).strip()
    text = re.sub(r",? (?:&|and) ", " & ", text)
    return re.sub(r" et al\.?$", " et al.", text)


def _author_forms(surnames: tuple[str, ...]) -> list[str]:
    names = [fold(s) for s in surnames]
    if len(names) == 1:
        return names
    forms = [f"{names[0]} et al."]
    forms.append(", ".join(names[:-1]) + " & " + names[-1])
    return forms


def _name_pattern(name: str) -> str:
    return r"\s+".join(re.escape(w) for w in name.split())


def _form_pattern(surnames: tuple[str, ...]) -> list[str]:
    names = [_name_pattern(fold(s)) for s in surnames]
    if len(names) == 1:
        return names
    etal = names[0] + r"\s+et\s+al\.?"
    full = r",\s+".join(names[:-1]) + r",?\s+(?:&|and)\s+" + names[-1]
    return [full, etal]


class CitationTable:
    """The citations the bibliography can resolve, keyed by authors and year."""

    def __init__(self, entries: Iterable[BibEntry]):
        self.entries = {e.key: e for e in entries}
        self.lookup: dict[tuple[str, str], set[str]] = {}
        patterns: set[str] = set()
        for e in self.entries.values():
            for form in _author_forms(e.surnames):
                self.lookup.setdefault((_norm_authors(form), e.year), set()).add(e.key)
            patterns.update(_form_pattern(e.surnames))
        authors = "|".join(sorted(patterns, key=len, reverse=True)) or r"(?!x)x"
        self.regex = re.compile(
            rf"(?<![\w-])(?P<authors>{authors})(?P<poss>'s)?"
            rf"(?:,?\s+(?P<y1>{YEAR})(?![\w])"
            rf"|\s*\((?P<venue>[A-Z][A-Za-z]*\s+)?(?P<y2>{YEAR})(?![\w])(?P<close>\))?)"
        )
        self.known_authors = {a for a, _ in self.lookup}

    @classmethod
    def from_bib(cls, path: str | Path) -> CitationTable:
        return cls(parse_bib(Path(path).read_text(encoding="utf-8-sig")))

    def resolve(self, authors: str, year: str) -> str | None:
        """The key of the entry with these authors (as written) and year, or None."""
        keys = self.lookup.get((_norm_authors(authors), year), set())
        return next(iter(keys)) if len(keys) == 1 else None

    def find(self, text: str) -> list[Citation]:
        """Every citation of a known author list in ``text`` (resolved or not)."""
        found = []
        for m in self.regex.finditer(fold(text)):
            year = m.group("y1") or m.group("y2")
            authors = text[m.start("authors") : m.end("authors")]
            if m.group("y1"):
                link_end = m.end("y1")
            elif m.group("close") and not m.group("venue"):
                link_end = m.end("close")
            else:
                link_end = m.end("poss") if m.group("poss") else m.end("authors")
            found.append(
                Citation(
                    start=m.start(),
                    end=m.end(),
                    link_end=link_end,
                    key=self.resolve(authors, year),
                    text=text[m.start() : m.end()],
                    authors=authors,
                    year=year,
                )
            )
        return found

    def unresolved(self, text: str, single_names: bool = True) -> list[str]:
        """Citation-like texts in ``text`` that link to no entry, as written.

        Known author lists with an unknown year, and "X et al. YEAR",
        "X & Y YEAR", "X, Y and Z (YEAR)" whose authors the bibliography does
        not have; with ``single_names`` also "Surname YEAR" (except the words
        of :data:`NOT_AUTHORS`).
        """
        cites = self.find(text)
        bad = [c.text for c in cites if c.key is None]
        spans = [(c.start, c.end) for c in cites]
        for start, end, multi in find_candidates(text):
            if not multi and not single_names:
                continue
            if any(s < end and start < e for s, e in spans):
                continue
            bad.append(text[start:end])
        return bad


_NAME = r"[A-Z][A-Za-z'-]*[a-z](?![A-Za-z])"
_CANDIDATE = re.compile(
    rf"(?<![\w-])(?P<authors>{_NAME}(?P<multi>\s+et\s+al\.?"
    rf"|(?:,\s+{_NAME})*,?\s+(?:&|and)\s+{_NAME})?)"
    rf"(?:'s)?,?\s*\(?(?:[A-Z][A-Za-z]*\s+)?{YEAR}[a-z]?(?!\d)"
)


def find_candidates(text: str) -> Iterator[tuple[int, int, bool]]:
    """Spans of ``text`` that look like "Authors year" citations, known or not.

    Yields ``(start, end, multi)``; ``multi`` is True for "et al." and author
    lists, False for a single capitalised word before a year (months, venues
    and the like in :data:`NOT_AUTHORS` excluded).
    """
    for m in _CANDIDATE.finditer(fold(text)):
        multi = m.group("multi") is not None
        if not multi and m.group("authors") in NOT_AUTHORS:
            continue
        yield m.start(), m.end(), multi


# --------------------------------------------------------------------------- Sphinx


def _protected_types() -> tuple[type, ...]:
    from docutils import nodes
    from sphinx import addnodes

    return (
        nodes.literal,
        nodes.literal_block,
        nodes.doctest_block,
        nodes.reference,
        nodes.title,
        nodes.subtitle,
        nodes.math,
        nodes.math_block,
        nodes.raw,
        nodes.target,
        nodes.citation,
        nodes.image,
        nodes.system_message,
        nodes.problematic,
        nodes.substitution_definition,
        nodes.option_string,
        addnodes.desc_signature,
        addnodes.pending_xref,
        addnodes.toctree,
        addnodes.only,
    )


def _table(app: Any) -> CitationTable:
    table = getattr(app, "_calipers_citation_table", None)
    if table is None:
        bib = app.config.citations_bibfile or (app.config.bibtex_bibfiles or [None])[0]
        if bib is None:
            raise ValueError("citations: set citations_bibfile or bibtex_bibfiles")
        table = CitationTable.from_bib(Path(app.confdir) / bib)
        app._calipers_citation_table = table
    return table


def link_citations(app: Any, doctree: Any) -> None:
    """Wrap every citation in ``doctree`` in a pending link to its entry."""
    from docutils import nodes
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    table = _table(app)
    protected = _protected_types()

    def process(parent: Any) -> None:
        children = list(parent.children)
        i = 0
        while i < len(children):
            if not isinstance(children[i], nodes.Text):
                i += 1
                continue
            j = i
            while j < len(children) and isinstance(children[j], nodes.Text):
                j += 1
            run = children[i:j]
            text = "".join(str(t) for t in run)
            cites = table.find(text)
            for bad in table.unresolved(text, single_names=False):
                logger.warning(
                    "citation %r matches no entry of the bibliography (%s)",
                    re.sub(r"\s+", " ", bad),
                    app.config.citations_bibfile or app.config.bibtex_bibfiles[0],
                    location=parent,
                    type="citations",
                    subtype="unresolved",
                )
            cites = [c for c in cites if c.key is not None]
            if cites:
                new: list[Any] = []
                pos = 0
                for c in cites:
                    if c.start > pos:
                        new.append(nodes.Text(text[pos : c.start]))
                    ref = nodes.inline(
                        "", text[c.start : c.link_end], classes=["calipers-citation"]
                    )
                    ref["calipers_citation_key"] = c.key
                    new.append(ref)
                    pos = c.link_end
                if pos < len(text):
                    new.append(nodes.Text(text[pos:]))
                index = parent.index(run[0])
                for t in run:
                    parent.remove(t)
                for k, node in enumerate(new):
                    parent.insert(index + k, node)
            i = j

    def walk(node: Any) -> None:
        # subclasses of comment hold content (autosummary's table): only comments proper are skipped
        if isinstance(node, protected) or type(node) is nodes.comment:
            return
        if isinstance(node, nodes.Element):
            if node.get("calipers_citation_key"):
                return
            process(node)
            for child in list(node.children):
                walk(child)

    walk(doctree)


def _on_doctree_read(app: Any, doctree: Any) -> None:
    link_citations(app, doctree)


def _on_doctree_resolved(app: Any, doctree: Any, docname: str) -> None:
    """Turn the pending links into links to the bibliography page."""
    from docutils import nodes

    target_doc = app.config.citations_bibliography_doc
    table = _table(app)
    for node in list(doctree.findall(nodes.inline)):
        key = node.get("calipers_citation_key")
        if not key:
            continue
        try:
            uri = app.builder.get_relative_uri(docname, target_doc)
        except Exception:  # builders without pages (e.g. linkcheck): keep the text
            node.replace_self(node.children)
            continue
        if docname == target_doc:
            uri = ""
        entry = table.entries[key]
        ref = nodes.reference(
            "",
            "",
            *node.children,
            internal=True,
            refuri=f"{uri}#{anchor(key)}",
            reftitle=entry.title,
            classes=["calipers-citation"],
        )
        node.replace_self(ref)


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("citations_bibfile", None, "env")
    app.add_config_value("citations_bibliography_doc", "references", "env")
    app.connect("doctree-read", _on_doctree_read)
    app.connect("doctree-resolved", _on_doctree_resolved)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
