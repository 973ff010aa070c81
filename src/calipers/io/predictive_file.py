"""Files of any regression prediction: a Gaussian, quantiles, a central interval or samples per row.

A regression model states its predictive distribution for each target ``y_i``
in one of four forms, and a file says which by its column (or array) names:

* a Gaussian N(mean, variance) (Gruber & Buettner 2022, §5): the columns of
  :func:`calipers.io.read_regression_file`, read by it exactly as before;
* quantiles at stated levels, one column per level (the output of quantile
  regression: Koenker & Bassett 1978; LightGBM/XGBoost quantile objectives,
  quantile networks): ``q0.05``, ``quantile_0.05``, ``q_0.05`` (LightGBM,
  skforecast), ``q5``/``q05`` (percent), ``5%``/``2.5%`` (R's ``quantile``),
  ``0.05`` (pandas and sktime quantile frames), ``<target>_q0.05`` and
  ``<target>_0.05`` (darts), ``percentile_5``; or an ``(n, m)`` array
  ``quantiles`` with its ``levels``;
* a central interval ``lower``/``upper`` at a stated level (MAPIE-style
  prediction intervals; the level is not in the names, so it is given);
* samples (ensemble members, Monte Carlo dropout passes, posterior draws):
  numbered columns ``sample_0, sample_1, ...`` (also ``member_``, ``draw_``,
  ``ensemble_``, ``ens_``, ``realization_``, ``s0, s1, ...``, from 0 or 1,
  without gaps) or an ``(n, k)`` array ``samples`` (``ensemble``,
  ``members``, ``draws``).

Quantile levels are read from the decimal text of the name (``"q0.05"`` is
the float nearest 0.05, ``"q5"`` is 5 percent, also 0.05: the text is divided
by 100 in decimal arithmetic before the one rounding to float64), so a level
is the number written, not a product of rounding steps. The arrays are
returned as stored (``.csv``: float64) after checks of type, shape and length
and of the names (levels in (0, 1), no level twice, sample numbers without
gaps); the value checks (finite numbers, quantiles not crossing) belong to the
predictive distributions of :mod:`calipers.regression`, a layer above.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np

from .checks import _check_numeric
from .csv import _csv_rows, _parse_float_column
from .keys import MEAN_KEYS, STD_KEYS, TARGETS_KEYS, VARIANCE_KEYS, WEIGHT_KEYS
from .npy import _np_load
from .npz import _npz_array
from .parquet import _Parquet
from .prediction_file import _err
from .pt import _tensor_to_numpy, _torch_load
from .regression_file import (
    RegressionFile,
    _csv_names,
    _listed,
    _matches,
    _names,
    read_regression_file,
)

#: The kinds of regression prediction a file can hold, in the order they are tried.
PREDICTIVE_KINDS = ("gaussian", "quantiles", "interval", "samples")

#: Array keys (lower case) of an ``(n, k)`` array of samples.
SAMPLES_KEYS = ("samples", "ensemble", "members", "draws", "y_samples")
#: Array keys (lower case) of an ``(n, m)`` array of quantiles, and of its levels.
QUANTILES_KEYS = ("quantiles", "y_quantiles")
LEVELS_KEYS = ("levels", "quantile_levels")
#: Column names (lower case) of the ends of a central interval.
LOWER_KEYS = ("lower", "lo", "y_lower", "pred_lower", "lower_bound", "y_pred_lower")
UPPER_KEYS = ("upper", "hi", "y_upper", "pred_upper", "upper_bound", "y_pred_upper")
#: Column names (lower case) of point forecasts (a file of point forecasts and targets).
FORECAST_KEYS = (
    "forecast",
    "forecasts",
    "point_forecast",
    "y_pred",
    "prediction",
    "predictions",
    "pred",
    "y_hat",
    "yhat",
    "mean",
    "median",
)
#: Prefixes (lower case) of numbered sample columns.
SAMPLE_PREFIXES = (
    "sample",
    "samples",
    "member",
    "draw",
    "ensemble",
    "ens",
    "realization",
    "realisation",
    "s",
)

#: Sample prefixes that are also common feature names (scikit-learn's diabetes data has
#: s1 ... s6): numbered columns with only these prefixes are samples when nothing else is.
_WEAK_SAMPLE_PREFIXES = {"s"}

_SAVE_HINT = (
    "e.g. a .csv file with the header 'q0.05,q0.5,q0.95,y' (quantiles), "
    "'sample_0,sample_1,...,y' (samples), 'lower,upper,y' with interval_level= (an interval) "
    "or 'mean,std,y' (a Gaussian), or np.savez(path, samples=S, y=y)"
)

_NUMBER = re.compile(r"(?P<head>.*?)(?P<num>\d+(?:\.\d+)?|\.\d+)(?P<pct>%?)")
_QUANTILE_TAGS = ("quantile", "percentile", "q")
_SEPARATORS = "_- "


def quantile_level_text(name: str) -> tuple[str, str] | None:
    """The quantile level a column name states, as exact decimal text, and its prefix.

    Parameters
    ----------
    name : str
        A column or array name.

    Returns
    -------
    tuple of (str, str) or None
        ``(level, prefix)``: the level as decimal text (percentages divided by
        100 in decimal arithmetic, so ``"q5"`` gives ``"0.05"``) and the name's
        prefix before the level (``""`` for ``q0.05``; ``"target"`` for darts'
        ``target_q0.05``), or None when the name states no quantile level. The
        level may lie outside (0, 1): the caller refuses it, naming the column.

    Examples
    --------
    >>> from calipers.io.predictive_file import quantile_level_text
    >>> [quantile_level_text(n) for n in ("q0.05", "q_0.95", "q5", "97.5%", "target_q0.5")]
    [('0.05', ''), ('0.95', ''), ('0.05', ''), ('0.975', ''), ('0.5', 'target')]
    >>> quantile_level_text("sample_3") is None, quantile_level_text("p0") is None
    (True, True)
    """
    m = _NUMBER.fullmatch(name.strip())
    if m is None:
        return None
    head, num, pct = m.group("head"), m.group("num"), m.group("pct") == "%"
    core = head.rstrip(_SEPARATORS)
    low = core.lower()
    tag = next(
        (
            t
            for t in _QUANTILE_TAGS
            if low.endswith(t) and (len(low) == len(t) or low[-len(t) - 1] in _SEPARATORS)
        ),
        None,
    )
    if tag is not None:
        prefix = core[: len(core) - len(tag)].rstrip(_SEPARATORS)
        percent = pct or tag == "percentile" or "." not in num
    elif core == "":
        if not pct and "." not in num:
            return None  # a bare integer is a class name or an index, not a level
        prefix, percent = "", pct
    else:
        if head == core or not (pct or "." in num):
            return None  # feature_3, sample_0, x1: no level
        prefix, percent = core, pct
    try:
        value = Decimal(num) / 100 if percent else Decimal(num)
    except InvalidOperation:  # pragma: no cover - the pattern admits decimals only
        return None
    return _decimal_text(value), prefix


def _decimal_text(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text if "." in text or text != "0" else "0"


def _sample_index(name: str) -> tuple[str, int] | None:
    m = re.fullmatch(r"(?P<prefix>[A-Za-z]+)(?P<sep>[_-]?)(?P<num>\d+)", name.strip())
    if m is None or m.group("prefix").lower() not in SAMPLE_PREFIXES:
        return None
    return m.group("prefix").lower(), int(m.group("num"))


def _level_float(text: str, what: str, where: str) -> float:
    """A level from its decimal text: the one float64 nearest the number written."""
    try:
        value = Decimal(str(text).strip())
    except InvalidOperation:
        raise _err(f"{where}: {what} {text!r}, not a number") from None
    if not value.is_finite() or not 0 < value < 1:
        raise _err(
            f"{where}: {what} {text}, not a quantile level strictly inside (0, 1) "
            "(write levels as fractions, q0.05, or percentages, q5 or 5%)"
        )
    return float(value)


# ------------------------------------------------------------------ the result


@dataclass(frozen=True, eq=False)
class PredictiveFile:
    """Arrays read from a file of regression predictions by :func:`read_predictive_file`.

    One row per target and one predictive distribution per row, in the form
    :attr:`kind` names. The arrays are as stored (``.csv``: float64); the
    value checks (finite numbers, increasing quantiles, variances > 0) are
    made by the distributions of :mod:`calipers.regression` built from them.

    Attributes
    ----------
    kind : str
        ``"gaussian"``, ``"quantiles"``, ``"interval"`` or ``"samples"``.
    targets : numpy.ndarray
        ``(n,)`` observed targets.
    sample_weight : numpy.ndarray or None
        ``(n,)`` row weights, or None.
    path : str
        The file that was read.
    note : str
        Which column or array was read for each role, for messages.
    gaussian : RegressionFile or None
        For ``"gaussian"``: the file as :func:`read_regression_file` reads it.
    quantiles : numpy.ndarray or None
        For ``"quantiles"``: ``(n, m)`` quantiles, columns in increasing level;
        for ``"interval"``: ``(n, 2)``, the lower and the upper end.
    levels : tuple of str
        For ``"quantiles"``: the ``m`` levels as decimal text (``"0.05"``), in
        increasing order; :attr:`level_values` gives them as float64.
    interval_level : str or None
        For ``"interval"``: the central interval's level as decimal text
        (``"0.9"``: the interval between the 0.05- and the 0.95-quantile).
    samples : numpy.ndarray or None
        For ``"samples"``: ``(n, k)`` samples, members in column order.

    Examples
    --------
    >>> import numpy as np
    >>> pf = PredictiveFile(kind="quantiles", targets=np.array([1.0]), sample_weight=None,
    ...                     path="q.csv", quantiles=np.array([[0.0, 2.0]]),
    ...                     levels=("0.1", "0.9"))
    >>> pf.n_samples, pf.level_values.tolist()
    (1, [0.1, 0.9])
    """

    kind: str
    targets: np.ndarray
    sample_weight: np.ndarray | None
    path: str
    note: str = ""
    gaussian: RegressionFile | None = None
    quantiles: np.ndarray | None = None
    levels: tuple[str, ...] = field(default=())
    interval_level: str | None = None
    samples: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        """Number of rows ``n``."""
        return int(self.targets.shape[0])

    @property
    def level_values(self) -> np.ndarray:
        """``(m,)`` the quantile levels as float64 (each the float nearest its text)."""
        return np.array([float(Decimal(t)) for t in self.levels], dtype=np.float64)

    def describe(self) -> str:
        """What the rows hold, in words (for the command line's messages).

        Examples
        --------
        >>> import numpy as np
        >>> PredictiveFile(kind="samples", targets=np.zeros(3), sample_weight=None, path="s.npz",
        ...                samples=np.zeros((3, 50))).describe()
        '50 samples per row'
        """
        if self.kind == "quantiles":
            return f"quantiles at levels {', '.join(self.levels)}"
        if self.kind == "interval":
            return f"central {self.interval_level} intervals"
        if self.kind == "samples":
            assert self.samples is not None
            return f"{self.samples.shape[1]} samples per row"
        assert self.gaussian is not None
        return f"Gaussian (mean, {self.gaussian.spread})"


# ------------------------------------------------------------------ the formats


@dataclass
class _Source:
    """A file's names and a reader of one named array (any number of dimensions)."""

    names: list[str]
    get: Callable[[str], np.ndarray]
    thing: str  # "column", "array", "entry"
    where: str


def _csv_source(path: Path) -> _Source:
    names = _csv_names(path)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _err(f"'{path}' has duplicate column names {dup}; every column needs its own name")
    rows, lines = _csv_rows(path, len(names))
    index = {n: j for j, n in enumerate(names)}

    def get(name: str) -> np.ndarray:
        return _parse_float_column([r[index[name]] for r in rows], name, path, lines)

    return _Source(names, get, "column", f"'{path}'")


def _npz_source(path: Path) -> _Source:
    data = _np_load(path, "regression file")
    if isinstance(data, np.ndarray):
        raise _err(
            f"'{path}' holds one unnamed array (an .npy file under an .npz name); a regression "
            f"file names its arrays, {_SAVE_HINT}"
        )
    with data:
        arrays = {k: _npz_array(data, k, path) for k in data.files}
    return _Source(list(arrays), arrays.__getitem__, "array", f"'{path}'")


def _npy_source(path: Path) -> _Source:
    arr = _np_load(path, "regression file")
    names = list(arr.dtype.names or ()) if isinstance(arr, np.ndarray) else []
    if not names or arr.ndim != 1:
        raise _err(
            f"'{path}' is an .npy file holding one unnamed array, which cannot say which values "
            "are the predictions and which the targets; save named arrays (np.savez), or a "
            f"1-D structured array whose fields are named, {_SAVE_HINT}"
        )
    where = f"'{path}'"
    return _Source(names, lambda k: _check_numeric(arr[k], f"field '{k}'", where), "field", where)


def _parquet_source(path: Path) -> _Source:
    pq = _Parquet(path, "regression file")
    if len(set(pq.names)) != len(pq.names):
        dup = sorted({n for n in pq.names if pq.names.count(n) > 1})
        raise _err(f"'{path}' has duplicate column names {dup}; every column needs its own name")

    def get(name: str) -> np.ndarray:
        cat = pq.category(name)
        if cat == "list":
            return pq.matrix(name)
        if cat != "numeric":
            typ = pq.table.schema.field(name).type
            raise _err(
                f"'{path}' column '{name}' has type {typ}; the columns of a regression file "
                "hold one number, or a list of numbers, per row"
            )
        return pq.scalar(name)

    return _Source(pq.names, get, "column", f"'{path}'")


def _pt_source(path: Path) -> _Source:
    obj = _torch_load(path, "regression file")
    where = f"'{path}'"
    if not isinstance(obj, Mapping) or not all(isinstance(k, str) for k in obj):
        raise _err(
            f"{where} holds a {type(obj).__name__}, not a dict of tensors with string keys; "
            f"a regression file names its arrays, {_SAVE_HINT}"
        )
    return _Source(
        list(obj),
        lambda k: _tensor_to_numpy(obj[k], f"entry '{k}'", where),
        "entry",
        where,
    )


_SOURCES: dict[str, Callable[[Path], _Source]] = {
    ".csv": _csv_source,
    ".npz": _npz_source,
    ".npy": _npy_source,
    ".parquet": _parquet_source,
    ".pt": _pt_source,
    ".pth": _pt_source,
}


# ------------------------------------------------------------------ which names hold what


@dataclass
class _Candidates:
    """What a file's names could hold, found by name only."""

    gaussian: bool = False
    quantile_groups: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    quantiles_array: list[str] = field(default_factory=list)
    levels_array: list[str] = field(default_factory=list)
    sample_groups: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    samples_array: list[str] = field(default_factory=list)
    lower: list[str] = field(default_factory=list)
    upper: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)

    def kinds(self) -> list[str]:
        """The kinds whose names are all there, in :data:`PREDICTIVE_KINDS` order."""
        out = []
        if self.gaussian:
            out.append("gaussian")
        if self.quantile_groups or self.quantiles_array:
            out.append("quantiles")
        if self.lower and self.upper:
            out.append("interval")
        weak = set(self.sample_groups) <= _WEAK_SAMPLE_PREFIXES and not self.samples_array
        if (self.sample_groups or self.samples_array) and not (out and weak):
            out.append("samples")
        return out


def _candidates(names: Sequence[str]) -> _Candidates:
    c = _Candidates()
    c.gaussian = bool(_matches(names, MEAN_KEYS)) and bool(
        _matches(names, VARIANCE_KEYS + STD_KEYS)
    )
    roles = set(MEAN_KEYS + VARIANCE_KEYS + STD_KEYS + TARGETS_KEYS + WEIGHT_KEYS)
    for n in names:
        low = n.lower()
        if low in roles:
            continue
        if low in SAMPLES_KEYS:
            c.samples_array.append(n)
        elif low in QUANTILES_KEYS:
            c.quantiles_array.append(n)
        elif low in LEVELS_KEYS:
            c.levels_array.append(n)
        elif low in LOWER_KEYS:
            c.lower.append(n)
        elif low in UPPER_KEYS:
            c.upper.append(n)
        elif (s := _sample_index(n)) is not None:
            c.sample_groups.setdefault(s[0], []).append((n, s[1]))
        elif (q := quantile_level_text(n)) is not None:
            c.quantile_groups.setdefault(q[1], []).append((n, q[0]))
    c.targets = _matches(names, TARGETS_KEYS)
    return c


def predictive_file_kinds(path: str | Path) -> tuple[str, ...]:
    """The kinds of regression prediction a file's names could hold (by name only).

    Reads the names only where the format allows (a CSV header, the members
    of an ``.npz`` archive, a Parquet footer, the fields of a structured
    ``.npy`` array; a ``.pt`` file is loaded) and matches them as
    :func:`read_predictive_file` does. A file whose names hold a Gaussian
    (:func:`is_regression_file`) gives ``("gaussian", ...)``; a file without
    a target column gives ``()``.

    Parameters
    ----------
    path : str or path-like
        Any file; one that is missing or unreadable gives ``()``.

    Returns
    -------
    tuple of str
        Some of ``"gaussian"``, ``"quantiles"``, ``"interval"`` (lower and
        upper columns) and ``"samples"``, in that order; ``()`` when the file
        does not name regression predictions and a target.

    Examples
    --------
    >>> import tempfile, os
    >>> from calipers.io import predictive_file_kinds
    >>> f = os.path.join(tempfile.mkdtemp(), "q.csv")
    >>> with open(f, "w") as fh:
    ...     _ = fh.write("q0.1,q0.5,q0.9,y\\n0,1,2,1.5\\n")
    >>> predictive_file_kinds(f)
    ('quantiles',)
    """
    p = Path(path)
    if p.suffix.lower() == ".npy":
        try:
            arr = np.load(p, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return ()
        names = list(getattr(arr.dtype, "names", None) or ())
    else:
        names = _names(p) or []
    c = _candidates(names)
    return tuple(c.kinds()) if c.targets else ()


# ------------------------------------------------------------------ assembly


def _one(names: Sequence[str], key: str, option: str, where: str, thing: str) -> str:
    if key in names:
        return key
    folded = [n for n in names if n.lower() == key.lower()]
    if len(folded) == 1:
        return folded[0]
    raise _err(f"{where} has no {thing} named '{key}' ({option}); it holds {_listed(names)}")


def _split_list(value: str | Sequence[str] | Sequence[float] | None) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [repr(float(v)) if not isinstance(v, str) else v.strip() for v in value]


def _row_role(
    src: _Source, c: _Candidates, key: str | None, table: Sequence[str], role: str, taken: set[str]
) -> str | None:
    option = f"{role}_key"
    if key is not None:
        return _one(src.names, key, option, src.where, src.thing)
    cands = [n for n in _matches(src.names, table) if n not in taken]
    if len(cands) > 1:
        raise _err(
            f"{src.where} is ambiguous: {src.thing}s {_listed(cands)} could all be the {role}; "
            f"name the one to use with {option}= (--{option.replace('_', '-')})"
        )
    return cands[0] if cands else None


def _vector(src: _Source, name: str, role: str) -> np.ndarray:
    arr = src.get(name)
    if arr.dtype.kind == "b":
        raise _err(
            f"{src.where}: {src.thing} '{name}' ({role}) holds booleans; it must hold numbers"
        )
    if arr.ndim != 1:
        raise _err(
            f"{src.where}: {src.thing} '{name}' ({role}) has shape {arr.shape}; it must be 1-D, "
            "one value per row"
        )
    return arr


def _matrix(src: _Source, name: str, role: str) -> np.ndarray:
    arr = src.get(name)
    if arr.dtype.kind == "b":
        raise _err(
            f"{src.where}: {src.thing} '{name}' ({role}) holds booleans; it must hold numbers"
        )
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise _err(
            f"{src.where}: {src.thing} '{name}' ({role}) has shape {arr.shape}; it must be "
            "2-D, one row per target and one column per "
            + ("member" if role == "samples" else "level")
        )
    return arr


def _choose_kind(src: _Source, c: _Candidates, kind: str | None, implied: list[str]) -> str:
    if kind is not None:
        if kind not in PREDICTIVE_KINDS:
            raise _err(f"kind must be one of {', '.join(PREDICTIVE_KINDS)}; got {kind!r}")
        if implied and any(k != kind for k in implied):
            raise _err(
                f"{src.where}: kind={kind!r} (--kind) contradicts the options given for "
                f"{' and '.join(sorted(set(implied)))} predictions"
            )
        return kind
    if len(set(implied)) > 1:
        raise _err(
            f"{src.where}: the options given name {' and '.join(sorted(set(implied)))} "
            "predictions; give the options of one kind"
        )
    if implied:
        return implied[0]
    found = c.kinds()
    if "gaussian" in found:
        return "gaussian"  # read exactly as read_regression_file reads it
    if len(found) == 1:
        return found[0]
    if not found:
        partial = []
        if c.lower or c.upper:
            have = c.lower or c.upper
            missing = "upper" if c.lower else "lower"
            partial.append(
                f"{src.thing} {_listed(have)} is one end of an interval but no {missing} end "
                f"is there (named {', '.join(UPPER_KEYS if c.lower else LOWER_KEYS)})"
            )
        if c.levels_array:
            partial.append(
                f"{_listed(c.levels_array)} gives levels but no quantiles array is there"
            )
        detail = "; ".join(partial)
        raise _err(
            f"{src.where} has no {src.thing}s recognised as regression predictions "
            f"({src.thing}s found: {_listed(src.names)}"
            + (f"; {detail}" if detail else "")
            + f"); {_SAVE_HINT}; other names with --quantile-columns, --samples-key, "
            "--lower-key/--upper-key or --mean-key/--std-key"
        )
    what = []
    for k in found:
        if k == "quantiles":
            cols = [n for g in c.quantile_groups.values() for n, _ in g] + c.quantiles_array
            what.append(f"quantiles ({_listed(cols)})")
        elif k == "samples":
            cols = [n for g in c.sample_groups.values() for n, _ in g] + c.samples_array
            what.append(f"samples ({_listed(cols)})")
        elif k == "interval":
            what.append(f"an interval ({_listed(c.lower + c.upper)})")
    raise _err(
        f"{src.where} is ambiguous: its {src.thing}s could hold {' or '.join(what)}; "
        "say which with kind= (--kind " + "/".join(found) + ")"
    )


def _quantile_columns(
    src: _Source, c: _Candidates, columns: list[str] | None
) -> tuple[list[str], list[str]]:
    """The quantile columns and their levels' text, from the names (or the given columns)."""
    if columns is not None:
        cols = [_one(src.names, k, "quantile_columns", src.where, src.thing) for k in columns]
        texts = []
        for n in cols:
            q = quantile_level_text(n)
            texts.append(q[0] if q is not None else "")
        return cols, texts
    groups = c.quantile_groups
    if len(groups) > 1:
        listed = "; ".join(
            f"{_listed([n for n, _ in g])}" + (f" (prefix '{p}')" if p else "")
            for p, g in groups.items()
        )
        raise _err(
            f"{src.where} is ambiguous: its quantile {src.thing}s fall in {len(groups)} groups "
            f"({listed}); name the ones to use with quantile_columns= (--quantile-columns)"
        )
    ((_, group),) = groups.items()
    return [n for n, _ in group], [t for _, t in group]


def _read_quantiles(
    src: _Source,
    c: _Candidates,
    columns: list[str] | None,
    levels: list[str] | None,
    quantiles_key: str | None,
    taken: set[str],
) -> tuple[np.ndarray, tuple[str, ...], str]:
    if quantiles_key is not None or (columns is None and not c.quantile_groups):
        if quantiles_key is not None:
            name = _one(src.names, quantiles_key, "quantiles_key", src.where, src.thing)
        elif len(c.quantiles_array) > 1:
            raise _err(
                f"{src.where} is ambiguous: {_listed(c.quantiles_array)} could all be the "
                "quantiles; name one with quantiles_key= (--quantiles-key)"
            )
        else:
            name = c.quantiles_array[0]
        Q = _matrix(src, name, "quantiles")
        taken.add(name)
        if levels is None:
            if len(c.levels_array) != 1:
                raise _err(
                    f"{src.where}: the quantiles array '{name}' needs its levels: an array "
                    f"named {' or '.join(LEVELS_KEYS)} in the file, or quantile_levels= "
                    "(--quantile-levels 0.05,0.5,0.95)"
                )
            lv = src.get(c.levels_array[0])
            taken.add(c.levels_array[0])
            if lv.ndim != 1 or lv.dtype.kind not in "fiu":
                raise _err(
                    f"{src.where}: the levels array '{c.levels_array[0]}' has shape {lv.shape}; "
                    "it must be 1-D, one level per column of the quantiles"
                )
            texts = [repr(float(v)) for v in lv]
            source = f"levels from '{c.levels_array[0]}'"
        else:
            texts, source = levels, "levels from quantile_levels"
        if len(texts) != Q.shape[1]:
            raise _err(
                f"{src.where}: the quantiles array '{name}' has {Q.shape[1]} columns but "
                f"{len(texts)} levels are given; give one level per column"
            )
        checked = [
            _level_float(t, f"level {j} of the quantiles array '{name}' is", src.where)
            for j, t in enumerate(texts)
        ]
        order = np.argsort(checked, kind="stable")
        _no_repeats([f"column {j} of '{name}'" for j in range(len(texts))], checked, src.where)
        text = tuple(_decimal_text(Decimal(texts[j])) for j in order)
        return Q[:, order], text, f"quantiles from '{name}' ({source})"
    cols, texts = _quantile_columns(src, c, columns)
    if levels is not None:
        if len(levels) != len(cols):
            raise _err(
                f"{src.where}: {len(cols)} quantile {src.thing}s ({_listed(cols)}) but "
                f"{len(levels)} levels (quantile_levels); give one level per {src.thing}"
            )
        texts = list(levels)
    for n, t in zip(cols, texts, strict=True):
        if t == "":
            raise _err(
                f"{src.where}: the name of {src.thing} '{n}' states no quantile level; give the "
                "levels with quantile_levels= (--quantile-levels), one per column"
            )
    checked = [
        _level_float(t, f"{src.thing} '{n}' gives level", src.where)
        for n, t in zip(cols, texts, strict=True)
    ]
    _no_repeats([f"{src.thing} '{n}'" for n in cols], checked, src.where)
    order = np.argsort(checked, kind="stable")
    arrays = [_vector(src, cols[j], f"quantile {texts[j]}") for j in order]
    taken.update(cols)
    if len({a.shape[0] for a in arrays}) != 1:
        raise _err(f"{src.where}: the quantile {src.thing}s have different lengths")
    Q = np.stack(arrays, axis=1)
    text = tuple(_decimal_text(Decimal(texts[j])) for j in order)
    how = ", ".join(f"'{cols[j]}'" for j in order)
    return Q, text, f"quantiles from {how}"


def _no_repeats(what: list[str], values: list[float], where: str) -> None:
    seen: dict[float, str] = {}
    for w, v in zip(what, values, strict=True):
        if v in seen:
            raise _err(
                f"{where}: {seen[v]} and {w} both give the quantile level {v!r}; every level "
                "needs one column"
            )
        seen[v] = w


def _read_samples(
    src: _Source, c: _Candidates, samples_key: str | None, taken: set[str]
) -> tuple[np.ndarray, str]:
    if samples_key is not None:
        if any(n == samples_key or n.lower() == samples_key.lower() for n in src.names):
            name = _one(src.names, samples_key, "samples_key", src.where, src.thing)
            taken.add(name)
            return _matrix(src, name, "samples"), f"samples from '{name}'"
        pref = samples_key.lower()
        members = []
        for n in src.names:
            m = re.fullmatch(re.escape(pref) + r"[_-]?(\d+)", n.strip().lower())
            if m is not None:
                members.append((n, int(m.group(1))))
        if not members:
            raise _err(
                f"{src.where} has no {src.thing} named '{samples_key}' and no numbered "
                f"{src.thing}s '{samples_key}0', '{samples_key}_0', ... (samples_key); it holds "
                f"{_listed(src.names)}"
            )
        groups = {pref: members}
    elif c.samples_array and not c.sample_groups:
        if len(c.samples_array) > 1:
            raise _err(
                f"{src.where} is ambiguous: {_listed(c.samples_array)} could all be the samples; "
                "name one with samples_key= (--samples-key)"
            )
        name = c.samples_array[0]
        taken.add(name)
        return _matrix(src, name, "samples"), f"samples from '{name}'"
    else:
        groups = c.sample_groups
        strong = {p: g for p, g in groups.items() if p not in _WEAK_SAMPLE_PREFIXES}
        if strong:
            groups = strong  # sample_0.. beside features s1, s2: the features stay unused
        if c.samples_array or len(groups) > 1:
            listed = "; ".join(_listed([n for n, _ in g]) for g in groups.values())
            extra = f"; {_listed(c.samples_array)}" if c.samples_array else ""
            raise _err(
                f"{src.where} is ambiguous: its sample {src.thing}s fall in several groups "
                f"({listed}{extra}); name the one to use with samples_key= (--samples-key)"
            )
    ((_, members),) = groups.items()
    members.sort(key=lambda t: t[1])
    idx = [i for _, i in members]
    first = idx[0]
    if first not in (0, 1) or idx != list(range(first, first + len(idx))):
        missing = sorted(set(range(min(0 if first == 0 else 1, first), idx[-1] + 1)) - set(idx))
        dup = sorted({i for i in idx if idx.count(i) > 1})
        problem = (
            f"number {dup[0]} appears twice"
            if dup
            else f"number{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing[:5]))} "
            + ("are" if len(missing) > 1 else "is")
            + " missing"
        )
        raise _err(
            f"{src.where}: the sample {src.thing}s {members[0][0]} ... {members[-1][0]} are "
            f"ragged ({problem}); number the members 0, 1, ..., k-1 without gaps, or name the "
            "columns to use with samples_key="
        )
    arrays = [_vector(src, n, "sample") for n, _ in members]
    taken.update(n for n, _ in members)
    return np.stack(arrays, axis=1), f"samples from {members[0][0]} ... {members[-1][0]}"


def read_predictive_file(
    path: str | Path,
    *,
    kind: str | None = None,
    quantile_columns: str | Sequence[str] | None = None,
    quantile_levels: str | Sequence[str] | Sequence[float] | None = None,
    quantiles_key: str | None = None,
    samples_key: str | None = None,
    lower_key: str | None = None,
    upper_key: str | None = None,
    interval_level: str | float | None = None,
    mean_key: str | None = None,
    variance_key: str | None = None,
    std_key: str | None = None,
    targets_key: str | None = None,
    weight_key: str | None = None,
) -> PredictiveFile:
    """Read regression predictions of any kind (Gaussian, quantiles, interval, samples) from a file.

    The predictive distribution of each row in one of the forms of the
    module docstring: a Gaussian (Gruber & Buettner 2022, §5; read by
    :func:`read_regression_file`, unchanged), quantiles at stated levels
    (quantile regression, Koenker & Bassett 1978), a central interval at a
    stated level (evaluated by the interval score of Gneiting & Raftery
    2007, §6.2) or samples (an ensemble; Gneiting & Raftery 2007, §4.2).
    The kind is found from the names; a file whose names hold a Gaussian is
    read as one (as before), and names that could hold two other kinds are
    refused unless ``kind=`` says which. Never unpickles.

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` (header row), ``.npz``, ``.parquet`` (numeric or
        list-of-number columns), ``.pt``/``.pth`` (a dict of tensors) or
        ``.npy`` file holding a structured array with named fields.
    kind : {"gaussian", "quantiles", "interval", "samples"}, optional
        The kind to read, when the names allow several. Default None (from
        the names and the options given).
    quantile_columns : str or sequence of str, optional
        The quantile columns (a comma-separated string or a list), when their
        names are not recognised or several groups are there. Their levels
        come from their names or from ``quantile_levels``.
    quantile_levels : str or sequence, optional
        One level per quantile column (or per column of the quantiles array),
        in (0, 1): a comma-separated string of decimals (``"0.05,0.5,0.95"``,
        each read as the float64 nearest the decimal written) or a sequence.
    quantiles_key : str, optional
        The ``(n, m)`` array (or Parquet list column) of quantiles; its levels
        from an array ``levels`` / ``quantile_levels`` in the file or from
        ``quantile_levels``.
    samples_key : str, optional
        The ``(n, k)`` array of samples, or the prefix of numbered sample
        columns (``"ens"`` for ``ens_0, ens_1, ...``).
    lower_key, upper_key : str, optional
        The columns of the lower and the upper end of a central interval.
    interval_level : str or float, optional
        The level of the central interval (``0.9``: between the 0.05- and
        the 0.95-quantile); required for an interval file.
    mean_key, variance_key, std_key : str, optional
        The columns of a Gaussian, as in :func:`read_regression_file`.
    targets_key, weight_key : str, optional
        The targets' and the row weights' column, when their names are not
        recognised (``y``, ``target``, ``y_true``, ...; ``weight``,
        ``sample_weight``) or are ambiguous.

    Returns
    -------
    PredictiveFile
        The kind, the arrays as stored and a note of what was read.

    Raises
    ------
    PredictionFileError
        A missing or unreadable file; no names recognised; names of several
        kinds or several groups (ambiguous); a lone interval end; a level
        outside (0, 1) or given twice; sample columns with a gap in their
        numbers (ragged); arrays of the wrong shape or of different lengths.
        The message names the file and the columns.

    See Also
    --------
    read_regression_file : The Gaussian reader, used for Gaussian files.
    predictive_file_kinds : The kinds a file's names could hold.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from calipers.io import read_predictive_file
    >>> d = tempfile.mkdtemp()
    >>> f = os.path.join(d, "q.csv")
    >>> with open(f, "w") as fh:
    ...     _ = fh.write("id,q95,q5,q50,y\\n1,2.0,-2.0,0.1,0.4\\n2,3.0,-1.0,1.0,3.5\\n")
    >>> pf = read_predictive_file(f)
    >>> pf.kind, pf.levels, pf.quantiles.tolist()
    ('quantiles', ('0.05', '0.5', '0.95'), [[-2.0, 0.1, 2.0], [-1.0, 1.0, 3.0]])
    >>> np.savez(os.path.join(d, "s.npz"), samples=np.arange(6.0).reshape(2, 3), y=[0.5, 4.0])
    >>> pf = read_predictive_file(os.path.join(d, "s.npz"))
    >>> pf.kind, pf.samples.shape, pf.note
    ('samples', (2, 3), "samples from 'samples', targets from 'y'")
    """
    p = Path(path)
    opener = _SOURCES.get(p.suffix.lower())
    if opener is None:
        raise _err(
            f"'{p}' has an unsupported type '{p.suffix.lower() or '(no suffix)'}'; a regression "
            f"file is .csv, .npz, .parquet, .pt/.pth or a structured .npy, {_SAVE_HINT}"
        )
    cols = _split_list(quantile_columns)
    lvls = _split_list(quantile_levels)
    implied: list[str] = []
    if cols is not None or lvls is not None or quantiles_key is not None:
        implied.append("quantiles")
    if samples_key is not None:
        implied.append("samples")
    if lower_key is not None or upper_key is not None or interval_level is not None:
        implied.append("interval")
    if any(k is not None for k in (mean_key, variance_key, std_key)):
        implied.append("gaussian")
    gaussian_keys = {
        "mean_key": mean_key,
        "variance_key": variance_key,
        "std_key": std_key,
        "targets_key": targets_key,
        "weight_key": weight_key,
    }
    if p.suffix.lower() != ".npy" and kind in (None, "gaussian"):
        names = _names(p)
        if names is not None:
            c0 = _candidates(names)
            chosen = kind or (
                implied[0]
                if len(set(implied)) == 1
                else ("gaussian" if c0.gaussian and not implied else None)
            )
            if chosen == "gaussian":
                rf = read_regression_file(p, **gaussian_keys)
                return PredictiveFile(
                    kind="gaussian",
                    targets=rf.targets,
                    sample_weight=rf.sample_weight,
                    path=rf.path,
                    note=rf.note,
                    gaussian=rf,
                )
    src = opener(p)
    c = _candidates(src.names)
    chosen = _choose_kind(src, c, kind, implied)
    if chosen == "gaussian":
        raise _err(f"{src.where}: a Gaussian is read from .csv, .npz, .parquet or .pt files")
    taken: set[str] = set()
    quantiles: np.ndarray | None = None
    samples: np.ndarray | None = None
    levels: tuple[str, ...] = ()
    level_text: str | None = None
    if chosen == "quantiles":
        quantiles, levels, how = _read_quantiles(src, c, cols, lvls, quantiles_key, taken)
    elif chosen == "samples":
        samples, how = _read_samples(src, c, samples_key, taken)
    else:
        lo = _row_role(src, c, lower_key, LOWER_KEYS, "lower", taken)
        hi = _row_role(src, c, upper_key, UPPER_KEYS, "upper", taken)
        if lo is None or hi is None:
            raise _err(
                f"{src.where} has no {src.thing} recognised as the "
                f"{'lower' if lo is None else 'upper'} end of the interval (names: "
                f"{', '.join(LOWER_KEYS if lo is None else UPPER_KEYS)}; {src.thing}s found: "
                f"{_listed(src.names)}); name it with lower_key= / upper_key="
            )
        if interval_level is None:
            raise _err(
                f"{src.where}: the interval {src.thing}s '{lo}' and '{hi}' do not say their "
                "level; give it with interval_level= (--interval-level 0.9 for the central "
                "90 % interval)"
            )
        level_text = str(interval_level).strip()
        _level_float(level_text, "the interval level (interval_level) is", src.where)
        level_text = _decimal_text(Decimal(level_text))
        quantiles = np.stack([_vector(src, lo, "lower"), _vector(src, hi, "upper")], axis=1)
        taken.update((lo, hi))
        how = f"interval from '{lo}' (lower) and '{hi}' (upper) at level {level_text}"
    tname = _row_role(src, c, targets_key, TARGETS_KEYS, "targets", taken)
    if tname is None:
        raise _err(
            f"{src.where} has no {src.thing} recognised as the targets ({src.thing}s found: "
            f"{_listed(src.names)}; recognised, in any case: {', '.join(TARGETS_KEYS)}); name "
            "it with targets_key= (--targets-key)"
        )
    taken.add(tname)
    y = _vector(src, tname, "targets")
    wname = _row_role(src, c, weight_key, WEIGHT_KEYS, "weight", taken)
    w = None
    if wname is not None:
        taken.add(wname)
        w = _vector(src, wname, "weight")
    body = quantiles if quantiles is not None else samples
    assert body is not None
    n = y.shape[0]
    if body.shape[0] != n or (w is not None and w.shape[0] != n):
        raise _err(
            f"{src.where}: the targets '{tname}' have {n} rows but the predictions have "
            f"{body.shape[0]}"
            + (f" and the weights '{wname}' {w.shape[0]}" if w is not None else "")
            + f"; every {src.thing} needs one value per row"
        )
    if n == 0:
        raise _err(f"{src.where} has no data rows")
    note = f"{how}, targets from '{tname}'" + (f", weights from '{wname}'" if wname else "")
    unused = [nm for nm in src.names if nm not in taken]
    if unused:
        note += f"; {src.thing}s not used: {_listed(unused)}"
    return PredictiveFile(
        kind=chosen,
        targets=y,
        sample_weight=w,
        path=str(p),
        note=note,
        quantiles=quantiles,
        levels=levels,
        interval_level=level_text,
        samples=samples,
    )


def read_point_forecast_file(
    path: str | Path,
    *,
    forecast_key: str | None = None,
    targets_key: str | None = None,
    weight_key: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, str]:
    """Read point forecasts and their targets (and optional row weights) from a file.

    A point forecast states one functional of the predictive distribution
    per row (the mean, the median, a quantile or an expectile; Gneiting &
    Resin 2023): a column of forecasts, found by name (``forecast``,
    ``y_pred``, ``prediction``, ``pred``, ``y_hat``, ``mean``, ``median``,
    any case) or by ``forecast_key``, and a column of targets, in the
    formats of :func:`read_predictive_file`.

    Parameters
    ----------
    path : str or path-like
        A ``.csv``, ``.npz``, ``.parquet``, ``.pt``/``.pth`` or structured ``.npy`` file.
    forecast_key, targets_key, weight_key : str, optional
        The columns of the forecasts, the targets and the row weights, when
        their names are not recognised or are ambiguous. Default None.

    Returns
    -------
    forecasts, targets : numpy.ndarray
        ``(n,)`` as stored (``.csv``: float64).
    sample_weight : numpy.ndarray or None
        ``(n,)`` row weights, or None.
    note : str
        Which column was read for each role.

    Raises
    ------
    PredictionFileError
        No (or several) candidates for a role, columns of different lengths
        or not 1-D; the message names the file and the columns.

    Examples
    --------
    >>> import tempfile, os
    >>> from calipers.io import read_point_forecast_file
    >>> f = os.path.join(tempfile.mkdtemp(), "p.csv")
    >>> with open(f, "w") as fh:
    ...     _ = fh.write("y_pred,y\\n1.0,1.5\\n2.0,1.0\\n")
    >>> z, y, w, note = read_point_forecast_file(f)
    >>> z.tolist(), y.tolist(), w, note
    ([1.0, 2.0], [1.5, 1.0], None, "forecasts from 'y_pred', targets from 'y'")
    """
    p = Path(path)
    opener = _SOURCES.get(p.suffix.lower())
    if opener is None:
        raise _err(
            f"'{p}' has an unsupported type '{p.suffix.lower() or '(no suffix)'}'; a file of "
            "point forecasts is .csv, .npz, .parquet, .pt/.pth or a structured .npy, with "
            "columns such as 'y_pred,y'"
        )
    src = opener(p)
    c = _Candidates()
    taken: set[str] = set()
    tname = _row_role(src, c, targets_key, TARGETS_KEYS, "targets", taken)
    if tname is not None:
        taken.add(tname)
    fname = _row_role(src, c, forecast_key, FORECAST_KEYS, "forecast", taken)
    if fname is None or tname is None:
        role, keys = ("forecasts", FORECAST_KEYS) if fname is None else ("targets", TARGETS_KEYS)
        raise _err(
            f"{src.where} has no {src.thing} recognised as the {role} ({src.thing}s found: "
            f"{_listed(src.names)}; recognised, in any case: {', '.join(keys)}); name it with "
            "forecast_key= / targets_key= (--forecast-key, --targets-key)"
        )
    taken.add(fname)
    wname = _row_role(src, c, weight_key, WEIGHT_KEYS, "weight", taken)
    z, y = _vector(src, fname, "forecasts"), _vector(src, tname, "targets")
    w = None if wname is None else _vector(src, wname, "weight")
    if z.shape[0] != y.shape[0] or (w is not None and w.shape[0] != y.shape[0]):
        raise _err(f"{src.where}: the forecasts, targets and weights have different lengths")
    if y.shape[0] == 0:
        raise _err(f"{src.where} has no data rows")
    note = f"forecasts from '{fname}', targets from '{tname}'" + (
        f", weights from '{wname}'" if wname else ""
    )
    return z, y, w, note
