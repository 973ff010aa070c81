"""``.npz`` archives (``np.savez``): named arrays of predictions and labels.

The arrays are found by their keys (:mod:`calipers.io.keys`); each one is read
without pickle and checked to hold plain numbers.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .checks import _PICKLE_HINT, _check_numeric
from .keys import _from_mapping
from .npy import _from_npy_array, _np_load
from .prediction_file import _err, _Read


def _npz_array(data: Any, key: str, path: Path) -> np.ndarray:
    try:
        arr = np.asarray(data[key])
    except ValueError as exc:
        if "pickle" in str(exc).lower() or "object" in str(exc).lower():
            raise _err(f"'{path}': array '{key}' contains Python objects; {_PICKLE_HINT}") from None
        raise _err(f"'{path}': array '{key}' cannot be read: {exc}") from None
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise _err(f"'{path}': array '{key}' is damaged ({exc}); save the file again") from None
    return _check_numeric(arr, f"array '{key}'", f"'{path}'")


def _read_npz(
    path: Path,
    probs_key: str | None,
    logits_key: str | None,
    labels_key: str | None,
    logits: bool | None,
    read_labels: bool,
) -> _Read:
    data = _np_load(path, "prediction file")
    if isinstance(data, np.ndarray):  # an .npy file with an .npz name
        return _from_npy_array(data, path, logits)
    with data:
        return _from_mapping(
            list(data.files),
            lambda key: _npz_array(data, key, path),
            path,
            probs_key,
            logits_key,
            labels_key,
            logits,
            read_labels,
        )
