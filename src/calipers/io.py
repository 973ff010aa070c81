"""Read prediction files: probabilities or logits, and the true labels.

:func:`read_predictions` reads one file into a :class:`PredictionFile`. Nothing
is ever unpickled: NumPy files are opened with ``allow_pickle=False`` and an
array of Python objects is refused. The arrays are returned as they are
stored; the value checks (rows on the simplex, labels in range, ...) belong to
:func:`calipers.check_predictions`, which :meth:`PredictionFile.check` calls.

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

Labels files (``labels_path``) may be ``.npy``, ``.npz`` (one array, or a
labels key as above), or ``.csv``/``.txt`` with one label per line and an
optional header line.
"""

from __future__ import annotations

import csv
import re
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

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
        How the arrays were found (keys or columns used), for messages and
        report headers.

    Examples
    --------
    >>> import numpy as np
    >>> pf = PredictionFile(probs=np.array([[0.8, 0.2]]), logits=None,
    ...                     labels=np.array([0]), source="x.npz", kind="probs", note="")
    >>> pf.array.shape, pf.n_samples
    ((1, 2), 1)
    """

    probs: np.ndarray | None
    logits: np.ndarray | None
    labels: np.ndarray | None
    source: str
    kind: Literal["probs", "logits"]
    note: str

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


def _read_npz(
    path: Path,
    probs_key: str | None,
    logits_key: str | None,
    labels_key: str | None,
    logits: bool | None,
    read_labels: bool,
) -> tuple[np.ndarray, Literal["probs", "logits"], np.ndarray | None, str]:
    data = _np_load(path, "prediction file")
    if isinstance(data, np.ndarray):  # an .npy file with an .npz name
        return _from_npy_array(data, path, logits)
    with data:
        files = list(data.files)
        choose = (
            "name the one to use with probs_key=/logits_key=/labels_key= "
            "(on the command line --probs-key, --logits-key, --labels-key)"
        )
        # the predictions
        if probs_key is not None and logits_key is not None:
            raise _err("give probs_key or logits_key, not both")
        if probs_key is not None:
            key = _explicit_key(files, probs_key, "probs_key", path)
            kind: Literal["probs", "logits"] = "logits" if logits else "probs"
            how = f"array '{key}' given as {kind}"
        elif logits_key is not None:
            if logits is False:
                raise _err("logits_key names logits; do not combine it with logits=False")
            key = _explicit_key(files, logits_key, "logits_key", path)
            kind = "logits"
            how = f"array '{key}' given as logits"
        else:
            p_keys = _find_key(files, PROBS_KEYS)
            z_keys = _find_key(files, LOGITS_KEYS)
            if len(p_keys) > 1 or len(z_keys) > 1:
                many = p_keys if len(p_keys) > 1 else z_keys
                raise _err(
                    f"'{path}' is ambiguous: arrays {_keys(many)} could all be the predictions "
                    f"(keys found: {_keys(files)}); {choose}"
                )
            if logits is True:
                cands = z_keys or p_keys
                kind = "logits"
            elif logits is False:
                cands = p_keys
                kind = "probs"
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
        arr = _npz_array(data, key, path)
        # the labels
        labels: np.ndarray | None = None
        if not read_labels:
            pass
        elif labels_key is not None:
            lkey = _explicit_key(files, labels_key, "labels_key", path)
            labels = _npz_array(data, lkey, path)
            how += f", labels from '{lkey}'"
        else:
            l_keys = [k for k in _find_key(files, LABELS_KEYS) if k != key]
            if len(l_keys) > 1:
                raise _err(
                    f"'{path}' is ambiguous: arrays {_keys(l_keys)} could all be the labels "
                    f"(keys found: {_keys(files)}); {choose}"
                )
            if l_keys:
                labels = _npz_array(data, l_keys[0], path)
                how += f", labels from '{l_keys[0]}'"
            else:
                how += f", no labels array (keys found: {_keys(files)})"
    return arr, kind, labels, how


def _from_npy_array(
    arr: np.ndarray, path: Path, logits: bool | None
) -> tuple[np.ndarray, Literal["probs", "logits"], None, str]:
    arr = _check_numeric(arr, "the array", f"'{path}'")
    kind: Literal["probs", "logits"] = "logits" if logits else "probs"
    return arr, kind, None, f"one {arr.shape} array read as {kind}"


def _read_npy(
    path: Path, logits: bool | None
) -> tuple[np.ndarray, Literal["probs", "logits"], None, str]:
    arr = _np_load(path, "prediction file")
    if not isinstance(arr, np.ndarray):
        arr.close()
        raise _err(f"'{path}' is an .npz archive, not an .npy file; rename it to .npz")
    return _from_npy_array(arr, path, logits)


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
    values: Sequence[str], classes: list[str], where: str, lines: Sequence[int] | None
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
        if f is not None and f == int(f):
            out[i] = int(f)
            continue
        known = f" or one of the class columns {classes}" if classes else ""
        at = f"line {lines[i]}" if lines is not None else f"entry {i}"
        raise _err(f"{where}, {at}: label {v!r} is not a class index{known}")
    return out


def _read_csv(
    path: Path, logits: bool | None, has_labels_path: bool
) -> tuple[np.ndarray, Literal["probs", "logits"], np.ndarray | None, str]:
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
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _err(f"'{path}' has duplicate column names {dup}; every column needs its own name")
    label_cols = [j for j, n in enumerate(names) if n.lower() in LABELS_KEYS]
    if len(label_cols) > 1:
        raise _err(
            f"'{path}' has several label columns {[names[j] for j in label_cols]}; keep one "
            f"(named one of {', '.join(LABELS_KEYS)})"
        )
    class_cols = [j for j in range(len(names)) if j not in label_cols]
    if not class_cols:
        raise _err(f"'{path}' has no probability columns; add one column per class (p0, p1, ...)")
    cnames = [names[j] for j in class_cols]
    is_logit = [n.lower().startswith("logit") for n in cnames]
    if any(is_logit) and not all(is_logit):
        raise _err(
            f"'{path}' mixes logit columns with other columns ({cnames}); use either "
            "logit_0, logit_1, ... or probability columns, not both"
        )
    kind: Literal["probs", "logits"] = "logits" if all(is_logit) or logits else "probs"
    if logits is False and all(is_logit):
        raise _err(f"'{path}' has logit columns ({cnames}) but logits=False was given")
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
    raw_labels: Sequence[str] | np.ndarray | None
    line_nos: list[int] = []  # line of each data row (slow path only)
    if arr2d is not None and arr2d.shape[0] > 0 and arr2d.shape[1] == len(names):
        cols = {j: arr2d[:, j] for j in range(len(names))}
        raw_labels = cols[label_cols[0]] if label_cols else None
    else:
        rows, line_nos = _csv_rows(path, len(names))
        if not rows:
            raise _err(f"'{path}' has a header but no data rows")
        cols = {
            j: _parse_float_column([r[j] for r in rows], names[j], path, line_nos)
            for j in class_cols
        }
        raw_labels = [r[label_cols[0]] for r in rows] if label_cols else None
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
    if raw_labels is not None:
        lname = names[label_cols[0]]
        if isinstance(raw_labels, np.ndarray):
            bad = ~np.isfinite(raw_labels) | (raw_labels != np.round(raw_labels))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise _err(
                    f"'{path}' data row {i + 1}, column '{lname}': label {float(raw_labels[i]):g} "
                    "is not a class index (labels are integers 0..k-1 or class column names)"
                )
            labels = raw_labels.astype(np.int64)
        else:
            labels = _labels_from_strings(
                raw_labels, classes, f"'{path}' column '{lname}'", line_nos
            )
        how += f"; labels from column '{lname}'"
    elif not has_labels_path:
        how += f"; no label column (columns: {', '.join(names)})"
    return arr, kind, labels, f"{kind} from {how}"


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _read_labels_file(path: Path, labels_key: str | None) -> tuple[np.ndarray, str]:
    suffix = path.suffix.lower()
    if suffix in (".npy", ".npz"):
        data = _np_load(path, "labels file")
        if isinstance(data, np.ndarray):
            return _check_numeric(data, "the labels array", f"'{path}'"), "the array"
        with data:
            files = list(data.files)
            if labels_key is not None:
                key = _explicit_key(files, labels_key, "labels_key", path)
            elif len(files) == 1:
                key = files[0]
            else:
                found = _find_key(files, LABELS_KEYS)
                if len(found) != 1:
                    raise _err(
                        f"labels file '{path}' holds {_keys(files)}; name the labels array "
                        "with labels_key= (--labels-key)"
                    )
                key = found[0]
            return _npz_array(data, key, path), f"array '{key}'"
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
        f"labels file '{path}' has an unsupported type '{suffix}'; use .npy, .npz, or a "
        ".csv/.txt file with one label per line"
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
    array of Python objects is refused with an error. Values are not checked
    here (only numeric types and matching lengths); pass the result through
    :meth:`PredictionFile.check` (that is, :func:`calipers.check_predictions`).
    The supported formats are described in :mod:`calipers.io`.

    Parameters
    ----------
    path : str or path-like
        An ``.npz``, ``.npy`` or ``.csv`` file.
    probs_key : str, optional
        ``.npz`` only: the array holding the probabilities, when the keys are
        not recognised or are ambiguous.
    logits_key : str, optional
        ``.npz`` only: the array holding logits.
    labels_key : str, optional
        The array holding the labels: in the ``.npz`` prediction file, or in
        the ``.npz`` labels file when ``labels_path`` is given.
    labels_path : str or path-like, optional
        A separate labels file (``.npy``, ``.npz``, or ``.csv``/``.txt`` with
        one label per line); needed for ``.npy`` predictions. When given, the
        labels of the prediction file (if any) are not read.
    logits : bool, optional
        ``True``: the array holds logits (for ``.npz``, a logits key is
        preferred when present). ``False``: probabilities. By default the kind
        is detected from the key (``.npz``) or column names (``.csv``, logits
        when named ``logit_*``); an ``.npy`` file holds probabilities.

    Returns
    -------
    PredictionFile

    Raises
    ------
    PredictionFileError
        When the file is missing, of an unknown type, holds Python objects, is
        ragged, or its keys/columns are missing or ambiguous; the message says
        how to fix it.

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

    Ambiguous keys give an error that says how to choose:

    >>> np.savez(f, probs=np.ones((2, 2)) / 2, p=np.ones((2, 2)) / 2)
    >>> read_predictions(f)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calipers.io.PredictionFileError: '...preds.npz' is ambiguous: arrays 'probs', 'p' could all be the predictions ...
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".npz":
        arr, kind, labels, note = _read_npz(
            p, probs_key, logits_key, labels_key, logits, read_labels=labels_path is None
        )
    elif suffix in (".npy", ".csv"):
        if probs_key is not None or logits_key is not None:
            raise _err(f"probs_key/logits_key apply to .npz files only; '{p}' is a {suffix} file")
        if suffix == ".npy":
            arr, kind, labels, note = _read_npy(p, logits)
        else:
            arr, kind, labels, note = _read_csv(p, logits, labels_path is not None)
    elif suffix in (".pkl", ".pickle", ".p", ".pt", ".pth", ".joblib"):
        raise _err(f"'{p}' looks like a pickle; {_PICKLE_HINT} (.npz), or write a .csv file")
    else:
        raise _err(
            f"'{p}' has an unsupported type '{suffix or '(no suffix)'}'; calipers reads "
            f".npz ({_SAVEZ_HINT}), .npy (with a separate labels file) and .csv "
            "(header row with a 'label' column and one column per class)"
        )
    if arr.ndim not in (1, 2):
        raise _err(
            f"'{p}': the predictions have shape {arr.shape}; expected (n, k) for k classes "
            "or (n,) holding P(y = 1) for a binary problem"
        )
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
    )
