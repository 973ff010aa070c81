"""A separate labels file (``labels_path=``, ``--labels FILE``) in any supported format.

``.npy``, ``.npz`` (one array, or a labels key), ``.pt``/``.pth`` (a tensor, or a
dict with one entry or a labels key), ``.parquet`` (one column, or a label
column), or ``.csv``/``.txt`` with one label per line and an optional header line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .checks import _check_numeric
from .columns import _is_number, _labels_from_strings
from .declared import declared_size
from .keys import _labels_key_in
from .npy import _np_load
from .npz import _npz_array
from .parquet import _Parquet
from .prediction_file import PredictionFileError, _err
from .pt import _describe, _is_tensor, _tensor_to_numpy, _torch_load


def _check_declared_labels(path: Path, labels_key: str | None, n: int, source: str) -> None:
    """Refuse a NumPy labels file that declares other than ``n`` labels, before reading it.

    The count is read from the declarations (:func:`~calipers.io.declared.declared_size`):
    a labels file of a few MB can declare billions of labels, which would otherwise be
    read whole before their number is compared with the rows of the predictions. The
    message is the one the comparison after reading gives.
    """
    if path.suffix.lower() not in (".npy", ".npz"):
        return
    shapes = declared_size(path).shapes
    if not shapes:
        return  # not declared: the reader says what the file holds
    if "" in shapes:
        shape: tuple[int, ...] | None = shapes[""]
    else:
        try:
            shape = shapes.get(_labels_key_in(list(shapes), labels_key, path))
        except PredictionFileError:
            return  # the reader gives this message
    if shape is None or (shape and shape[0] == n):
        return
    got = "a scalar" if not shape else f"{shape[0]} labels"
    raise _err(f"{source}: {got} for {n} rows of predictions; give exactly one label per row")


def _read_labels_file(path: Path, labels_key: str | None) -> tuple[np.ndarray, str]:
    suffix = path.suffix.lower()
    if suffix in (".npy", ".npz"):
        data = _np_load(path, "labels file")
        if isinstance(data, np.ndarray):
            return _check_numeric(data, "the labels array", f"'{path}'"), "the array"
        with data:
            key = _labels_key_in(list(data.files), labels_key, path)
            return _npz_array(data, key, path), f"array '{key}'"
    if suffix in (".pt", ".pth"):
        obj = _torch_load(path, "labels file")
        if _is_tensor(obj):
            return _tensor_to_numpy(obj, "the labels tensor", f"'{path}'"), "the tensor"
        if isinstance(obj, Mapping) and all(isinstance(k, str) for k in obj):
            key = _labels_key_in(list(obj), labels_key, path)
            return _tensor_to_numpy(obj[key], f"entry '{key}'", f"'{path}'"), f"entry '{key}'"
        raise _err(
            f"labels file '{path}' holds {_describe(obj)}; expected a tensor of labels or a "
            "dict with a labels entry, e.g. torch.save(labels, path)"
        )
    if suffix == ".parquet":
        pq = _Parquet(path, "labels file")
        if not pq.names:
            raise _err(f"labels file '{path}' has no columns")
        key = _labels_key_in(pq.names, labels_key, path)
        return pq.labels(key, []), f"column '{key}'"
    if suffix in (".csv", ".txt", ""):
        try:
            text = path.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise _err(f"labels file '{path}' does not exist") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise _err(f"labels file '{path}' cannot be read as text: {exc}") from None
        lines = [ln.strip() for ln in text.splitlines()]
        lines = [ln for ln in lines if ln]
        if lines and not _is_number(lines[0]):
            lines = lines[1:]  # header
        if any("," in ln for ln in lines):
            raise _err(f"labels file '{path}' has several columns; it must hold one label per line")
        if not lines:
            raise _err(f"labels file '{path}' holds no labels")
        labels = _labels_from_strings(lines, [], f"labels file '{path}'", None)
        return labels, "one label per line"
    raise _err(
        f"labels file '{path}' has an unsupported type '{suffix}'; use .npy, .npz, .pt, "
        ".parquet, or a .csv/.txt file with one label per line"
    )
