"""How the command line writes a table: text, Markdown, JSON or CSV.

One table model (:class:`_Table`: a title, sources, columns, one row per model,
notes and settings) and its four renderings, shared by ``calipers table`` for
classification files and for regression files, so neither command imports the
other. A number that is not finite is written ``inf``/``nan`` (JSON has neither).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..validation import Predictions

FORMATS = ("text", "markdown", "json", "csv")

_SUFFIX_FORMAT = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".csv": "csv"}


@dataclass(frozen=True)
class _Column:
    key: str  # JSON / CSV name
    header: str  # text / Markdown header
    compute: Callable[[Predictions, int], Any]


@dataclass
class _Table:
    title: str
    sources: list[str]
    columns: list[_Column]
    rows: list[dict[str, Any]]
    notes: list[str]
    settings: dict[str, Any]


def _fmt(value: Any, places: int = 4) -> str:
    if value is None:  # a column not computed (streamed rows): the notes say why
        return "n/a"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.{places}f}"
    return str(value)


def _cells(table: _Table) -> tuple[list[str], list[list[str]]]:
    headers = ["model", "n"] + [c.header for c in table.columns]
    body = [
        [str(r["model"]), _fmt(r["n"])] + [_fmt(r[c.key]) for c in table.columns]
        for r in table.rows
    ]
    return headers, body


def _format_text(table: _Table) -> str:
    headers, body = _cells(table)
    widths = [max(len(h), *(len(row[j]) for row in body)) for j, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        parts = [cells[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [table.title]
    out += [textwrap.fill(f"source: {s}", width=100, subsequent_indent="  ") for s in table.sources]
    out.append("")
    out.append(line(headers))
    out.append(line(["-" * w for w in widths]))
    out += [line(row) for row in body]
    out.append("")
    for note in table.notes:
        out.append(textwrap.fill(note, width=100, initial_indent="* ", subsequent_indent="  "))
    return "\n".join(out) + "\n"


def _format_markdown(table: _Table) -> str:
    headers, body = _cells(table)
    out = [f"**{table.title}**", ""]
    out += [f"Source: {s}  " for s in table.sources]
    out[-1] = out[-1].rstrip()
    out.append("")
    out.append("| " + " | ".join(headers) + " |")
    out.append("| " + " | ".join(["---"] + ["---:"] * (len(headers) - 1)) + " |")
    out += ["| " + " | ".join(row) + " |" for row in body]
    out.append("")
    out += [f"- {n}" for n in table.notes]
    return "\n".join(out) + "\n"


def _json_value(value: Any) -> Any:
    """JSON has no infinity or NaN: such values are written as the strings "inf", "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return _fmt(value)
    return value


def _format_json(table: _Table) -> str:
    doc = {
        "calipers_version": __version__,
        "title": table.title,
        "sources": table.sources,
        "settings": table.settings,
        "columns": ["model", "n", "n_classes"] + [c.key for c in table.columns],
        "models": [{k: _json_value(v) for k, v in r.items()} for r in table.rows],
        "notes": table.notes,
    }
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def _format_csv(table: _Table) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    keys = ["model", "n", "n_classes"] + [c.key for c in table.columns]
    writer.writerow(keys)
    for r in table.rows:
        writer.writerow(
            [repr(r[k]) if isinstance(r[k], float) else "" if r[k] is None else r[k] for k in keys]
        )
    return buf.getvalue()


_FORMATTERS: dict[str, Callable[[_Table], str]] = {
    "text": _format_text,
    "markdown": _format_markdown,
    "json": _format_json,
    "csv": _format_csv,
}


def _resolve_format(args: argparse.Namespace) -> str:
    if args.format is not None:
        return str(args.format)
    if args.out is not None:
        return _SUFFIX_FORMAT.get(Path(args.out).suffix.lower(), "text")
    return "text"
