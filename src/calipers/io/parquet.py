"""``.parquet`` files (needs ``pyarrow`` 14.0.1 or later): the CSV layout, or a list column of vectors.

pyarrow is imported on first use; versions before 14.0.1 are refused, as they
unpickle Python objects stored in a file's extension types (CVE-2023-47248). The
file is opened as a local file object, so no URI or directory is ever read as a
data set. Index columns written by pandas are dropped.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .columns import _assemble_columns, _column_roles, _labels_from_floats, _labels_from_strings
from .keys import LABELS_KEYS, LOGITS_KEYS, PROBS_KEYS, _from_mapping, _pick_labels
from .kind import _bare
from .prediction_file import _err, _Read

_PYARROW_MIN = (14, 0, 1)  # earlier versions unpickle extension types (CVE-2023-47248)


def _import_pyarrow(path: Path) -> tuple[Any, Any, Any]:
    """``pyarrow``, ``pyarrow.parquet`` and ``pyarrow.compute``, imported on first use."""
    try:
        pa = importlib.import_module("pyarrow")
        pq = importlib.import_module("pyarrow.parquet")
        pc = importlib.import_module("pyarrow.compute")
    except ImportError:
        raise _err(f"'{path}': reading .parquet needs pyarrow: pip install pyarrow") from None
    version = tuple(int(x) for x in re.findall(r"\d+", str(pa.__version__))[:3])
    if version < _PYARROW_MIN:
        raise _err(
            f"'{path}': pyarrow {pa.__version__} can unpickle Python objects stored in a "
            "Parquet file (CVE-2023-47248) and calipers never unpickles files; "
            "pip install 'pyarrow>=14.0.1'"
        )
    return pa, pq, pc


class _Parquet:
    """A Parquet table read into memory, with column conversions that check types."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.where = f"'{path}'"
        self.pa, pq, self.pc = _import_pyarrow(path)
        if path.is_dir():  # pyarrow would read a directory as a partitioned data set
            raise _err(f"{what} '{path}' is a directory, not a file")
        try:
            with open(path, "rb") as fh:  # a local file object: no URI or data-set discovery
                table = pq.ParquetFile(fh).read()
        except FileNotFoundError:
            raise _err(f"{what} '{path}' does not exist") from None
        except PermissionError:
            raise _err(f"{what} '{path}' cannot be read (permission denied)") from None
        except (self.pa.ArrowException, OSError, ValueError, EOFError) as exc:
            raise _err(
                f"{what} '{path}' is damaged or not a Parquet file ({exc}); write it again, "
                "e.g. with pyarrow.parquet.write_table or DataFrame.to_parquet"
            ) from None
        self._set_table(table)

    @classmethod
    def of_rows(
        cls, path: Path, table: Any, offset: int, modules: tuple[Any, Any, Any]
    ) -> _Parquet:
        """A slice of a file's rows already read (``offset`` rows precede it), for chunks."""
        self = cls.__new__(cls)
        self.path, self.where = path, f"'{path}'"
        self.pa, _, self.pc = modules
        self.offset = offset
        self._set_table(table)
        return self

    offset = 0  # rows of the file before this table (chunked reading); messages count from 1

    def _set_table(self, table: Any) -> None:
        try:
            meta = table.schema.pandas_metadata or {}
        except ValueError:  # unreadable pandas metadata: keep every column
            meta = {}
        index_cols = [c for c in meta.get("index_columns", []) if isinstance(c, str)]
        drop = [c for c in index_cols if c in table.column_names]
        self.table = table.drop_columns(drop) if drop else table
        self.names = [str(n) for n in self.table.column_names]
        self.n = int(self.table.num_rows)

    def category(self, name: str) -> str:
        """``"list"``, ``"numeric"``, ``"string"`` or ``"other"``."""
        t = self.pa.types
        typ = self.table.schema.field(name).type
        if t.is_dictionary(typ):
            typ = typ.value_type
        list_view = getattr(t, "is_list_view", None), getattr(t, "is_large_list_view", None)
        if (
            t.is_list(typ)
            or t.is_large_list(typ)
            or t.is_fixed_size_list(typ)
            or any(f is not None and f(typ) for f in list_view)
        ):
            return "list"
        if t.is_integer(typ) or t.is_floating(typ) or t.is_boolean(typ):
            return "numeric"
        if t.is_string(typ) or t.is_large_string(typ):
            return "string"
        return "other"

    def _array(self, name: str) -> Any:
        col = self.table.column(name).combine_chunks()
        if self.pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        if col.null_count:
            nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False))
            i = int(np.flatnonzero(nulls)[0])
            raise _err(
                f"{self.where} column '{name}' has {col.null_count} missing values (null), "
                f"the first in data row {self.offset + i + 1}; every row needs a value"
            )
        return col

    def scalar(self, name: str) -> np.ndarray:
        """A numeric column as a NumPy array (its own dtype)."""
        if self.category(name) != "numeric":
            typ = self.table.schema.field(name).type
            raise _err(
                f"{self.where} column '{name}' has type {typ}; probability columns must hold "
                f"numbers (a label column must be named one of {', '.join(LABELS_KEYS)})"
            )
        return np.asarray(self._array(name).to_numpy(zero_copy_only=False))

    def matrix(self, name: str) -> np.ndarray:
        """A list column as an ``(n, k)`` array; every row must hold ``k`` numbers."""
        if self.category(name) != "list":
            typ = self.table.schema.field(name).type
            raise _err(f"{self.where} column '{name}' has type {typ}, not a list of numbers")
        col = self._array(name)
        if self.pa.types.is_fixed_size_list(col.type):
            width = int(col.type.list_size)
        else:
            lengths = np.asarray(
                self.pc.list_value_length(col).to_numpy(zero_copy_only=False), dtype=np.int64
            )
            width = int(lengths[0]) if lengths.size else 0
            if (lengths != width).any():
                i = int(np.flatnonzero(lengths != width)[0])
                raise _err(
                    f"{self.where} column '{name}': data row {self.offset + i + 1} holds "
                    f"{lengths[i]} values but data row {self.offset + 1} holds {width}; every "
                    "row needs one value per class"
                )
        values = col.flatten()
        t = self.pa.types
        if not (
            t.is_integer(values.type) or t.is_floating(values.type) or t.is_boolean(values.type)
        ):
            raise _err(
                f"{self.where} column '{name}' holds lists of {values.type}; it must hold "
                "lists of numbers (one per class)"
            )
        if values.null_count:
            nulls = np.asarray(values.is_null().to_numpy(zero_copy_only=False))
            i = int(np.flatnonzero(nulls)[0])
            raise _err(
                f"{self.where} column '{name}', data row {self.offset + i // max(width, 1) + 1}: value "
                f"{i % max(width, 1)} is missing (null); every row needs one number per class"
            )
        flat = np.asarray(values.to_numpy(zero_copy_only=False))
        return flat.reshape(self.n, width)

    def labels(self, name: str, classes: list[str]) -> np.ndarray:
        """A label column as int64: class indices, or names from ``classes``."""
        cat = self.category(name)
        if cat == "numeric":
            raw = np.asarray(self._array(name).to_numpy(zero_copy_only=False))
            if raw.dtype.kind == "f":
                return _labels_from_floats(raw, self.where, name, self.offset)
            return raw.astype(np.int64)
        if cat == "string":
            values = [str(v) for v in self._array(name).to_pylist()]
            return _labels_from_strings(
                values,
                classes,
                f"{self.where} column '{name}'",
                range(self.offset + 1, self.offset + len(values) + 1),
                at_word="data row",
            )
        typ = self.table.schema.field(name).type
        raise _err(
            f"{self.where} column '{name}' has type {typ}; labels must be integers 0..k-1 "
            "(or class names)"
        )


def _read_parquet(
    path: Path,
    probs_key: str | None,
    logits_key: str | None,
    labels_key: str | None,
    logits: bool | None,
    has_labels_path: bool,
) -> _Read:
    pq = _Parquet(path, "prediction file")
    return _read_parquet_table(pq, probs_key, logits_key, labels_key, logits, has_labels_path)


def _read_parquet_table(
    pq: _Parquet,
    probs_key: str | None,
    logits_key: str | None,
    labels_key: str | None,
    logits: bool | None,
    has_labels_path: bool,
) -> _Read:
    """The predictions of a Parquet table (a whole file, or one chunk of its rows)."""
    path = pq.path
    names, where = pq.names, pq.where
    if not names:
        raise _err(f"{where} has no columns; write a label column and one column per class")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _err(f"{where} has duplicate column names {dup}; every column needs its own name")
    list_cols = [n for n in names if pq.category(n) == "list"]
    if not list_cols:  # one column per class: the CSV rules
        if probs_key is not None or logits_key is not None:
            raise _err(
                f"probs_key/logits_key name a list column; '{path}' has one column per class "
                f"({', '.join(names)}), read by the CSV column rules"
            )
        label_cols, class_cols, kind, basis = _column_roles(names, where, logits)
        if pq.n == 0:
            raise _err(f"{where} has columns but no data rows")
        cols = {j: pq.scalar(names[j]).astype(np.float64) for j in class_cols}
        labels_of: Callable[[list[str]], np.ndarray] | None = None
        if label_cols:
            lname = names[label_cols[0]]

            def labels_of(classes: list[str]) -> np.ndarray:
                return pq.labels(lname, classes)

        arr, labels, note = _assemble_columns(
            names, label_cols, class_cols, kind, cols, labels_of, has_labels_path
        )
        return _Read(arr, kind, labels, note, basis)
    # a list column of prediction vectors
    lk = labels_key.lower() if labels_key is not None else None
    others = [
        n for n in names if n not in list_cols and n.lower() not in LABELS_KEYS and n.lower() != lk
    ]
    if others:
        raise _err(
            f"{where} has the list column(s) {list_cols} and the column(s) {others}, which are "
            "neither predictions nor labels; a Parquet file holds either one list column of "
            "prediction vectors (and a label column) or one column per class (p0, p1, ... and "
            "a label column)"
        )
    if pq.n == 0:
        raise _err(f"{where} has columns but no data rows")

    def get(name: str) -> np.ndarray:
        return pq.matrix(name) if name in list_cols else pq.labels(name, [])

    read_labels = not has_labels_path
    key = list_cols[0]
    if (
        len(list_cols) == 1
        and probs_key is None
        and logits_key is None
        and key.lower() not in PROBS_KEYS + LOGITS_KEYS
    ):
        arr = get(key)
        desc = f"list column '{key}' ({arr.shape[0]} x {arr.shape[1]})"
        if logits is None and key.lower().startswith("logit"):
            r = _Read(arr, "logits", None, f"{desc} read as logits", "name")
        else:
            # vectors of length 1 are not a binary P(y = 1): keep (n, 1) and let the
            # validation layer say so
            r = _bare(arr, where, logits, desc, None)
        labels, lhow = _pick_labels(names, key, labels_key, get, path, read_labels)
        return r._replace(labels=labels, note=r.note + lhow.replace(", ", "; ", 1))
    return _from_mapping(names, get, path, probs_key, logits_key, labels_key, logits, read_labels)
