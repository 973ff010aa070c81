"""Sweeps: how a calibration estimate moves with the test-set size and with its settings.

Two questions decide whether a calibration number can be trusted, and both are
answered by recomputing it along one axis:

* **Test-set size** (:func:`test_size_sweep`). Gruber & Buettner (2022), §5 and
  Figs. 1, 3 and 5-7, recompute every estimator on subsamples of the test set of
  sizes from 100 to all rows (ten sizes equally spaced in log scale, App. G) and
  average over repeated subsamples. An unbiased estimator gives a flat line; binned
  estimators drift with the size, and the estimated change of the error by a
  recalibration can even change sign (their Fig. 1). Here each repetition draws
  one random permutation of the rows and takes its prefixes, so the subsamples of
  one repetition are nested; each prefix is still a uniform draw without
  replacement of its size, as in the paper, and the nesting makes the curves of
  one repetition comparable across sizes.
* **Settings of the estimator** (:func:`parameter_sweep`). Kirchenbauer, Oaks &
  Heim (2022), App. B.2-B.4 and Figs. 7-9, plot the ECE against the k-d tree bin
  fraction ``gamma`` with bootstrap error bars and look for the region where the
  estimate is stable; the same is done for the number of bins. Chidambaram & Ge
  (2024), App. H, vary the bandwidth (0.01 to 0.25) and the kernel (Gaussian,
  Epanechnikov) of the kernel regression. Every value is evaluated on the same
  data, with a bootstrap interval (:func:`calipers.confidence_interval`) drawn
  from the same seed for every value.

Both return frozen dataclasses of NumPy arrays with ``to_dict`` (plain Python
data, for JSON) and ``rows`` (one dict per number, for CSV); figures are drawn
by :func:`calipers.diagrams.sweep_diagram`.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..validation import (
    CalibrationInputError,
    Predictions,
    check_integer,
    check_predictions,
    check_size,
    check_work,
)
from . import _resampling as rs
from ._confidence_interval import confidence_interval

__all__ = [
    "TestSizeSweep",
    "ParameterSweep",
    "test_size_sweep",
    "parameter_sweep",
    "default_sizes",
    "metric_name",
]

#: Keyword arguments every calipers metric takes that describe the data, not the
#: estimator; they cannot be swept.
_DATA_ARGUMENTS = ("probs", "labels", "sample_weight", "logits", "validate", "classes")


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class TestSizeSweep:
    """Metrics recomputed on nested subsamples of growing size (Gruber & Buettner 2022, Figs. 1 and 3).

    Attributes
    ----------
    sizes : numpy.ndarray of int, shape (m,)
        The subsample sizes, increasing; the last may be all ``n_total`` rows.
    metric_names : tuple of str
        One name per metric, in the order given.
    values : numpy.ndarray, shape (n_metrics, n_repeats, m)
        ``values[j, r, i]``: metric ``j`` on the first ``sizes[i]`` rows of the
        permutation of repetition ``r``.
    improvement : numpy.ndarray or None, shape (n_metrics, n_repeats, m)
        With a recalibrator: ``metric(f) - metric(h o f)`` on the same rows, the
        sign of Gruber & Buettner's (2022) Fig. 1 (positive: the recalibration
        lowered the estimate). :func:`calipers.recalibration_improvement` returns
        the opposite sign, ``after - before``.
    n_total : int
        Rows of the whole test set.
    seed : int or None
        Seed of the permutations.
    recalibrator_name : str or None
        Class name of the recalibrator, when one was given.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=500)
    >>> y = (rng.uniform(size=500) < p).astype(int)
    >>> s = cp.test_size_sweep([cp.ece, cp.brier], p, y, sizes=[50, 500], n_repeats=3)
    >>> s.values.shape, s.metric_names
    ((2, 3, 2), ('ece', 'brier'))
    >>> bool(np.allclose(s.values[:, :, -1], [[cp.ece(p, y)], [cp.brier(p, y)]]))
    True
    """

    __test__ = False  # a result class, not a pytest test class

    sizes: np.ndarray
    metric_names: tuple[str, ...]
    values: np.ndarray
    improvement: np.ndarray | None
    n_total: int
    seed: int | None
    recalibrator_name: str | None = None

    @property
    def n_repeats(self) -> int:
        """Number of repetitions (random permutations)."""
        return int(self.values.shape[1])

    @property
    def mean(self) -> np.ndarray:
        """``(n_metrics, m)`` mean over the repetitions."""
        return np.asarray(self.values.mean(axis=1))

    @property
    def std(self) -> np.ndarray:
        """``(n_metrics, m)`` standard deviation over the repetitions (``ddof=1``; 0 for one).

        The spread of the estimate on one test set of that size, drawn from the
        rows at hand; 0 at the full size, where every repetition holds all rows.
        """
        return _std(self.values)

    @property
    def standard_error(self) -> np.ndarray:
        """``(n_metrics, m)`` standard error of :attr:`mean`, ``std / sqrt(n_repeats)``."""
        return self.std / math.sqrt(self.n_repeats)

    @property
    def improvement_mean(self) -> np.ndarray | None:
        """``(n_metrics, m)`` mean improvement, or None without a recalibrator."""
        return None if self.improvement is None else np.asarray(self.improvement.mean(axis=1))

    @property
    def improvement_std(self) -> np.ndarray | None:
        """``(n_metrics, m)`` spread of the improvement, or None without a recalibrator."""
        return None if self.improvement is None else _std(self.improvement)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per (metric, size): mean, std and standard error (and the improvement's).

        Examples
        --------
        >>> import calipers as cp
        >>> s = cp.test_size_sweep([cp.brier], [0.2, 0.9, 0.6, 0.3], [0, 1, 1, 0],
        ...                        sizes=[2, 4], n_repeats=2)
        >>> sorted(s.rows()[0])
        ['mean', 'metric', 'n_repeats', 'size', 'standard_error', 'std']
        """
        out: list[dict[str, Any]] = []
        mean, std, se = self.mean, self.std, self.standard_error
        imp_mean, imp_std = self.improvement_mean, self.improvement_std
        for j, name in enumerate(self.metric_names):
            for i, size in enumerate(self.sizes):
                row: dict[str, Any] = {
                    "metric": name,
                    "size": int(size),
                    "n_repeats": self.n_repeats,
                    "mean": float(mean[j, i]),
                    "std": float(std[j, i]),
                    "standard_error": float(se[j, i]),
                }
                if imp_mean is not None and imp_std is not None:
                    row["improvement_mean"] = float(imp_mean[j, i])
                    row["improvement_std"] = float(imp_std[j, i])
                out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The sweep as plain Python data (lists, floats, str), ready for :func:`json.dumps`.

        Examples
        --------
        >>> import json
        >>> import calipers as cp
        >>> s = cp.test_size_sweep([cp.brier], [0.2, 0.9, 0.6, 0.3], [0, 1, 1, 0],
        ...                        sizes=[2, 4], n_repeats=2)
        >>> d = json.loads(json.dumps(s.to_dict()))
        >>> d["sweep"], d["sizes"], len(d["values"][0])
        ('test_size', [2, 4], 2)
        """
        return {
            "sweep": "test_size",
            "sizes": [int(s) for s in self.sizes],
            "metrics": list(self.metric_names),
            "n_total": self.n_total,
            "n_repeats": self.n_repeats,
            "seed": self.seed,
            "recalibrator": self.recalibrator_name,
            "values": self.values.tolist(),
            "improvement": None if self.improvement is None else self.improvement.tolist(),
            "rows": self.rows(),
        }


@dataclass(frozen=True)
class ParameterSweep:
    """One metric at several values of one of its parameters, with bootstrap intervals.

    Kirchenbauer, Oaks & Heim (2022), Figs. 7-9 (k-d tree ``gamma``, bin count) and
    Chidambaram & Ge (2024), App. H (kernel bandwidth and kernel).

    Attributes
    ----------
    metric_name : str
    param : str
        The keyword argument that was varied (``"n_bins"``, ``"gamma"``,
        ``"bandwidth"``, ``"kernel"``, ...).
    values : tuple
        The parameter's values, in the order given (numbers or strings).
    estimates : numpy.ndarray, shape (m,)
        ``metric(probs, labels, **{param: values[i]})``.
    low, high : numpy.ndarray or None, shape (m,)
        Bootstrap interval per value (None when ``interval=False``).
    standard_error : numpy.ndarray or None, shape (m,)
        Standard deviation of the bootstrap values (the error bars of
        Kirchenbauer, Oaks & Heim (2022) Fig. 7).
    confidence_level : float
    n_resamples : int
        0 without intervals.
    method : str or None
        Interval method of :func:`calipers.confidence_interval`.
    seed : int or None
    n_total : int
        Rows of the data.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=400)
    >>> y = (rng.uniform(size=400) < p).astype(int)
    >>> s = cp.parameter_sweep(cp.ece, p, y, param="n_bins", values=[5, 15], n_resamples=200)
    >>> s.values, bool(s.estimates[1] == cp.ece(p, y, n_bins=15))
    ((5, 15), True)
    """

    metric_name: str
    param: str
    values: tuple[Any, ...]
    estimates: np.ndarray
    low: np.ndarray | None
    high: np.ndarray | None
    standard_error: np.ndarray | None
    confidence_level: float
    n_resamples: int
    method: str | None
    seed: int | None
    n_total: int

    def rows(self) -> list[dict[str, Any]]:
        """One dict per parameter value: estimate, interval and standard error.

        Examples
        --------
        >>> import calipers as cp
        >>> s = cp.parameter_sweep(cp.ece, [0.2, 0.9, 0.6, 0.3], [0, 1, 1, 0],
        ...                        values=[2, 4], interval=False)
        >>> s.rows()[0]["metric"], s.rows()[0]["n_bins"], s.rows()[0]["low"]
        ('ece', 2, None)
        """
        out: list[dict[str, Any]] = []
        for i, v in enumerate(self.values):
            out.append(
                {
                    "metric": self.metric_name,
                    self.param: _plain(v),
                    "estimate": float(self.estimates[i]),
                    "low": None if self.low is None else float(self.low[i]),
                    "high": None if self.high is None else float(self.high[i]),
                    "standard_error": (
                        None if self.standard_error is None else float(self.standard_error[i])
                    ),
                }
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """The sweep as plain Python data, ready for :func:`json.dumps`.

        Examples
        --------
        >>> import calipers as cp
        >>> s = cp.parameter_sweep(cp.ece, [0.2, 0.9, 0.6, 0.3], [0, 1, 1, 0],
        ...                        values=[2, 4], interval=False)
        >>> s.to_dict()["param"], s.to_dict()["values"]
        ('n_bins', [2, 4])
        """
        return {
            "sweep": "parameter",
            "metric": self.metric_name,
            "param": self.param,
            "values": [_plain(v) for v in self.values],
            "estimates": self.estimates.tolist(),
            "low": None if self.low is None else self.low.tolist(),
            "high": None if self.high is None else self.high.tolist(),
            "standard_error": (
                None if self.standard_error is None else self.standard_error.tolist()
            ),
            "confidence_level": self.confidence_level,
            "n_resamples": self.n_resamples,
            "method": self.method,
            "seed": self.seed,
            "n_total": self.n_total,
            "rows": self.rows(),
        }


# --------------------------------------------------------------------------- helpers


def _std(values: np.ndarray) -> np.ndarray:
    if values.shape[1] < 2:
        return np.zeros((values.shape[0], values.shape[2]))
    return np.asarray(values.std(axis=1, ddof=1))


def _plain(v: Any) -> Any:
    """A parameter value as plain Python data (NumPy scalars unwrapped)."""
    if isinstance(v, np.generic):
        return v.item()
    return v if isinstance(v, (str, int, float, bool)) or v is None else repr(v)


def metric_name(metric: Callable[..., Any]) -> str:
    """A readable name of a metric: its ``__name__``, or ``func(k=v)`` for a partial.

    Examples
    --------
    >>> import functools
    >>> import calipers as cp
    >>> from calipers.inference.sweeps import metric_name
    >>> metric_name(cp.ece), metric_name(functools.partial(cp.classwise_ece, n_bins=100))
    ('ece', 'classwise_ece(n_bins=100)')
    """
    if isinstance(metric, functools.partial):
        inner = metric_name(metric.func)
        kw = ", ".join(f"{k}={v!r}" for k, v in metric.keywords.items())
        return f"{inner}({kw})" if kw else inner
    return str(getattr(metric, "__name__", type(metric).__name__))


def _named_metrics(metrics: Any) -> dict[str, Callable[..., Any]]:
    if callable(metrics):
        metrics = [metrics]
    if isinstance(metrics, Mapping):
        items = [(str(k), v) for k, v in metrics.items()]
    elif isinstance(metrics, Sequence) and not isinstance(metrics, str):
        items = [(metric_name(m), m) for m in metrics]
    else:
        raise TypeError(
            f"metrics must be a metric, a sequence of metrics or a dict name -> metric; "
            f"got {type(metrics).__name__}"
        )
    if not items:
        raise CalibrationInputError("metrics is empty: give at least one metric")
    out: dict[str, Callable[..., Any]] = {}
    for name, m in items:
        if not callable(m):
            raise TypeError(f"metric {name!r} is not callable (got {type(m).__name__})")
        if name in out:
            raise CalibrationInputError(
                f"two metrics are named {name!r}; pass a dict name -> metric to tell them apart"
            )
        out[name] = m
    return out


def _value(metric: Callable[..., Any], name: str, P: Predictions, **kwargs: Any) -> float:
    v = metric(P, None, **kwargs)
    try:
        return float(v)
    except (TypeError, ValueError):
        raise CalibrationInputError(
            f"metric {name!r} returned a {type(v).__name__}, not a number; sweep a function "
            "that returns a float (e.g. calipers.confidence_calibration_error rather than "
            "calipers.calibration_sharpness)"
        ) from None


def _take(P: Predictions, idx: np.ndarray) -> Predictions:
    """The rows ``idx`` of validated NumPy predictions, without validating them again."""
    return Predictions(
        probs=P.probs[idx],
        labels=P.labels[idx],
        sample_weight=None if P.sample_weight is None else P.sample_weight[idx],
        logits=None if P.logits is None else P.logits[idx],
        n_classes=P.n_classes,
        classes=P.classes,
    )


def default_sizes(n: int, *, n_sizes: int = 10, smallest: int = 100) -> np.ndarray:
    """Test-set sizes equally spaced in log scale from ``smallest`` to ``n`` (Gruber & Buettner 2022, App. G).

    Gruber & Buettner (2022) use ten sizes from 100 to the full test set. Sizes
    are rounded to integers; duplicates (for a small ``n``) are dropped.

    Parameters
    ----------
    n : int
        Rows of the test set (at least 2).
    n_sizes : int, default 10
    smallest : int, default 100
        Lowered to ``n // 10`` (at least 2) when ``n`` is under ``10 * smallest``.

    Returns
    -------
    numpy.ndarray of int
        Increasing sizes, the last one ``n``.

    Examples
    --------
    >>> from calipers.inference.sweeps import default_sizes
    >>> default_sizes(10000).tolist()
    [100, 167, 278, 464, 774, 1292, 2154, 3594, 5995, 10000]
    >>> default_sizes(50).tolist()
    [5, 6, 8, 11, 14, 18, 23, 30, 39, 50]
    """
    n = check_integer(n, "n", minimum=2)
    n_sizes = check_size(n_sizes, "n_sizes", "MAX_POINTS")
    smallest = check_integer(smallest, "smallest", minimum=1)
    if n < 10 * smallest:
        smallest = max(2, n // 10)
    if n_sizes == 1:
        return np.array([n])
    grid = np.geomspace(smallest, n, n_sizes)
    return np.unique(np.round(grid).astype(np.int64))


def _check_sizes(sizes: Any, n: int) -> np.ndarray:
    if sizes is None:
        return default_sizes(n)
    arr = np.asarray(sizes)
    if arr.ndim != 1 or arr.size == 0:
        raise CalibrationInputError(
            f"sizes must be a non-empty 1-D sequence of integers; got shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.issubdtype(arr.dtype, np.floating) or not np.all(arr == np.round(arr)):
            raise CalibrationInputError(f"sizes must be integers; got {arr.tolist()}")
        arr = arr.astype(np.int64)
    bad = arr[(arr < 1) | (arr > n)]
    if bad.size:
        raise CalibrationInputError(
            f"sizes must lie in 1..{n} (the number of rows); got {bad.tolist()}"
        )
    if np.any(np.diff(arr) <= 0):
        raise CalibrationInputError(f"sizes must be strictly increasing; got {arr.tolist()}")
    return arr.astype(np.int64)


def _recalibrated(recalibrator: Any, P: Predictions) -> Predictions:
    if not hasattr(recalibrator, "predict_proba"):
        raise TypeError(
            f"recalibrator must be a fitted recalibrator with predict_proba (e.g. "
            f"calipers.TemperatureScaling().fit(...)); got {type(recalibrator).__name__}"
        )
    is_fitted = getattr(recalibrator, "__sklearn_is_fitted__", None)
    if is_fitted is not None and not is_fitted():
        raise CalibrationInputError(
            f"{type(recalibrator).__name__} is not fitted: fit it on a calibration split first "
            "(Gruber & Buettner (2022) fit on the validation set and sweep the test set)"
        )
    if P.logits is not None:
        after = recalibrator.predict_proba(P.logits, logits=True)
    else:
        after = recalibrator.predict_proba(P.probs, logits=False)
    return rs.numpy_predictions(
        check_predictions(np.asarray(after), P.labels, sample_weight=P.sample_weight)
    )


# --------------------------------------------------------------------------- sweeps


@fill_doc
def test_size_sweep(
    metrics: Any,
    probs: Any,
    labels: Any = None,
    *,
    sizes: Sequence[int] | None = None,
    n_repeats: int = 20,
    seed: int | None = 0,
    recalibrator: Any = None,
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
) -> TestSizeSweep:
    """Every metric on nested random subsamples of growing size (Gruber & Buettner 2022, Figs. 1 and 3).

    For each of ``n_repeats`` repetitions, one random permutation of the rows is
    drawn, and every metric is computed on its first ``m`` rows for each ``m`` in
    ``sizes``: the subsamples of a repetition are nested, and each is a uniform
    draw without replacement of its size. Gruber & Buettner (2022), §5 and App. G,
    show that common estimators (binned ECE, class-wise ECE, KDE) drift with the
    test-set size while the root Brier score (:func:`calipers.rbs`) and the
    Kolmogorov-Smirnov error stay flat; an unbiased estimator gives a flat line.

    With a fitted ``recalibrator`` the change of each metric by the recalibration
    is computed on the same rows (their Fig. 1): ``metric(f) - metric(h o f)``.
    For an injective recalibration (temperature scaling, ETS, ...) the change of
    :func:`calipers.rbs` estimates the change of the true calibration error
    (Gruber & Buettner 2022, Prop. 4.5).

    Parameters
    ----------
    metrics : callable, sequence of callables, or dict of str to callable
        calipers metrics, ``metric(probs, labels, **kw) -> float``; each is called
        with a :class:`calipers.Predictions` of the subsample and ``None`` as
        labels. Names come from ``__name__`` (``functools.partial``: with its
        keywords) or from the dict keys.
    probs : array-like of shape (n, k) or (n,), or Predictions
        Probabilities (logits with ``logits=True``), validated once.
    labels : array-like of shape (n,), optional
        None when ``probs`` is a Predictions.
    sizes : sequence of int, optional
        Strictly increasing subsample sizes in ``1..n``. Default: ten sizes
        equally spaced in log scale from 100 (or ``n // 10`` for small ``n``) to
        ``n`` (:func:`default_sizes`), as Gruber & Buettner (2022) App. G.
    n_repeats : int, default 20
        Repetitions (random permutations). Gruber & Buettner (2022) use thousands
        of subsamples at the small sizes; 20 is enough to see the trend. At most
        ``calipers.validation.MAX_RESAMPLES`` (10**6) metric evaluations in all
        (metrics x repeats x sizes).
    seed : int or None, default 0
        Seed of :func:`numpy.random.default_rng` for the permutations.
    recalibrator : fitted recalibrator, optional
        An object with ``predict_proba`` (a fitted :class:`calipers.Recalibrator`),
        fitted on other rows; applied once to all rows (to the logits when the
        input holds logits).
    {sample_weight}
        They are subsampled with the rows.
    {logits}
    {classes}

    Returns
    -------
    TestSizeSweep

    Raises
    ------
    CalibrationInputError
        Sizes out of ``1..n`` or not increasing, no metrics, two metrics with
        one name, an unfitted recalibrator, a metric that does not return a
        number.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> y = (rng.uniform(size=2000) < p**2).astype(int)        # over-confident
    >>> s = cp.test_size_sweep([cp.ece, cp.rbs], p, y, sizes=[100, 400, 2000], n_repeats=10)
    >>> s.sizes.tolist(), s.mean.shape
    ([100, 400, 2000], (2, 3))
    >>> bool(s.mean[0, 0] > s.mean[0, -1])        # binned ECE is biased upward on few rows
    True
    """
    named = _named_metrics(metrics)
    n_repeats = check_size(n_repeats, "n_repeats", "MAX_RESAMPLES")
    P = rs.numpy_predictions(
        check_predictions(
            probs, labels, logits=logits, sample_weight=sample_weight, classes=classes
        )
    )
    n = P.n_samples
    sz = _check_sizes(sizes, n)
    factors = [("repeats", n_repeats), ("metrics", len(named) * (1 if recalibrator is None else 2))]
    # one value per (metric, repeat, size), each a metric call: at most MAX_RESAMPLES
    # calls in all, and at most MAX_WORK rows evaluated in all
    check_work(
        "n_repeats",
        n_repeats,
        [*factors, ("sizes", sz.size)],
        limit="MAX_RESAMPLES",
        unit="metric evaluations",
        advice="use fewer repeats, sizes or metrics",
    )
    check_work(
        "n_repeats",
        n_repeats,
        [*factors, ("rows summed over the sizes", int(sz.sum()))],
        unit="row evaluations",
        advice="use fewer repeats or smaller sizes",
    )
    Pa = None if recalibrator is None else _recalibrated(recalibrator, P)
    rng = np.random.default_rng(seed)
    values = np.empty((len(named), n_repeats, sz.size))
    improvement = None if Pa is None else np.empty_like(values)
    for r in range(n_repeats):
        perm = rng.permutation(n)
        for i, m in enumerate(sz):
            idx = np.sort(perm[:m])  # row order kept: the metric sees the rows as given
            sub = _take(P, idx)
            sub_after = None if Pa is None else _take(Pa, idx)
            for j, (name, metric) in enumerate(named.items()):
                values[j, r, i] = _value(metric, name, sub)
                if improvement is not None and sub_after is not None:
                    improvement[j, r, i] = values[j, r, i] - _value(metric, name, sub_after)
    return TestSizeSweep(
        sizes=sz,
        metric_names=tuple(named),
        values=values,
        improvement=improvement,
        n_total=n,
        seed=seed,
        recalibrator_name=None if recalibrator is None else type(recalibrator).__name__,
    )


def _swept_parameters(metric: Callable[..., Any]) -> tuple[list[str], bool]:
    """The keyword parameters of ``metric`` that may be swept, and whether it takes ``**kw``."""
    try:
        sig = inspect.signature(metric)
    except (TypeError, ValueError):
        return [], True
    names, var_kw = [], False
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            var_kw = True
        elif p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            if p.name not in _DATA_ARGUMENTS:
                names.append(p.name)
    return names, var_kw


@fill_doc
def parameter_sweep(
    metric: Callable[..., Any],
    probs: Any,
    labels: Any = None,
    *,
    param: str = "n_bins",
    values: Sequence[Any] = (5, 10, 15, 20, 30, 50, 100),
    interval: bool = True,
    method: str = "basic",
    confidence_level: float = 0.95,
    n_resamples: int = 200,
    seed: int | None = 0,
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
    **metric_kwargs: Any,
) -> ParameterSweep:
    """One metric at several values of one parameter, each with a bootstrap interval.

    Kirchenbauer, Oaks & Heim (2022), App. B.2 and Fig. 7, sweep the bin fraction
    ``gamma`` of the k-d tree binning (:func:`calipers.full_ece`) with bootstrap
    error bars and choose a value in the region where the estimate is stable:
    too coarse a binning biases a binned error down, too fine a one biases it up
    (App. B.3). The same holds for ``n_bins`` of the equal-width and equal-mass
    errors. Chidambaram & Ge (2024), App. H, vary the ``bandwidth`` (0.01 to 0.25)
    and the ``kernel`` (``"gaussian"``, ``"epanechnikov"``) of the kernel
    regression behind :func:`calipers.confidence_calibration_error`.

    Each estimate is ``metric(probs, labels, **{param: value})`` on all rows; the
    interval is :func:`calipers.confidence_interval` with the same ``seed`` for
    every value, so every value sees the same bootstrap resamples.

    Parameters
    ----------
    metric : callable
        A calipers metric returning a float.
    probs : array-like of shape (n, k) or (n,), or Predictions
    labels : array-like of shape (n,), optional
    param : str, default "n_bins"
        A keyword parameter of ``metric``; an unknown name is refused with the
        list of the metric's parameters.
    values : sequence, default (5, 10, 15, 20, 30, 50, 100)
        The parameter's values, in the order to plot.
    interval : bool, default True
        Compute bootstrap intervals (``n_resamples`` metric evaluations per value).
    method : {"basic", "bca", "percentile"}, default "basic"
        Interval method (see :func:`calipers.confidence_interval`).
    confidence_level : float, default 0.95
    n_resamples : int, default 200
        Bootstrap resamples per value (each costs one metric evaluation per
        value); Kirchenbauer, Oaks & Heim (2022) use 1000 for their Fig. 7.
    seed : int or None, default 0
    {sample_weight}
    {logits}
    {classes}
    **metric_kwargs
        Further fixed keyword arguments of ``metric`` (not ``param``).

    Returns
    -------
    ParameterSweep

    Raises
    ------
    CalibrationInputError
        ``param`` not a parameter of ``metric`` (the message lists them), given
        again in ``metric_kwargs``, or empty ``values``; errors of the metric on
        a value name that value.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(3), size=1000)
    >>> y = np.array([rng.choice(3, p=row) for row in p])
    >>> s = cp.parameter_sweep(cp.full_ece, p, y, param="gamma", values=[0.5, 0.1],
    ...                        n_resamples=100)
    >>> s.estimates.shape, bool(np.all(s.low <= s.high))
    ((2,), True)
    >>> cp.parameter_sweep(cp.ece, p, y, param="bandwidth", values=[0.1])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: ece has no parameter 'bandwidth'; ...
    """
    if not callable(metric):
        raise TypeError(f"metric must be callable; got {type(metric).__name__}")
    name = metric_name(metric)
    if not isinstance(param, str):
        raise TypeError(f"param must be a parameter name (str); got {type(param).__name__}")
    known, var_kw = _swept_parameters(metric)
    if param not in known and not var_kw:
        raise CalibrationInputError(
            f"{name} has no parameter {param!r}; its parameters are: {', '.join(known) or 'none'}"
        )
    if param in metric_kwargs:
        raise CalibrationInputError(
            f"{param!r} is the swept parameter; give its values in values=, not as a keyword"
        )
    vals = tuple(values)
    if not vals:
        raise CalibrationInputError(f"values is empty: give at least one value of {param!r}")
    P = rs.numpy_predictions(
        check_predictions(
            probs, labels, logits=logits, sample_weight=sample_weight, classes=classes
        )
    )
    if interval:
        B = check_size(n_resamples, "n_resamples", "MAX_RESAMPLES", minimum=2)
        check_work(
            "n_resamples",
            B,
            [("values", len(vals)), ("rows", P.n_samples), ("resamples", B)],
            unit="row evaluations",
            advice="use fewer resamples or values",
        )
    estimates = np.empty(len(vals))
    low = high = se = None
    if interval:
        low, high, se = np.empty(len(vals)), np.empty(len(vals)), np.empty(len(vals))
    for i, v in enumerate(vals):
        kw = {**metric_kwargs, param: v}
        try:
            estimates[i] = _value(metric, name, P, **kw)
            if interval:
                assert low is not None and high is not None and se is not None
                ci = confidence_interval(
                    metric,
                    P,
                    None,
                    method=method,
                    confidence_level=confidence_level,
                    n_resamples=n_resamples,
                    seed=seed,
                    **kw,
                )
                low[i], high[i], se[i] = ci.low, ci.high, ci.standard_error
        except CalibrationInputError as exc:
            raise CalibrationInputError(f"{name} with {param}={v!r}: {exc}") from None
    return ParameterSweep(
        metric_name=name,
        param=param,
        values=vals,
        estimates=estimates,
        low=low,
        high=high,
        standard_error=se,
        confidence_level=float(confidence_level),
        n_resamples=int(n_resamples) if interval else 0,
        method=method if interval else None,
        seed=seed,
        n_total=P.n_samples,
    )


test_size_sweep.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
