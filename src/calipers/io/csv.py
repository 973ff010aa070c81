"""``.csv`` files: a header row, a label column and one column per class.

A file of numbers only is read in one pass with :func:`numpy.loadtxt`; any other
goes through the :mod:`csv` module, which also finds the line of a ragged row or
of a value that is not a number. The column rules are those of
:mod:`calipers.io.columns`.
"""

from __future__ import annotations

import codecs
import csv
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from .columns import (
    _assemble_columns,
    _column_roles,
    _is_number,
    _labels_from_floats,
    _labels_from_strings,
)
from .prediction_file import Kind, KindBasis, _err, _Read


def _csv_data_rows(path: Path, n_fields: int) -> Iterator[tuple[list[str], int]]:
    """The data rows of a CSV file as strings, with their line numbers, in file order.

    Blank lines are skipped; a ragged row, a byte that is not UTF-8 and a field
    longer than the :mod:`csv` module's limit (131 072 characters) are errors
    naming the file and the line, for the whole-file and the chunked reader alike.
    """
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        try:
            next(reader, None)
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # blank line
                if len(row) != n_fields:
                    raise _err(
                        f"'{path}' line {reader.line_num} has {len(row)} fields but the header "
                        f"has {n_fields}; every row needs one value per column"
                    )
                yield row, reader.line_num
        except UnicodeDecodeError as exc:
            line, col = _first_bad_utf8(path)
            raise _err(
                f"'{path}' line {line}, byte {col}: {exc.reason} ({exc.object[exc.start : exc.start + 1]!r}); "
                "the file is not UTF-8 text, save it as UTF-8"
            ) from None
        except csv.Error as exc:
            raise _err(
                f"'{path}' line {reader.line_num} cannot be read as CSV ({exc}); a "
                "prediction file holds one number per class and a label per row"
            ) from None


def _first_bad_utf8(path: Path) -> tuple[int, int]:
    """Line (from 1) and byte in it (from 1) of the first byte that is not UTF-8.

    Read in blocks (the error path of a file that may not fit in memory).
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    pos = 0  # bytes of the file before the block
    bad = -1
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            pending = len(decoder.getstate()[0])  # bytes of a sequence cut by the last block
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                bad = pos - pending + max(exc.start, 0)
                break
            pos += len(block)
        else:
            bad = pos  # the file ends inside a sequence
        fh.seek(0)
        line, last_newline, done = 1, -1, 0
        while done < bad:
            block = fh.read(min(1 << 20, bad - done))
            if not block:
                break
            line += block.count(b"\n")
            k = block.rfind(b"\n")
            if k >= 0:
                last_newline = done + k
            done += len(block)
    return line, bad - last_newline


def _csv_rows(path: Path, n_fields: int) -> tuple[list[list[str]], list[int]]:
    """All data rows as strings and their line numbers; a ragged row is an error."""
    rows: list[list[str]] = []
    lines: list[int] = []
    for row, line in _csv_data_rows(path, n_fields):
        rows.append(row)
        lines.append(line)
    return rows, lines


def _parse_float_column(
    values: Sequence[str], name: str, path: Path, lines: Sequence[int]
) -> np.ndarray:
    out = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        try:
            out[i] = float(v)
        except ValueError:
            raise _err(
                f"'{path}' line {lines[i]}, column '{name}': {v!r} is not a number"
            ) from None
    return out


def _csv_header(
    path: Path, logits: bool | None
) -> tuple[list[str], list[int], list[int], Kind, KindBasis]:
    """The column names, label and class columns, and kind of a CSV file (its header row)."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), None)
    except FileNotFoundError:
        raise _err(f"prediction file '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise _err(f"prediction file '{path}' cannot be read as text: {exc}") from None
    if not header:
        raise _err(f"'{path}' is empty; a CSV file needs a header row such as 'label,p0,p1'")
    names = [h.strip() for h in header]
    if all(_is_number(n) for n in names) and not all(n.isdigit() for n in names):
        raise _err(
            f"'{path}' has no header row (its first line is {','.join(names)!r}); add one, "
            "e.g. 'label,p0,p1,...' (a label column and one column per class)"
        )
    label_cols, class_cols, kind, basis = _column_roles(names, f"'{path}'", logits)
    return names, label_cols, class_cols, kind, basis


def _read_csv(path: Path, logits: bool | None, has_labels_path: bool) -> _Read:
    names, label_cols, class_cols, kind, basis = _csv_header(path, logits)
    where = f"'{path}'"
    # fast path: every field numeric (np.loadtxt); otherwise the csv module, which
    # also finds the line of a ragged row or of a value that is not a number
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "input contained no data"
            arr2d: np.ndarray | None = np.loadtxt(
                path, delimiter=",", skiprows=1, ndmin=2, dtype=np.float64, encoding="utf-8-sig"
            )
    except ValueError:
        arr2d = None
    labels_of: Callable[[list[str]], np.ndarray] | None = None
    if arr2d is not None and arr2d.shape[0] > 0 and arr2d.shape[1] == len(names):
        cols = {j: arr2d[:, j] for j in range(len(names))}
        if label_cols:
            raw_f = cols[label_cols[0]]
            lname = names[label_cols[0]]

            def labels_of(classes: list[str]) -> np.ndarray:
                return _labels_from_floats(raw_f, where, lname)

    else:
        rows, line_nos = _csv_rows(path, len(names))
        if not rows:
            raise _err(f"'{path}' has a header but no data rows")
        cols = {
            j: _parse_float_column([r[j] for r in rows], names[j], path, line_nos)
            for j in class_cols
        }
        if label_cols:
            raw_s = [r[label_cols[0]] for r in rows]
            where_col = f"'{path}' column '{names[label_cols[0]]}'"

            def labels_of(classes: list[str]) -> np.ndarray:
                return _labels_from_strings(raw_s, classes, where_col, line_nos)

    arr, labels, note = _assemble_columns(
        names, label_cols, class_cols, kind, cols, labels_of, has_labels_path
    )
    return _Read(arr, kind, labels, note, basis)
