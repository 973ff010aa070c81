"""``.csv`` files: a header row, a label column and one column per class.

A file of numbers only is read in one pass with :func:`numpy.loadtxt`; any other
goes through the :mod:`csv` module, which also finds the line of a ragged row or
of a value that is not a number. The column rules are those of
:mod:`calipers.io.columns`.
"""

from __future__ import annotations

import csv
import warnings
from collections.abc import Callable, Sequence
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


def _csv_rows(path: Path, n_fields: int) -> tuple[list[list[str]], list[int]]:
    """All data rows as strings and their line numbers; a ragged row is an error."""
    rows: list[list[str]] = []
    lines: list[int] = []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        next(reader, None)
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue  # blank line
            if len(row) != n_fields:
                raise _err(
                    f"'{path}' line {reader.line_num} has {len(row)} fields but the header "
                    f"has {n_fields}; every row needs one value per column"
                )
            rows.append(row)
            lines.append(reader.line_num)
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
    except (OSError, UnicodeDecodeError) as exc:
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
