"""Files of Gaussian regression predictions: a mean, a variance (or std) and a target per row.

A probabilistic regression model predicts N(mu_i, sigma_i**2) for each target
``y_i`` (the variance regression setting of Gruber & Buettner 2022, §5 and
App. G.5). Such a file names its columns (``.csv``, ``.parquet``) or arrays
(``.npz``, a dict in ``.pt``); the names are matched case-insensitively against
the key tables of :mod:`calipers.io.keys` (``MEAN_KEYS``, ``VARIANCE_KEYS``,
``STD_KEYS``, ``TARGETS_KEYS``, ``WEIGHT_KEYS``), which include the names of
uncertainty-toolbox (``y_pred``, ``y_std``, ``y_true``), of scikit-learn's
``predict(X, return_std=True)`` examples (``y_mean``, ``y_std``) and of netcal
(``mean``, ``stddev``). The arrays are returned as stored, after checks of type,
shape and length only; the value checks (finite numbers, variances > 0) are
those of :func:`calipers.regression.check_gaussian`, a layer above this one.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .checks import _PICKLE_HINT, _check_numeric
from .csv import _csv_rows, _parse_float_column
from .keys import MEAN_KEYS, STD_KEYS, TARGETS_KEYS, VARIANCE_KEYS, WEIGHT_KEYS
from .npy import _np_load
from .npz import _npz_array
from .parquet import _import_pyarrow, _Parquet
from .prediction_file import _err
from .pt import _tensor_to_numpy, _torch_load

_SAVE_HINT = (
    "np.savez(path, mean=mean, var=var, y=y), a .csv file with the header 'mean,var,y', "
    "a .parquet file with those columns, or torch.save({'mean': mean, 'var': var, 'y': y}, path)"
)


@dataclass(frozen=True, eq=False)
class RegressionFile:
    """Arrays read from a file of Gaussian regression predictions by :func:`read_regression_file`.

    One row per target: a predicted mean and a predicted variance or standard
    deviation (Gruber & Buettner 2022, §5: the predictive distribution
    N(mean, variance)), the observed target and, optionally, a row weight. The
    arrays are as stored (``.csv`` values are parsed as float64); their values
    are not checked here. Validate them with
    :func:`calipers.regression.check_gaussian`, e.g.
    ``check_gaussian(**rf.as_kwargs())``.

    Attributes
    ----------
    mean : numpy.ndarray
        ``(n,)`` predicted means, in target units.
    variance : numpy.ndarray or None
        ``(n,)`` predicted variances (squared target units), or None when the
        file holds standard deviations.
    std : numpy.ndarray or None
        ``(n,)`` predicted standard deviations (target units), or None when
        the file holds variances. Exactly one of ``variance`` and ``std`` is set.
    targets : numpy.ndarray
        ``(n,)`` observed targets.
    sample_weight : numpy.ndarray or None
        ``(n,)`` row weights, or None when the file holds none.
    path : str
        The file that was read.
    note : str, default ""
        Which column or array was read for each role, for messages.

    Examples
    --------
    >>> import numpy as np
    >>> rf = RegressionFile(mean=np.array([0.0, 1.0]), variance=None, std=np.array([1.0, 2.0]),
    ...                     targets=np.array([0.5, 0.0]), sample_weight=None, path="r.npz")
    >>> rf.n_samples, sorted(k for k, v in rf.as_kwargs().items() if v is not None)
    (2, ['mean', 'std', 'targets'])
    >>> from calipers.regression import check_gaussian
    >>> check_gaussian(**rf.as_kwargs()).variance.tolist()
    [1.0, 4.0]
    """

    mean: np.ndarray
    variance: np.ndarray | None
    std: np.ndarray | None
    targets: np.ndarray
    sample_weight: np.ndarray | None
    path: str
    note: str = ""

    @property
    def n_samples(self) -> int:
        """Number of rows ``n``."""
        return int(self.mean.shape[0])

    @property
    def spread(self) -> str:
        """``"variance"`` or ``"std"``: which of the two the file holds."""
        return "variance" if self.variance is not None else "std"

    def as_kwargs(self) -> dict[str, np.ndarray | None]:
        """The arrays as the keyword arguments of :func:`calipers.regression.check_gaussian`.

        ``mean``, ``variance``, ``std``, ``targets`` and ``sample_weight``
        (Gruber & Buettner 2022, §5), the unset ones as None; every function
        of :mod:`calipers.regression` that takes ``sample_weight`` accepts
        them the same way.

        Returns
        -------
        dict
            The five arrays (or None), by argument name.

        Examples
        --------
        >>> import numpy as np
        >>> rf = RegressionFile(np.array([0.0]), np.array([1.0]), None, np.array([0.0]),
        ...                     None, "r.csv")
        >>> from calipers.regression import gaussian_nll
        >>> round(gaussian_nll(**rf.as_kwargs()), 6)
        0.918939
        """
        return {
            "mean": self.mean,
            "variance": self.variance,
            "std": self.std,
            "targets": self.targets,
            "sample_weight": self.sample_weight,
        }


# ------------------------------------------------------------------ which name holds what


def _matches(names: Sequence[str], wanted: Sequence[str]) -> list[str]:
    return [n for n in names if n.lower() in wanted]


def _listed(names: Sequence[str]) -> str:
    return ", ".join(f"'{n}'" for n in names) if names else "none"


def _explicit(names: Sequence[str], key: str, option: str, where: str, thing: str) -> str:
    if key in names:
        return key
    folded = [n for n in names if n.lower() == key.lower()]
    if len(folded) == 1:
        return folded[0]
    raise _err(f"{where} has no {thing} named '{key}' ({option}); it holds {_listed(names)}")


def _roles(
    names: Sequence[str], keys: Mapping[str, str | None], where: str, thing: str
) -> dict[str, str]:
    """Role (mean, variance, std, targets, weight) -> the name that holds it.

    An explicit key always wins; the other roles are found by the key tables,
    among the names not already taken. Two candidates for one role, or both a
    variance and a std without a key saying which, are errors.
    """
    tables = {
        "mean": MEAN_KEYS,
        "variance": VARIANCE_KEYS,
        "std": STD_KEYS,
        "targets": TARGETS_KEYS,
        "weight": WEIGHT_KEYS,
    }
    options = {r: f"{r}_key" for r in tables}
    found: dict[str, str] = {}
    for role, key in keys.items():
        if key is not None:
            name = _explicit(names, key, options[role], where, thing)
            if name in found.values():
                other = next(r for r, n in found.items() if n == name)
                raise _err(f"{where}: {thing} '{name}' is named both as {other} and as {role}")
            found[role] = name
    explicit_spread = "variance" in found or "std" in found
    for role, table in tables.items():
        if role in found or (explicit_spread and role in ("variance", "std")):
            continue
        cands = [n for n in _matches(names, table) if n not in found.values()]
        if len(cands) > 1:
            raise _err(
                f"{where} is ambiguous: {thing}s {_listed(cands)} could all be the {role}; "
                f"name the one to use with {options[role]}= (--{options[role].replace('_', '-')})"
            )
        if cands:
            found[role] = cands[0]
    if "variance" in found and "std" in found and not explicit_spread:
        raise _err(
            f"{where} holds both a variance ('{found['variance']}') and a standard deviation "
            f"('{found['std']}'); choose one with variance_key='{found['variance']}' or "
            f"std_key='{found['std']}' (--variance-key, --std-key)"
        )
    missing = [
        (role, table)
        for role, table in (
            ("mean", MEAN_KEYS),
            ("variance or std", VARIANCE_KEYS + STD_KEYS),
            ("targets", TARGETS_KEYS),
        )
        if not any(r in found for r in role.split(" or "))
    ]
    if missing:
        want = "; ".join(f"{role}: {', '.join(table)}" for role, table in missing)
        raise _err(
            f"{where} has no {thing} recognised as the {' or '.join(r for r, _ in missing)} "
            f"({thing}s found: {_listed(names)}; recognised, in any case: {want}); rename "
            f"the {thing} or name it with mean_key=, variance_key=, std_key=, targets_key= "
            "(--mean-key, --variance-key, --std-key, --targets-key)"
        )
    return found


def _one_d(arr: np.ndarray, name: str, thing: str, where: str) -> np.ndarray:
    arr = _check_numeric(arr, f"{thing} '{name}'", where)
    if arr.dtype.kind == "b":
        raise _err(f"{where}: {thing} '{name}' holds booleans; it must hold numbers")
    if arr.ndim != 1:
        raise _err(
            f"{where}: {thing} '{name}' has shape {arr.shape}; every array of a regression "
            "file is 1-D, one value per row"
        )
    return arr


def _assemble(
    names: Sequence[str],
    get: Callable[[str], np.ndarray],
    keys: Mapping[str, str | None],
    path: Path,
    thing: str,
) -> RegressionFile:
    where = f"'{path}'"
    roles = _roles(names, keys, where, thing)
    arrays = {role: _one_d(get(name), name, thing, where) for role, name in roles.items()}
    n = arrays["mean"].shape[0]
    for role, arr in arrays.items():
        if arr.shape[0] != n:
            raise _err(
                f"{where}: {thing} '{roles[role]}' ({role}) has {arr.shape[0]} rows but "
                f"'{roles['mean']}' (mean) has {n}; every {thing} needs one value per row"
            )
    if n == 0:
        raise _err(f"{where} has no data rows")
    order = ("mean", "variance", "std", "targets", "weight")
    note = ", ".join(f"{role} from '{roles[role]}'" for role in order if role in roles)
    unused = [nm for nm in names if nm not in roles.values()]
    if unused:
        note += f"; {thing}s not used: {_listed(unused)}"
    return RegressionFile(
        mean=arrays["mean"],
        variance=arrays.get("variance"),
        std=arrays.get("std"),
        targets=arrays["targets"],
        sample_weight=arrays.get("weight"),
        path=str(path),
        note=note,
    )


# ------------------------------------------------------------------ the formats


def _csv_names(path: Path) -> list[str]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), None)
    except FileNotFoundError:
        raise _err(f"regression file '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise _err(f"regression file '{path}' cannot be read as text: {exc}") from None
    if not header:
        raise _err(f"'{path}' is empty; a CSV file needs a header row such as 'mean,var,y'")
    return [h.strip() for h in header]


def _read_csv(path: Path, keys: Mapping[str, str | None]) -> RegressionFile:
    names = _csv_names(path)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _err(f"'{path}' has duplicate column names {dup}; every column needs its own name")
    rows, lines = _csv_rows(path, len(names))
    index = {n: j for j, n in enumerate(names)}

    def get(name: str) -> np.ndarray:
        return _parse_float_column([r[index[name]] for r in rows], name, path, lines)

    return _assemble(names, get, keys, path, "column")


def _read_npz(path: Path, keys: Mapping[str, str | None]) -> RegressionFile:
    data = _np_load(path, "regression file")
    if isinstance(data, np.ndarray):
        raise _err(
            f"'{path}' holds one unnamed array (an .npy file under an .npz name); a regression "
            f"file names its arrays, e.g. {_SAVE_HINT}"
        )
    with data:
        return _assemble(list(data.files), lambda k: _npz_array(data, k, path), keys, path, "array")


def _read_parquet(path: Path, keys: Mapping[str, str | None]) -> RegressionFile:
    pq = _Parquet(path, "regression file")
    if len(set(pq.names)) != len(pq.names):
        dup = sorted({n for n in pq.names if pq.names.count(n) > 1})
        raise _err(f"'{path}' has duplicate column names {dup}; every column needs its own name")

    def get(name: str) -> np.ndarray:
        if pq.category(name) != "numeric":
            typ = pq.table.schema.field(name).type
            raise _err(
                f"'{path}' column '{name}' has type {typ}; the columns of a regression file "
                "hold one number per row"
            )
        return pq.scalar(name)

    return _assemble(pq.names, get, keys, path, "column")


def _read_pt(path: Path, keys: Mapping[str, str | None]) -> RegressionFile:
    obj = _torch_load(path, "regression file")
    where = f"'{path}'"
    if not isinstance(obj, Mapping) or not all(isinstance(k, str) for k in obj):
        raise _err(
            f"{where} holds a {type(obj).__name__}, not a dict of tensors with string keys; "
            f"a regression file names its arrays, e.g. {_SAVE_HINT}"
        )
    return _assemble(
        list(obj),
        lambda k: _tensor_to_numpy(obj[k], f"entry '{k}'", where),
        keys,
        path,
        "entry",
    )


_READERS: dict[str, Callable[[Path, Mapping[str, str | None]], RegressionFile]] = {
    ".csv": _read_csv,
    ".npz": _read_npz,
    ".parquet": _read_parquet,
    ".pt": _read_pt,
    ".pth": _read_pt,
}


def _unsupported(p: Path) -> Exception:
    suffix = p.suffix.lower()
    if suffix == ".npy":
        return _err(
            f"'{p}' is an .npy file, which holds one unnamed array and so cannot say which "
            "values are the means, the variances and the targets; a regression file needs "
            f"named columns or arrays: .csv, .npz, .parquet or .pt/.pth, e.g. {_SAVE_HINT}"
        )
    if suffix in (".pkl", ".pickle", ".p", ".joblib"):
        return _err(f"'{p}' looks like a pickle; {_PICKLE_HINT}")
    return _err(
        f"'{p}' has an unsupported type '{suffix or '(no suffix)'}'; a regression file is "
        f".csv, .npz, .parquet or .pt/.pth, e.g. {_SAVE_HINT}"
    )


def read_regression_file(
    path: str | Path,
    *,
    mean_key: str | None = None,
    variance_key: str | None = None,
    std_key: str | None = None,
    targets_key: str | None = None,
    weight_key: str | None = None,
) -> RegressionFile:
    """Read Gaussian regression predictions (mean, variance or std, target) from a file.

    The input of the regression measures of Gruber & Buettner 2022 (§5 and
    App. G.5): one predictive distribution N(mean, variance) per target.
    Never unpickles (as :func:`read_predictions`); only types, shapes and
    lengths are checked here: validate the values (finite, variances > 0)
    with :func:`calipers.regression.check_gaussian`, e.g.
    ``check_gaussian(**rf.as_kwargs())``.

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` (header row), ``.npz``, ``.parquet`` (scalar columns; needs
        ``pyarrow``) or ``.pt``/``.pth`` (a dict of 1-D tensors; needs
        ``torch``) file. Columns or arrays are found by name, in any case:
        mean ``mean``, ``mu``, ``pred_mean``, ``prediction``, ``predictions``,
        ``y_pred``, ``y_mean``, ``y_hat``, ``yhat``, ``mean_prediction``;
        variance ``var``, ``variance``, ``sigma2``, ``pred_var``, ``y_var``,
        ``pred_variance``; standard deviation ``std``, ``sd``, ``sigma``,
        ``stddev``, ``stdev``, ``pred_std``, ``y_std``, ``y_sd``,
        ``std_prediction``, ``predictions_std``; targets ``y``, ``target``,
        ``targets``, ``y_true``, ``label``, ``y_test``; weights (optional)
        ``weight``, ``sample_weight``. So uncertainty-toolbox's
        ``y_pred, y_std, y_true`` and scikit-learn's ``y_mean, y_std`` are
        read as they are. Other columns are not read (the note lists them).
        ``.npy`` files cannot name their arrays and are refused.
    mean_key, targets_key, weight_key : str, optional
        The column or array holding the means, the targets, the row weights,
        when its name is not recognised or is ambiguous. Default None (found
        by name).
    variance_key, std_key : str, optional
        The column or array holding the variances, or the standard
        deviations. A file holding both is refused unless one of these says
        which to use. Default None.

    Returns
    -------
    RegressionFile
        The arrays as stored (``.csv``: float64) and a note of what was read.

    Raises
    ------
    PredictionFileError
        When the file is missing, of an unknown type or an ``.npy`` file,
        holds Python objects, a column that is not numeric or not 1-D, arrays
        of different lengths, or no (or several) candidates for a role; the
        message names the file, the column and, for text, the line.

    See Also
    --------
    is_regression_file : Whether a file names the arrays of regression predictions.
    calipers.regression.check_gaussian : The value checks applied afterwards.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from calipers.io import read_regression_file
    >>> f = os.path.join(tempfile.mkdtemp(), "reg.csv")
    >>> with open(f, "w") as fh:
    ...     _ = fh.write("id,mean,std,y\\n1,0.0,1.0,0.5\\n2,1.0,2.0,0.0\\n")
    >>> rf = read_regression_file(f)
    >>> rf.std.tolist(), rf.variance is None, rf.note
    ([1.0, 2.0], True, "mean from 'mean', std from 'std', targets from 'y'; columns not used: 'id'")
    >>> from calipers.regression import check_gaussian, crps_gaussian
    >>> round(crps_gaussian(check_gaussian(**rf.as_kwargs())), 4)
    0.4971
    """
    p = Path(path)
    reader = _READERS.get(p.suffix.lower())
    if reader is None:
        raise _unsupported(p)
    keys = {
        "mean": mean_key,
        "variance": variance_key,
        "std": std_key,
        "targets": targets_key,
        "weight": weight_key,
    }
    if variance_key is not None and std_key is not None:
        raise _err(f"'{p}': give variance_key or std_key, not both")
    return reader(p, keys)


# ------------------------------------------------------------------ detection


def _names(p: Path) -> list[str] | None:
    """The column or array names of a file, or None when they cannot be read."""
    suffix = p.suffix.lower()
    try:
        if suffix == ".csv":
            return _csv_names(p)
        if suffix == ".npz":
            data = _np_load(p, "file")
            if isinstance(data, np.ndarray):
                return None
            with data:
                return list(data.files)
        if suffix == ".parquet":
            return _parquet_names(p)
        if suffix in (".pt", ".pth"):
            obj = _torch_load(p, "file")
            return [str(k) for k in obj] if isinstance(obj, Mapping) else None
    except ValueError:  # PredictionFileError: the reader will say what is wrong
        return None
    return None


def _parquet_names(p: Path) -> list[str] | None:
    """A Parquet file's column names from its footer (no values read), less pandas' index."""
    pa, pq, _ = _import_pyarrow(p)
    try:
        with open(p, "rb") as fh:
            schema = pq.ParquetFile(fh, pre_buffer=False).schema_arrow
    except (pa.ArrowException, OSError, ValueError, EOFError):
        return None
    try:
        meta = schema.pandas_metadata or {}
    except ValueError:  # unreadable pandas metadata: keep every column, as the reader does
        meta = {}
    index = {c for c in meta.get("index_columns", []) if isinstance(c, str)}
    return [str(n) for n in schema.names if n not in index]


def is_regression_file(path: str | Path) -> bool:
    """Whether a file names the columns of Gaussian regression predictions.

    True when its column or array names (read without the values where the
    format allows: a CSV header, the member names of an ``.npz`` archive, a
    Parquet footer; a ``.pt`` file is loaded) include a mean, a variance or a
    standard deviation, and a target, by the names of
    :func:`read_regression_file` (Gruber & Buettner 2022, §5: a predicted mean
    and variance per target). The command line uses it to tell regression
    files from classification files.

    Parameters
    ----------
    path : str or path-like
        Any file; one that is missing, unreadable, an ``.npy`` file or of
        another type gives False.

    Returns
    -------
    bool
        Whether :func:`read_regression_file` would find every required role
        by name (it may still refuse the file, e.g. for an ambiguous name or
        a column that is not numeric).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from calipers.io import is_regression_file
    >>> d = tempfile.mkdtemp()
    >>> np.savez(os.path.join(d, "r.npz"), mu=np.zeros(3), sigma=np.ones(3), target=np.ones(3))
    >>> np.savez(os.path.join(d, "c.npz"), probs=np.ones((3, 2)) / 2, labels=np.zeros(3, int))
    >>> is_regression_file(os.path.join(d, "r.npz")), is_regression_file(os.path.join(d, "c.npz"))
    (True, False)
    """
    names = _names(Path(path))
    if names is None:
        return False
    return (
        bool(_matches(names, MEAN_KEYS))
        and bool(_matches(names, VARIANCE_KEYS + STD_KEYS))
        and bool(_matches(names, TARGETS_KEYS))
    )
