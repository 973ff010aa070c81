"""Where the program writes: standard output, messages on standard error, and files.

Files are written atomically (:func:`calipers.io.output.write_atomic`): a reader
sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..io.output import OutputError
from ..io.output import write_atomic as _write_atomic

#: An output file could not be written (or would replace something without --force).
_OutputError = OutputError


def write_atomic(path: str | Path, text: str | bytes, *, force: bool = True) -> None:
    """Write ``text`` (or bytes) to ``path`` atomically; see :func:`calipers.io.output.write_atomic`."""
    _write_atomic(path, text, force=force)


def _emit(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _info(text: str) -> None:
    print(text, file=sys.stderr)


def write_table(text: str, fmt: str, table: Any, sources: Sequence[str], args: Any) -> int:
    """Print (or write to ``--out``) a rendered table of ``calipers table``; exit status 0.

    ``table`` has ``title`` and ``notes``; as CSV, they and the ``sources`` go to
    standard error, so that the CSV stays clean.
    """
    from .exit_status import EXIT_OK

    if fmt == "csv":  # keep the CSV clean: provenance and notes go to stderr
        for line in [table.title, *(f"source: {s}" for s in sources), *table.notes]:
            _info(line)
    if args.out is None:
        _emit(text)
    else:
        write_atomic(args.out, text, force=args.force)
        _info(f"calipers: wrote {args.out} ({fmt})")
    return EXIT_OK


def write_report(rep: Any, args: Any) -> int:
    """Print a :class:`calipers.Report` in ``--format`` (default Markdown) and, with
    ``--out DIR``, save every rendering and figure there; exit status 0.

    With ``--out`` and no ``--format`` only the short summary is printed
    (:meth:`calipers.Report.to_summary`: a line per model and the table); the notes and
    the per-metric verdicts are in the files."""
    from .exit_status import EXIT_OK

    fmt = args.format or "markdown"
    if args.out is not None and args.format is None:
        text = rep.to_summary()
    else:
        text = {
            "markdown": rep.to_markdown,
            "json": rep.to_json,
            "latex": rep.to_latex,
            "html": rep.to_html,
        }[fmt]()
    _emit(text)
    if args.out is not None:
        written = list(rep.save(Path(args.out), force=args.force))
        page = Path(args.out) / "report.html"
        _info(f"calipers: wrote {len(written)} files to {args.out}/ (the whole report: {page})")
    return EXIT_OK
