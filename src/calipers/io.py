"""Read prediction files: probabilities or logits, and the true labels.

:func:`read_predictions` reads one file into a :class:`PredictionFile`. Nothing
is ever unpickled: NumPy files are opened with ``allow_pickle=False`` and an
array of Python objects is refused; PyTorch files are opened with
``torch.load(weights_only=True)``, which loads tensors and plain containers
but refuses any other pickled object without running it; Parquet files are
read with a pyarrow that does not unpickle extension types (14.0.1 or later).
The arrays are returned as they are stored; the value checks (rows on the
simplex, labels in range, ...) belong to :func:`calipers.check_predictions`,
which :meth:`PredictionFile.check` calls.

Formats
-------
``.npz`` (``np.savez``)
    One array of probabilities or logits and, usually, one of labels. Keys are
    recognised case-insensitively:

    ==============  ===============================================================
    role            accepted keys
    ==============  ===============================================================
    probabilities   ``probs``, ``probabilities``, ``proba``, ``p``, ``y_prob``, ``y_proba``
    logits          ``logits``, ``scores``
    labels          ``labels``, ``label``, ``y``, ``targets``, ``target``, ``y_true``
    ==============  ===============================================================

    Two keys for the same role, or both probabilities and logits, are
    ambiguous: name the one to use (``probs_key=``, ``logits_key=``,
    ``labels_key=``; on the command line ``--probs-key``, ``--logits-key``,
    ``--labels-key``).
``.npy`` (``np.save``)
    One ``(n, k)`` array of probabilities (or ``(n,)`` P(y = 1) for a binary
    problem); logits with ``logits=True``. Labels come from ``labels_path``.
``.csv``
    Comma-separated, one row per sample, with a header row (required):

    * one label column named ``label`` (or ``labels``, ``y``, ``y_true``,
      ``target``, ``targets``; any case) holding class indices ``0..k-1`` or
      class names equal to the probability column names;
    * every other column is one class (a single column holds P(y = 1), or the
      logit, of a binary problem). Columns named with a common prefix and
      the class index (``p0, p1, ...``, ``prob_0, ...`` or ``0, 1, ...``) are
      put in index order; any other names (``cat, dog, ...``) are classes in
      file order. Columns named ``logit_0, logit_1, ...`` (or ``logit_cat``,
      ...) hold logits.

    Example::

        label,p0,p1,p2
        0,0.7,0.2,0.1
        2,0.1,0.3,0.6
``.parquet`` (needs ``pyarrow``, an optional dependency)
    Either the ``.csv`` layout (a label column and one numeric column per
    class, with the same names, order and logit rules; the values are read as
    float64), or one list-typed column holding a vector per row (``(n, k)``
    after stacking; every row the same length) and, optionally, a label
    column. With several list columns, the one holding the predictions is
    chosen by name as for ``.npz`` (``probs_key=``/``logits_key=`` to name
    it). A single list column named neither like the probabilities nor like
    the logits of the ``.npz`` table (nor ``logit...``) is a bare array: see
    *Probabilities or logits* below. Index columns written by pandas are
    ignored.
``.pt``, ``.pth`` (``torch.save``; needs ``torch``)
    Loaded with ``torch.load(path, weights_only=True, map_location="cpu")``,
    and holding one of

    * a tensor of predictions (labels from ``labels_path``): a bare array;
    * a dict of tensors, read exactly as an ``.npz`` file (same keys, same
      ``probs_key``/``logits_key``/``labels_key``);
    * a tuple or list ``(scores, labels)`` of two tensors, ``scores`` a bare
      array.

    ``bfloat16`` tensors are widened to ``float32`` (exactly); other dtypes
    are kept.

Probabilities or logits
-----------------------
The returned :attr:`PredictionFile.kind` says which was read, and
:attr:`PredictionFile.kind_basis` how it was decided:

``"argument"``
    ``logits=True``/``logits=False`` (``--logits``/``--probs``), or an
    explicit ``probs_key``/``logits_key``, was given; it always wins.
``"name"``
    The key (``.npz``, dicts in ``.pt``, Parquet list columns) or the column
    names (``logit_*`` in ``.csv``/``.parquet``) say it.
``"default"``
    The format's fixed convention: an ``.npy`` array, and ``.csv``/``.parquet``
    class columns not named ``logit*``, hold probabilities.
``"values"``
    A bare array (a tensor in a ``.pt`` file, the ``scores`` of a ``.pt``
    tuple, an unnamed Parquet list column) is read by the rule the
    recalibrators use: as probabilities only if every row lies on the
    probability simplex (entries in ``[-tol, 1 + tol]`` and each row summing
    to 1 within ``tol``, or within the rounding of values printed to d
    decimals; a 1-D array holds P(y = 1), so every value in
    ``[-tol, 1 + tol]``), and as logits only if some entry is below -0.5
    and at most half of the rows sum to 1 (no probability is that
    negative). ``tol`` is the default ``sum_tol`` of
    :func:`calipers.check_predictions`, ``max(1e-4, (log2(k) + 2) * eps)``
    with ``eps`` the machine epsilon of the stored dtype. Anything else
    (entries all in ``[0, 1]`` but a row not summing to 1; non-negative rows
    that are not probabilities, such as percentages or probabilities scaled
    by 1.01; entries only slightly negative; NaN or infinity) is
    ambiguous and raises :class:`PredictionFileError` asking for
    ``logits=True`` or ``logits=False``. The choice and its reason are written
    in :attr:`PredictionFile.note`.

Labels files (``labels_path``) may be ``.npy``, ``.npz`` (one array, or a
labels key as above), ``.pt``/``.pth`` (a tensor, or a dict with one entry or
a labels key), ``.parquet`` (one column, or a label column), or
``.csv``/``.txt`` with one label per line and an optional header line.
"""

from __future__ import annotations

import csv
import importlib
import pickle
import re
import sys
import warnings
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from .validation import Predictions

__all__ = [
    "PredictionFile",
    "PredictionFileError",
    "read_predictions",
    "PROBS_KEYS",
    "LOGITS_KEYS",
    "LABELS_KEYS",
]

#: Keys (lower case) recognised as probabilities in an ``.npz`` file.
PROBS_KEYS = ("probs", "probabilities", "proba", "p", "y_prob", "y_proba")
#: Keys (lower case) recognised as logits in an ``.npz`` file.
LOGITS_KEYS = ("logits", "scores")
#: Keys and CSV column names (lower case) recognised as labels.
LABELS_KEYS = ("labels", "label", "y", "targets", "target", "y_true")

_SAVEZ_HINT = "np.savez(path, probs=probs, labels=labels)"
_PICKLE_HINT = (
    "calipers never unpickles files; save plain numeric arrays instead, e.g. "
    "np.savez(path, probs=np.asarray(probs, dtype=float), labels=np.asarray(labels, dtype=int))"
)
_TORCH_HINT = "torch.save({'probs': probs, 'labels': labels}, path)"
_PYARROW_MIN = (14, 0, 1)  # earlier versions unpickle extension types (CVE-2023-47248)

Kind = Literal["probs", "logits"]
KindBasis = Literal["argument", "name", "values", "default"]


class PredictionFileError(ValueError):
    """A prediction or labels file cannot be read, with a message saying how to fix it.

    A subclass of :class:`ValueError`.
    """


@dataclass(frozen=True, eq=False)
class PredictionFile:
    """Arrays read from a prediction file by :func:`read_predictions`.

    Attributes
    ----------
    probs : numpy.ndarray or None
        ``(n, k)`` probabilities (or ``(n,)`` P(y = 1)) when ``kind == "probs"``.
    logits : numpy.ndarray or None
        ``(n, k)`` (or ``(n,)``) logits when ``kind == "logits"``.
    labels : numpy.ndarray or None
        ``(n,)`` labels, or None when the file holds none and no labels file
        was given.
    source : str
        The path that was read (and the labels file, when one was given).
    kind : {"probs", "logits"}
        Which of ``probs`` and ``logits`` is set.
    note : str
        How the arrays were found (keys or columns used, and how the kind was
        decided), for messages and report headers.
    kind_basis : {"argument", "name", "default", "values"}, default "default"
        How ``kind`` was decided: given by the caller (``logits=`` or an
        explicit key), by a key or column name, by the format's convention,
        or detected from the values of a bare array (see :mod:`calipers.io`).
        When ``"values"``, :attr:`note` says what was detected and why.

    Examples
    --------
    >>> import numpy as np
    >>> pf = PredictionFile(probs=np.array([[0.8, 0.2]]), logits=None,
    ...                     labels=np.array([0]), source="x.npz", kind="probs", note="")
    >>> pf.array.shape, pf.n_samples, pf.kind_basis
    ((1, 2), 1, 'default')
    """

    probs: np.ndarray | None
    logits: np.ndarray | None
    labels: np.ndarray | None
    source: str
    kind: Kind
    note: str
    kind_basis: KindBasis = "default"

    @property
    def array(self) -> np.ndarray:
        """The probabilities or the logits, whichever the file holds."""
        arr = self.logits if self.kind == "logits" else self.probs
        assert arr is not None
        return arr

    @property
    def n_samples(self) -> int:
        """Number of rows ``n``."""
        return int(self.array.shape[0])

    @property
    def detected(self) -> bool:
        """True when :attr:`kind` was detected from the values (``kind_basis == "values"``)."""
        return self.kind_basis == "values"

    def check(self, *, renormalize: bool = False, **kwargs: Any) -> Predictions:
        """Validate with :func:`calipers.check_predictions` and return :class:`~calipers.Predictions`.

        Parameters
        ----------
        renormalize : bool, default False
            Divide each probability row by its sum (never done silently).
        **kwargs
            Passed on to :func:`~calipers.check_predictions` (``sum_tol``,
            ``sample_weight``, ...).

        Raises
        ------
        PredictionFileError
            If the file holds no labels.
        calipers.CalibrationInputError
            If the values break a rule of the validation layer.

        Examples
        --------
        >>> import numpy as np
        >>> pf = PredictionFile(probs=None, logits=np.array([[2.0, 0.0]]),
        ...                     labels=np.array([0]), source="x.npz", kind="logits", note="")
        >>> P = pf.check()
        >>> np.round(P.probs, 4)
        array([[0.8808, 0.1192]])
        """
        from .validation import check_predictions

        if self.labels is None:
            raise PredictionFileError(
                f"{self.source} holds no labels ({self.note}); give a labels file "
                "(labels_path=..., on the command line --labels FILE) or name the "
                "labels array (labels_key=..., --labels-key KEY)"
            )
        return check_predictions(
            self.array,
            self.labels,
            logits=self.kind == "logits",
            renormalize=renormalize,
            **kwargs,
        )


class _Read(NamedTuple):
    """What a format reader found."""

    arr: np.ndarray
    kind: Kind
    labels: np.ndarray | None
    note: str
    basis: KindBasis


# --------------------------------------------------------------------------- helpers


def _err(msg: str) -> PredictionFileError:
    return PredictionFileError(msg)


def _check_numeric(arr: np.ndarray, what: str, where: str) -> np.ndarray:
    if arr.dtype == object:
        raise _err(f"{where}: {what} contains Python objects; {_PICKLE_HINT}")
    if arr.dtype.names is not None:
        raise _err(
            f"{where}: {what} is a structured array with fields {list(arr.dtype.names)}; "
            "store each field as its own plain numeric array"
        )
    if arr.dtype.kind not in "biuf":
        raise _err(
            f"{where}: {what} must be numeric; got dtype {arr.dtype}. "
            "Store class indices as integers and probabilities as floats"
        )
    return arr


def _shape_error(where: str, shape: tuple[int, ...]) -> PredictionFileError:
    return _err(
        f"{where}: the predictions have shape {shape}; expected (n, k) for k classes "
        "or (n,) holding P(y = 1) for a binary problem"
    )


def _flag_kind(logits: bool) -> Kind:
    return "logits" if logits else "probs"


def _detect_kind(arr: np.ndarray, where: str, eps: float | None = None) -> tuple[Kind, str]:
    """Probabilities or logits from the values of a bare array, only when unambiguous.

    The rule of the recalibrators (:func:`calipers.validation` ``_read_kind``),
    so a file and an array in memory are read alike: probabilities when every
    row lies on the simplex (within the default ``sum_tol`` of
    :func:`calipers.check_predictions`, honest rounding of printed decimals
    included); logits when some entry is below -0.5 and at most half of the
    rows sum to 1 (no probability is that negative); otherwise a
    :class:`PredictionFileError` saying why both readings are possible
    (e.g. probabilities scaled by 1.01, percentages, one-vs-rest outputs).
    ``eps`` is the machine epsilon of the stored dtype (taken from ``arr``
    when None).
    """
    from .validation import CalibrationInputError, _read_kind

    if arr.ndim not in (1, 2):
        raise _shape_error(where, arr.shape)
    if eps is None:
        eps = float(np.finfo(arr.dtype if arr.dtype.kind == "f" else np.float64).eps)
    a = arr if arr.dtype in (np.float32, np.float64) else np.asarray(arr, dtype=np.float64)
    pass_hint = "pass logits=True or logits=False (on the command line --logits or --probs)"
    what = f"{where}: cannot tell whether the {arr.shape} array holds probabilities or logits"
    if a.size == 0:
        raise _err(f"{what}: it is empty; {pass_hint}")
    try:
        kind, why = _read_kind(a, eps)
    except CalibrationInputError as exc:  # a NaN or an infinity
        raise _err(f"{what}: {exc}; {pass_hint}") from None
    if kind is None:
        raise _err(f"{what}: {why}; {pass_hint}")
    if kind == "probs":
        if a.ndim == 1:
            why += ", read as P(y = 1) of a binary problem"
        return "probs", (
            f"detected as probabilities from the values: {why}; pass logits=True "
            "(--logits) if they are logits"
        )
    return "logits", (
        f"detected as logits from the values: {why}; pass logits=False (--probs) if they "
        "are probabilities"
    )


def _bare(arr: np.ndarray, where: str, logits: bool | None, desc: str, eps: float | None) -> _Read:
    """A bare array: the kind from ``logits`` when given, else detected from the values."""
    if logits is not None:
        kind = _flag_kind(logits)
        return _Read(arr, kind, None, f"{desc} given as {kind}", "argument")
    kind, why = _detect_kind(arr, where, eps)
    return _Read(arr, kind, None, f"{desc} {why}", "values")


def _sniff(path: Path) -> str:
    """What a non-NumPy file looks like from its first bytes (for messages only).

    Returns ``"pickle"`` for a pickle stream (protocol 2 or later starts with
    0x80) or a NumPy file or zip archive (which NumPy refused for its pickled
    objects), otherwise a phrase such as ``": it looks like CSV (first line ...)"``.
    Nothing is parsed or unpickled.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(512)
    except OSError:
        return ""
    if head[:1] == b"\x80" or head[:6] == b"\x93NUMPY" or head[:2] == b"PK":
        # a pickle stream, or a NumPy file / zip archive holding pickled objects
        return "pickle"
    if head[:4] == b"PAR1":
        return ": it is a Parquet file"
    if not head:
        return ": it is empty"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    first = text.splitlines()[0] if text.splitlines() else ""
    sep = "CSV" if "," in first else "text"
    return f": it looks like {sep} (first line {first[:60]!r})"


def _np_load(path: Path, what: str) -> Any:
    """``np.load`` with ``allow_pickle=False`` and messages that say what to do."""
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


def _find_key(files: Sequence[str], wanted: Sequence[str]) -> list[str]:
    return [f for f in files if f.lower() in wanted]


def _explicit_key(files: Sequence[str], key: str, option: str, path: Path) -> str:
    if key in files:
        return key
    folded = [f for f in files if f.lower() == key.lower()]
    if len(folded) == 1:
        return folded[0]
    raise _err(f"'{path}' has no array named '{key}' ({option}); it holds {_keys(files)}")


def _keys(files: Sequence[str]) -> str:
    return ", ".join(f"'{f}'" for f in files) if files else "no arrays"


_CHOOSE = (
    "name the one to use with probs_key=/logits_key=/labels_key= "
    "(on the command line --probs-key, --logits-key, --labels-key)"
)


def _pick_labels(
    files: Sequence[str],
    exclude: str,
    labels_key: str | None,
    get: Callable[[str], np.ndarray],
    path: Path,
    read_labels: bool,
) -> tuple[np.ndarray | None, str]:
    """The labels array of a keyed container (``.npz``, ``.pt`` dict, Parquet)."""
    if not read_labels:
        return None, ""
    if labels_key is not None:
        lkey = _explicit_key(files, labels_key, "labels_key", path)
        return get(lkey), f", labels from '{lkey}'"
    l_keys = [k for k in _find_key(files, LABELS_KEYS) if k != exclude]
    if len(l_keys) > 1:
        raise _err(
            f"'{path}' is ambiguous: arrays {_keys(l_keys)} could all be the labels "
            f"(keys found: {_keys(files)}); {_CHOOSE}"
        )
    if l_keys:
        return get(l_keys[0]), f", labels from '{l_keys[0]}'"
    return None, f", no labels array (keys found: {_keys(files)})"


def _from_mapping(
    files: list[str],
    get: Callable[[str], np.ndarray],
    path: Path,
    probs_key: str | None,
    logits_key: str | None,
    labels_key: str | None,
    logits: bool | None,
    read_labels: bool,
) -> _Read:
    """Predictions and labels from named arrays (``.npz``, a ``.pt`` dict, Parquet lists)."""
    basis: KindBasis = "name"
    if probs_key is not None and logits_key is not None:
        raise _err("give probs_key or logits_key, not both")
    if probs_key is not None:
        key = _explicit_key(files, probs_key, "probs_key", path)
        kind: Kind = "logits" if logits else "probs"
        how = f"array '{key}' given as {kind}"
        basis = "argument"
    elif logits_key is not None:
        if logits is False:
            raise _err("logits_key names logits; do not combine it with logits=False")
        key = _explicit_key(files, logits_key, "logits_key", path)
        kind = "logits"
        how = f"array '{key}' given as logits"
        basis = "argument"
    else:
        p_keys = _find_key(files, PROBS_KEYS)
        z_keys = _find_key(files, LOGITS_KEYS)
        if len(p_keys) > 1 or len(z_keys) > 1:
            many = p_keys if len(p_keys) > 1 else z_keys
            raise _err(
                f"'{path}' is ambiguous: arrays {_keys(many)} could all be the predictions "
                f"(keys found: {_keys(files)}); {_CHOOSE}"
            )
        if logits is True:
            cands = z_keys or p_keys
            kind = "logits"
            basis = "argument"
        elif logits is False:
            cands = p_keys
            kind = "probs"
            basis = "argument"
        elif p_keys and z_keys:
            raise _err(
                f"'{path}' holds both probabilities ('{p_keys[0]}') and logits "
                f"('{z_keys[0]}'); choose with probs_key='{p_keys[0]}' or "
                f"logits_key='{z_keys[0]}' (on the command line --probs-key or --logits)"
            )
        else:
            cands = p_keys or z_keys
            kind = "logits" if z_keys else "probs"
        if not cands:
            want = ", ".join(f"'{k}'" for k in PROBS_KEYS + LOGITS_KEYS)
            raise _err(
                f"'{path}' has no array recognised as predictions (keys found: "
                f"{_keys(files)}; recognised: {want}); rename the array or name it "
                "with probs_key=/logits_key= (--probs-key/--logits-key)"
            )
        key = cands[0]
        how = f"array '{key}' read as {kind}"
    arr = get(key)
    labels, lhow = _pick_labels(files, key, labels_key, get, path, read_labels)
    return _Read(arr, kind, labels, how + lhow, basis)


def _labels_key_in(files: Sequence[str], labels_key: str | None, path: Path) -> str:
    """The labels entry of a labels file holding named arrays."""
    if labels_key is not None:
        return _explicit_key(files, labels_key, "labels_key", path)
    if len(files) == 1:
        return files[0]
    found = _find_key(files, LABELS_KEYS)
    if len(found) != 1:
        raise _err(
            f"labels file '{path}' holds {_keys(files)}; name the labels array "
            "with labels_key= (--labels-key)"
        )
    return found[0]


# --------------------------------------------------------------------------- .npz / .npy


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


# --------------------------------------------------------------------------- columns (.csv, .parquet)

_INDEXED = re.compile(r"^(.*?)(\d+)$")


def _class_order(names: list[str]) -> tuple[list[int], str]:
    """Order of the class columns: by a trailing index if all share a prefix, else file order."""
    parts = [_INDEXED.match(n) for n in names]
    if all(parts):
        prefixes = {m.group(1) for m in parts if m}
        idx = [int(m.group(2)) for m in parts if m]
        if len(prefixes) == 1 and sorted(idx) == list(range(len(names))):
            order = sorted(range(len(names)), key=lambda j: idx[j])
            return order, f"columns {names[order[0]]}..{names[order[-1]]} by class index"
        if len(prefixes) == 1:
            raise _err(
                f"class columns {names} end in indices {idx}; indexed columns must "
                f"number the classes 0..{len(names) - 1}, each once"
            )
    return list(range(len(names))), "class columns in file order: " + ", ".join(names)


def _column_roles(
    names: list[str], where: str, logits: bool | None
) -> tuple[list[int], list[int], Kind, KindBasis]:
    """Label column, class columns and kind of a one-column-per-class table (CSV rules)."""
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _err(f"{where} has duplicate column names {dup}; every column needs its own name")
    label_cols = [j for j, n in enumerate(names) if n.lower() in LABELS_KEYS]
    if len(label_cols) > 1:
        raise _err(
            f"{where} has several label columns {[names[j] for j in label_cols]}; keep one "
            f"(named one of {', '.join(LABELS_KEYS)})"
        )
    class_cols = [j for j in range(len(names)) if j not in label_cols]
    if not class_cols:
        raise _err(f"{where} has no probability columns; add one column per class (p0, p1, ...)")
    cnames = [names[j] for j in class_cols]
    is_logit = [n.lower().startswith("logit") for n in cnames]
    if any(is_logit) and not all(is_logit):
        raise _err(
            f"{where} mixes logit columns with other columns ({cnames}); use either "
            "logit_0, logit_1, ... or probability columns, not both"
        )
    kind: Kind = "logits" if all(is_logit) or logits else "probs"
    if logits is False and all(is_logit):
        raise _err(f"{where} has logit columns ({cnames}) but logits=False was given")
    basis: KindBasis = "argument" if logits is not None else "name" if all(is_logit) else "default"
    return label_cols, class_cols, kind, basis


def _assemble_columns(
    names: list[str],
    label_cols: list[int],
    class_cols: list[int],
    kind: Kind,
    cols: Mapping[int, np.ndarray],
    labels_of: Callable[[list[str]], np.ndarray] | None,
    has_labels_path: bool,
) -> tuple[np.ndarray, np.ndarray | None, str]:
    """Stack the class columns in class order and convert the label column (CSV rules).

    ``labels_of(classes)`` converts the label column given the class names in
    class order (None when there is no label column).
    """
    cnames = [names[j] for j in class_cols]
    if len(class_cols) == 1:  # one column: P(y = 1) (or a logit) of a binary problem
        arr = cols[class_cols[0]]
        classes: list[str] = []
        how = f"column {cnames[0]} as the binary P(y = 1)"
        if kind == "logits":
            how = f"column {cnames[0]} as the binary logit"
    else:
        order, how = _class_order(cnames)
        arr = np.stack([cols[class_cols[o]] for o in order], axis=1)
        classes = [cnames[o] for o in order]
    labels: np.ndarray | None = None
    if labels_of is not None:
        labels = labels_of(classes)
        how += f"; labels from column '{names[label_cols[0]]}'"
    elif not has_labels_path:
        how += f"; no label column (columns: {', '.join(names)})"
    return arr, labels, f"{kind} from {how}"


def _labels_from_floats(raw: np.ndarray, where: str, lname: str) -> np.ndarray:
    """Integer labels from a float column; every value must be a whole number."""
    bad = ~np.isfinite(raw) | (raw != np.round(raw))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _err(
            f"{where} data row {i + 1}, column '{lname}': label {float(raw[i]):g} "
            "is not a class index (labels are integers 0..k-1 or class column names)"
        )
    return raw.astype(np.int64)


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


def _labels_from_strings(
    values: Sequence[str],
    classes: list[str],
    where: str,
    lines: Sequence[int] | None,
    at_word: str = "line",
) -> np.ndarray:
    """Integer labels from strings: class indices, or names from ``classes``."""
    stripped = [v.strip() for v in values]
    try:
        return np.array([int(v) for v in stripped], dtype=np.int64)
    except ValueError:
        pass
    lookup = {c: i for i, c in enumerate(classes)}
    out = np.empty(len(stripped), dtype=np.int64)
    for i, v in enumerate(stripped):
        if v in lookup:
            out[i] = lookup[v]
            continue
        try:
            f = float(v)
        except ValueError:
            f = None
        if f is not None and np.isfinite(f) and f == int(f):
            out[i] = int(f)
            continue
        known = f" or one of the class columns {classes}" if classes else ""
        at = f"{at_word} {lines[i]}" if lines is not None else f"entry {i}"
        raise _err(f"{where}, {at}: label {v!r} is not a class index{known}")
    return out


def _read_csv(path: Path, logits: bool | None, has_labels_path: bool) -> _Read:
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
    where = f"'{path}'"
    label_cols, class_cols, kind, basis = _column_roles(names, where, logits)
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


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- .parquet


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
                f"the first in data row {i + 1}; every row needs a value"
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
                    f"{self.where} column '{name}': data row {i + 1} holds {lengths[i]} values "
                    f"but data row 1 holds {width}; every row needs one value per class"
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
                f"{self.where} column '{name}', data row {i // max(width, 1) + 1}: value "
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
                return _labels_from_floats(raw, self.where, name)
            return raw.astype(np.int64)
        if cat == "string":
            values = [str(v) for v in self._array(name).to_pylist()]
            return _labels_from_strings(
                values,
                classes,
                f"{self.where} column '{name}'",
                range(1, len(values) + 1),
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


# --------------------------------------------------------------------------- .pt / .pth


def _torch_load(path: Path, what: str) -> Any:
    """``torch.load(weights_only=True)``: tensors and plain containers, nothing else."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        raise _err(f"'{path}': reading .pt/.pth files needs PyTorch: pip install torch") from None
    if path.is_dir():
        raise _err(f"{what} '{path}' is a directory, not a file")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. about the pickle protocol
            return torch.load(str(path), weights_only=True, map_location="cpu")
    except FileNotFoundError:
        raise _err(f"{what} '{path}' does not exist") from None
    except PermissionError:
        raise _err(f"{what} '{path}' cannot be read (permission denied)") from None
    except pickle.UnpicklingError as exc:
        text = str(exc)
        found = re.search(
            r"(Unsupported global: GLOBAL \S+|unsupported GLOBAL \S+|Unsupported operand \d+"
            r"|invalid load key[^\n.]*)",
            text,
        )
        reason = found.group(1) if found else "a Python object that is not a tensor"
        raise _err(
            f"{what} '{path}' was refused: it holds pickled Python objects other than tensors "
            f"({reason}). calipers never unpickles files: .pt files are loaded with "
            "torch.load(weights_only=True), which accepts only tensors, numbers, strings and "
            f"dicts, lists and tuples of them. Save plain tensors, e.g. {_TORCH_HINT}"
        ) from None
    except Exception as exc:  # torch raises RuntimeError, EOFError, ... on damaged files
        raise _err(
            f"{what} '{path}' is damaged or not a PyTorch file ({type(exc).__name__}: "
            f"{str(exc)[:200]}); save it again, e.g. {_TORCH_HINT}"
        ) from None


def _is_tensor(obj: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def _describe(obj: object) -> str:
    """What a loaded object is, for messages."""
    if _is_tensor(obj):
        return f"a tensor of shape {tuple(obj.shape)}"  # type: ignore[attr-defined]
    if isinstance(obj, Mapping):
        return f"a dict with keys {_keys([str(k) for k in obj])}"
    if isinstance(obj, (list, tuple)):
        items = ", ".join(_describe_short(x) for x in obj[:4]) + (", ..." if len(obj) > 4 else "")
        return f"a {type(obj).__name__} of {len(obj)} items ({items})"
    return f"a {type(obj).__name__}"


def _describe_short(obj: object) -> str:
    if _is_tensor(obj):
        return f"tensor {tuple(obj.shape)}"  # type: ignore[attr-defined]
    return type(obj).__name__


def _tensor_eps(t: Any) -> float | None:
    """Machine epsilon of a tensor's own dtype (None for non-float tensors)."""
    return float(sys.modules["torch"].finfo(t.dtype).eps) if t.dtype.is_floating_point else None


def _tensor_to_numpy(t: object, what: str, where: str) -> np.ndarray:
    """A dense real tensor as a NumPy array (a copy); ``bfloat16`` becomes ``float32``."""
    if not _is_tensor(t):
        raise _err(
            f"{where}: {what} is {_describe(t)}, not a tensor; store tensors, e.g. {_TORCH_HINT}"
        )
    torch = sys.modules["torch"]
    x: Any = t
    if x.layout != torch.strided:
        raise _err(f"{where}: {what} is a {x.layout} tensor; store a dense tensor (.to_dense())")
    if x.is_quantized or x.is_complex():
        raise _err(f"{where}: {what} has dtype {x.dtype}; store real numbers (float or integer)")
    x = x.detach()
    if x.dtype == torch.bfloat16:
        x = x.to(torch.float32)  # exact; NumPy has no bfloat16
    try:
        arr = np.array(x.cpu().resolve_conj().resolve_neg().numpy(), copy=True)
    except (RuntimeError, TypeError) as exc:
        raise _err(
            f"{where}: {what} (dtype {x.dtype}) cannot be converted to NumPy ({exc}); "
            "store float32/float64 probabilities and int64 labels"
        ) from None
    return _check_numeric(arr, what, where)


def _read_pt(
    path: Path,
    probs_key: str | None,
    logits_key: str | None,
    labels_key: str | None,
    logits: bool | None,
    read_labels: bool,
) -> _Read:
    obj = _torch_load(path, "prediction file")
    where = f"'{path}'"
    if isinstance(obj, Mapping):
        keys = list(obj)
        if not all(isinstance(k, str) for k in keys):
            raise _err(
                f"{where} holds a dict whose keys are not all strings ({keys[:6]}); use string "
                f"keys, e.g. {_TORCH_HINT}"
            )

        def get(key: str) -> np.ndarray:
            return _tensor_to_numpy(obj[key], f"entry '{key}'", where)

        return _from_mapping(
            keys, get, path, probs_key, logits_key, labels_key, logits, read_labels
        )
    expected = (
        "expected a tensor of predictions, a dict of tensors such as "
        "{'probs': ..., 'labels': ...}, or a tuple (scores, labels) of two tensors"
    )
    is_pair = isinstance(obj, (list, tuple)) and len(obj) == 2 and all(map(_is_tensor, obj))
    if not (_is_tensor(obj) or is_pair):
        raise _err(f"{where} holds {_describe(obj)}; {expected}")
    if probs_key is not None or logits_key is not None:
        raise _err(f"probs_key/logits_key name entries of a dict; {where} holds {_describe(obj)}")
    scores = obj[0] if is_pair else obj
    what = "the scores tensor" if is_pair else "the tensor"
    arr = _tensor_to_numpy(scores, what, where)
    if arr.ndim not in (1, 2):
        raise _shape_error(where, arr.shape)
    desc = f"{what} {arr.shape}" if is_pair else f"one {arr.shape} tensor"
    r = _bare(arr, where, logits, desc, _tensor_eps(scores))
    if is_pair and read_labels:
        labels = _tensor_to_numpy(obj[1], "the labels tensor", where)
        return r._replace(labels=labels, note=r.note + "; labels from the second tensor")
    return r


# --------------------------------------------------------------------------- labels files


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


# --------------------------------------------------------------------------- entry point


def read_predictions(
    path: str | Path,
    *,
    probs_key: str | None = None,
    logits_key: str | None = None,
    labels_key: str | None = None,
    labels_path: str | Path | None = None,
    logits: bool | None = None,
) -> PredictionFile:
    """Read predictions (probabilities or logits) and labels from a file.

    Never unpickles: NumPy files are loaded with ``allow_pickle=False`` and an
    array of Python objects is refused with an error; PyTorch files are loaded
    with ``torch.load(weights_only=True)``, which refuses pickled objects
    other than tensors and plain containers without running them. Values are
    not checked here (only numeric types and matching lengths); pass the
    result through :meth:`PredictionFile.check` (that is,
    :func:`calipers.check_predictions`). The supported formats, and how
    probabilities are told from logits, are described in :mod:`calipers.io`.

    Parameters
    ----------
    path : str or path-like
        An ``.npz``, ``.npy``, ``.csv``, ``.parquet`` (needs ``pyarrow``) or
        ``.pt``/``.pth`` (needs ``torch``) file.
    probs_key : str, optional
        The array holding the probabilities, when the keys are not recognised
        or are ambiguous: an ``.npz`` key, a key of a dict in a ``.pt`` file,
        or a list column of a ``.parquet`` file.
    logits_key : str, optional
        The same for logits.
    labels_key : str, optional
        The array holding the labels: in the prediction file (``.npz``, a
        ``.pt`` dict, a ``.parquet`` file with a list column), or in the
        labels file when ``labels_path`` is given.
    labels_path : str or path-like, optional
        A separate labels file (``.npy``, ``.npz``, ``.pt``/``.pth``,
        ``.parquet``, or ``.csv``/``.txt`` with one label per line); needed
        for ``.npy`` predictions and a bare tensor in a ``.pt`` file. When
        given, the labels of the prediction file (if any) are not read.
    logits : bool, optional
        ``True``: the array holds logits (for keyed files, a logits key is
        preferred when present). ``False``: probabilities. By default the
        kind comes from the key (``.npz``, ``.pt`` dicts, Parquet list
        columns) or column names (``.csv``/``.parquet``, logits when named
        ``logit_*``); an ``.npy`` file holds probabilities; a bare array (a
        ``.pt`` tensor or tuple, an unnamed Parquet list column) is detected
        from its values, or is an error when the values are ambiguous.

    Returns
    -------
    PredictionFile
        With :attr:`~PredictionFile.kind_basis` saying how the kind was
        decided and :attr:`~PredictionFile.note` saying why.

    Raises
    ------
    PredictionFileError
        When the file is missing, of an unknown type, holds Python objects, is
        ragged, its keys/columns are missing or ambiguous, or a bare array
        could be either probabilities or logits; the message says how to fix
        it.

    See Also
    --------
    calipers.check_predictions : The value checks applied afterwards.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from calipers.io import read_predictions
    >>> d = tempfile.mkdtemp()
    >>> f = os.path.join(d, "preds.npz")
    >>> np.savez(f, probs=np.array([[0.9, 0.1], [0.3, 0.7]]), labels=np.array([0, 0]))
    >>> pf = read_predictions(f)
    >>> pf.kind, pf.labels.tolist(), pf.note
    ('probs', [0, 0], "array 'probs' read as probs, labels from 'labels'")

    A CSV file with a header row, a label column and one column per class:

    >>> g = os.path.join(d, "preds.csv")
    >>> with open(g, "w") as fh:
    ...     _ = fh.write("label,p0,p1\\n0,0.9,0.1\\n1,0.3,0.7\\n")
    >>> pf = read_predictions(g)
    >>> pf.probs.tolist(), pf.labels.tolist()
    ([[0.9, 0.1], [0.3, 0.7]], [0, 1])
    >>> import calipers as cp
    >>> cp.accuracy(pf.check(), None)
    1.0

    A bare tensor in a ``.pt`` file (needs PyTorch) has its kind detected from
    the values, and the note says so, e.g. ``'one (2, 2) tensor detected as
    logits from the values: entry [0, 0] = 2 lies outside [0, 1]; pass
    logits=False (--probs) if they are probabilities'``.

    Ambiguous keys give an error that says how to choose:

    >>> np.savez(f, probs=np.ones((2, 2)) / 2, p=np.ones((2, 2)) / 2)
    >>> read_predictions(f)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calipers.io.PredictionFileError: '...preds.npz' is ambiguous: arrays 'probs', 'p' could all be the predictions ...
    """
    p = Path(path)
    suffix = p.suffix.lower()
    read_labels = labels_path is None
    if suffix == ".npz":
        r = _read_npz(p, probs_key, logits_key, labels_key, logits, read_labels)
    elif suffix in (".pt", ".pth"):
        r = _read_pt(p, probs_key, logits_key, labels_key, logits, read_labels)
    elif suffix == ".parquet":
        r = _read_parquet(p, probs_key, logits_key, labels_key, logits, not read_labels)
    elif suffix in (".npy", ".csv"):
        if probs_key is not None or logits_key is not None:
            raise _err(
                f"probs_key/logits_key apply to .npz files only (and to dicts in .pt files and "
                f"list columns in .parquet files); '{p}' is a {suffix} file"
            )
        if suffix == ".npy":
            r = _read_npy(p, logits)
        else:
            r = _read_csv(p, logits, not read_labels)
    elif suffix in (".pkl", ".pickle", ".p", ".joblib"):
        raise _err(f"'{p}' looks like a pickle; {_PICKLE_HINT} (.npz), or write a .csv file")
    else:
        raise _err(
            f"'{p}' has an unsupported type '{suffix or '(no suffix)'}'; calipers reads "
            f".npz ({_SAVEZ_HINT}), .npy (with a separate labels file), .csv "
            "(header row with a 'label' column and one column per class), .parquet "
            f"(the .csv layout, or a list column of vectors) and .pt/.pth ({_TORCH_HINT})"
        )
    arr, kind, labels, note, basis = r
    if arr.ndim not in (1, 2):
        raise _shape_error(f"'{p}'", arr.shape)
    source = str(p)
    if labels_path is not None:
        lp = Path(labels_path)
        labels, how = _read_labels_file(lp, labels_key)
        note += f"; labels from '{lp}' ({how})"
        source += f" (labels: {lp})"
    if labels is not None:
        if labels.ndim == 0 or labels.shape[0] != arr.shape[0]:
            got = "a scalar" if labels.ndim == 0 else f"{labels.shape[0]} labels"
            raise _err(
                f"{source}: {got} for {arr.shape[0]} rows of predictions; "
                "give exactly one label per row"
            )
    return PredictionFile(
        probs=arr if kind == "probs" else None,
        logits=arr if kind == "logits" else None,
        labels=labels,
        source=source,
        kind=kind,
        note=note,
        kind_basis=basis,
    )
