"""``.npy`` files (``np.save``): one array of probabilities, or of logits with ``logits=True``.

Every NumPy file, ``.npz`` included, is opened here with ``allow_pickle=False``;
a file NumPy refuses is looked at (:mod:`calipers.io.sniff`) to say what it is.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .checks import _PICKLE_HINT, _check_numeric
from .declared import declared_size
from .kind import _flag_kind
from .prediction_file import KindBasis, _err, _Read
from .sniff import _sniff


def _np_load(path: Path, what: str) -> Any:
    """``np.load`` with ``allow_pickle=False`` and messages that say what to do.

    The file's declared shapes are checked first (:func:`~calipers.io.declared.declared_size`):
    a header claiming more than the file holds is refused before anything is allocated.
    """
    declared_size(path)
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise _err(f"{what} '{path}' does not exist") from None
    except IsADirectoryError:
        raise _err(f"{what} '{path}' is a directory, not a file") from None
    except PermissionError:
        raise _err(f"{what} '{path}' cannot be read (permission denied)") from None
    except ValueError as exc:
        text = str(exc)
        if "pickle" in text.lower():
            # NumPy says "pickled data" for any file that is neither .npy nor .npz:
            # look at the first bytes before saying what the file is
            kind = _sniff(path)
            if kind != "pickle":
                raise _err(
                    f"{what} '{path}' is not a NumPy file (neither .npy nor an .npz "
                    f"archive){kind}; read it with the reader of its format, or rename it "
                    "to its real extension (.csv, .parquet, .pt)"
                ) from None
            raise _err(f"{what} '{path}' contains pickled Python objects; {_PICKLE_HINT}") from None
        raise _err(
            f"{what} '{path}' is not a NumPy file ({text}); save it with np.save or np.savez"
        ) from None
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise _err(
            f"{what} '{path}' is damaged or not a NumPy file ({exc}); "
            "save it again with np.save or np.savez"
        ) from None


def _from_npy_array(arr: np.ndarray, path: Path, logits: bool | None) -> _Read:
    arr = _check_numeric(arr, "the array", f"'{path}'")
    kind = _flag_kind(bool(logits))
    basis: KindBasis = "default" if logits is None else "argument"
    return _Read(arr, kind, None, f"one {arr.shape} array read as {kind}", basis)


def _read_npy(path: Path, logits: bool | None) -> _Read:
    arr = _np_load(path, "prediction file")
    if not isinstance(arr, np.ndarray):
        arr.close()
        raise _err(f"'{path}' is an .npz archive, not an .npy file; rename it to .npz")
    return _from_npy_array(arr, path, logits)
