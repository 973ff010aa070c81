"""The reliability table: per bin, what a reliability diagram draws, as a table.

:func:`reliability_table` returns, for every bin of every lens slice, the bin's
edges, count and weight, mean score, observed frequency, their gap and a
confidence interval for the observed frequency: the numbers behind a
reliability diagram (DeGroot & Fienberg 1983; Niculescu-Mizil & Caruana 2005;
Guo et al. 2017, Fig. 1) and behind the binned ECE (Guo et al. 2017, eq. 5;
Kirchenbauer, Oaks & Heim (2022) eq. 3), as a pandas DataFrame or a NumPy
record array. It is the calipers counterpart of scikit-learn's
``sklearn.calibration.calibration_curve``, which it reproduces exactly with the
arguments given in :func:`reliability_table`'s notes.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .._backend import to_numpy
from .._docstrings import fill_doc
from ..estimators.binning import (
    Binning,
    EqualMass,
    EqualWidth,
    FixedEdges,
    _np_dtype,
    equal_width_edges,
)
from ..pipeline.lenses import Lens, LensSlice, get_lens
from ..validation import CalibrationInputError, check_integer, check_predictions
from ._calibration_error import binned_statistics

__all__ = ["reliability_table", "wilson_interval", "RELIABILITY_TABLE_COLUMNS"]

#: Columns of :func:`reliability_table`, in order (the two interval columns are
#: left out with ``interval=None``).
RELIABILITY_TABLE_COLUMNS: tuple[str, ...] = (
    "slice",
    "bin",
    "lower",
    "upper",
    "count",
    "weight",
    "mean_score",
    "observed",
    "gap",
    "ci_lower",
    "ci_upper",
    "n_effective",
    "empty",
)

IntervalName = Literal["wilson", "clopper_pearson"]


def wilson_interval(
    proportion: Any, n: Any, confidence_level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion (Wilson 1927).

    ``(p + z^2 / 2n -/+ z sqrt(p (1 - p) / n + z^2 / 4n^2)) / (1 + z^2 / n)``
    with ``z`` the ``(1 + confidence_level) / 2`` normal quantile. Unlike the
    normal (Wald) interval it stays inside [0, 1] and does not collapse to a
    point when the observed proportion is 0 or 1, which is common in the
    nearly-always-correct bins of a reliability diagram; its coverage is close
    to nominal already for a handful of samples (Brown, Cai & DasGupta 2001).
    With sample weights pass Kish's effective sample size
    ``(sum w)^2 / sum w^2`` as ``n``.

    Parameters
    ----------
    proportion : array-like
        Observed proportions in [0, 1].
    n : array-like
        Sample sizes (> 0), broadcast against ``proportion``.
    confidence_level : float, default 0.95

    Returns
    -------
    (low, high) : tuple of ndarray

    Examples
    --------
    >>> from calipers.diagrams import wilson_interval
    >>> lo, hi = wilson_interval([0.5, 1.0], [10, 10])
    >>> lo.round(4).tolist(), hi.round(4).tolist()
    ([0.2366, 0.7225], [0.7634, 1.0])
    """
    if not 0.0 < confidence_level < 1.0:
        raise CalibrationInputError(
            f"confidence_level must lie in (0, 1); got {confidence_level!r}"
        )
    p = np.asarray(proportion, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    from scipy.special import ndtri  # lazily: scipy.special costs ~0.4 s to import

    z = float(ndtri(0.5 + confidence_level / 2.0))  # normal quantile
    z2 = z * z
    denom = 1.0 + z2 / m
    centre = (p + z2 / (2.0 * m)) / denom
    half = z / denom * np.sqrt(np.maximum(p * (1.0 - p) / m + z2 / (4.0 * m * m), 0.0))
    # The interval contains p; rounding put the lower end at 2.8e-17 for p = 0
    # (a negative error bar that matplotlib refuses), so it is kept around p.
    low = np.minimum(np.clip(centre - half, 0.0, 1.0), p)
    high = np.maximum(np.clip(centre + half, 0.0, 1.0), p)
    return low, high


def _clopper_pearson(
    proportion: np.ndarray, n: np.ndarray, confidence_level: float
) -> tuple[np.ndarray, np.ndarray]:
    """Clopper & Pearson's (1934) "exact" interval from Beta quantiles.

    ``[B(a/2; x, n - x + 1), B(1 - a/2; x + 1, n - x)]`` with ``x = p n``
    successes, lower end 0 when ``x = 0`` and upper end 1 when ``x = n``;
    ``n`` may be an effective (non-integer) sample size.
    """
    from scipy.stats import beta  # lazily: scipy.stats costs ~0.5 s to import

    a = 1.0 - confidence_level
    x = proportion * n
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(x > 0, beta.ppf(a / 2.0, np.maximum(x, 1e-300), n - x + 1.0), 0.0)
        hi = np.where(x < n, beta.ppf(1.0 - a / 2.0, x + 1.0, np.maximum(n - x, 1e-300)), 1.0)
    return np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)


def _edges(
    est: Binning, sl: LensSlice, s: np.ndarray, ids: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper edge of every bin of one slice (see the notes of reliability_table)."""
    if isinstance(est, EqualWidth):
        e = equal_width_edges(n_bins, _np_dtype(sl.scores)).astype(np.float64)
        return e[:-1], e[1:]
    if isinstance(est, FixedEdges):
        e = np.asarray(est.edges, dtype=np.float64)
        return e[:-1], e[1:]
    if isinstance(est, EqualMass):
        upper = est.edges(sl.scores, sl.weights)
        if upper.shape[0] + 1 == n_bins:
            e = np.concatenate([[0.0], upper, [1.0]])
            return e[:-1], e[1:]
    lo = np.full(n_bins, np.inf)
    hi = np.full(n_bins, -np.inf)
    np.minimum.at(lo, ids, s)
    np.maximum.at(hi, ids, s)
    lo[~np.isfinite(lo)] = np.nan
    hi[~np.isfinite(hi)] = np.nan
    return lo, hi


def _frame_or_records(
    columns: dict[str, np.ndarray], as_frame: bool | None, attrs: dict[str, Any]
) -> Any:
    if as_frame is None or as_frame:
        try:
            import pandas as pd
        except ImportError as e:
            if as_frame:
                raise ImportError(
                    "reliability_table(as_frame=True) needs pandas: pip install pandas"
                ) from e
        else:
            df = pd.DataFrame(columns)
            df.attrs.update(attrs)
            return df
    dtype = np.dtype([(name, v.dtype) for name, v in columns.items()])
    return np.rec.fromarrays(list(columns.values()), dtype=dtype)


@fill_doc
def reliability_table(
    probs: Any,
    labels: Any = None,
    *,
    lens: str | Lens = "auto",
    estimator: Binning | None = None,
    n_bins: int | None = None,
    interval: IntervalName | None = "wilson",
    confidence_level: float = 0.95,
    empty: Literal["drop", "keep"] = "drop",
    as_frame: bool | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
    validate: bool = True,
) -> Any:
    """Per-bin reliability table: edges, count, mean score, observed frequency, gap, interval.

    For every bin ``B`` of every lens slice: the bin's weight ``W_B`` (the
    count when unweighted), the weighted mean score ``g_bar_B`` (the
    *confidence* for the top-label lens), the weighted observed frequency of
    the target ``y_bar_B`` (the *accuracy* for the top-label lens), their gap
    and a confidence interval for ``y_bar_B``: the bars of a reliability
    diagram (DeGroot & Fienberg 1983; Niculescu-Mizil & Caruana 2005; Guo et
    al. 2017, Fig. 1) and the terms of the binned ECE (Guo et al. 2017, eq. 5;
    Kirchenbauer, Oaks & Heim (2022) eq. 3), ``ECE = sum_B (W_B / W) |gap_B|``.
    The per-bin totals come from :func:`calipers.binned_statistics`, so the
    bins are exactly those that :func:`calipers.calibration_error` (and
    :func:`calipers.ece` for its lens and binning) averages over and that
    :func:`calipers.reliability_diagram` draws.

    Parameters
    ----------
    {probs}
    {labels}
    lens : str or callable, default "auto"
        Any lens whose slices have 1-D scores: ``"auto"`` (``"binary"`` for 1-D
        input, ``"top_label"`` for ``(n, k)``), ``"top_label"``, ``"binary"``,
        ``"classwise"`` (one slice per class), ``"top_label_per_class"``,
        :func:`calipers.single_class`. Vector lenses (``"canonical"``,
        :func:`calipers.top_k`, :func:`calipers.grouping`) have no 1-D bins to
        tabulate and are refused.
    estimator : Binning, default ``EqualWidth(15)``
        :class:`~calipers.EqualWidth`, :class:`~calipers.EqualMass`,
        :class:`~calipers.FixedEdges`, :class:`~calipers.KDTree` or any object
        with ``assign(scores, weights) -> (bin_ids, n_bins)``.
    n_bins : int, optional
        Shorthand for ``estimator=EqualWidth(n_bins)``; give one or the other.
    interval : {"wilson", "clopper_pearson", None}, default "wilson"
        Interval for each bin's observed frequency at ``confidence_level``:
        the Wilson (1927) score interval (:func:`wilson_interval`,
        the interval of :func:`calipers.reliability_diagram`; close to nominal
        coverage already for a handful of samples, Brown, Cai & DasGupta 2001),
        or the Clopper & Pearson (1934) "exact" interval (conservative). With
        sample weights both use Kish's (1965) effective sample size
        ``n_effective = (sum w)^2 / sum w^2`` of the bin. ``None`` leaves out
        the two interval columns.
    confidence_level : float, default 0.95
    empty : {"drop", "keep"}, default "drop"
        ``"drop"``: only bins with positive weight (as scikit-learn's
        ``calibration_curve`` and the diagram show them). ``"keep"``: every bin,
        empty ones with count 0 and NaN means, gap and interval.
    as_frame : bool, optional
        ``True``: a pandas DataFrame (ImportError without pandas); ``False``: a
        NumPy record array; default (None): a DataFrame when pandas is
        installed, else the record array. Both have the same columns.
    sample_weight : array-like, shape (n,), optional
        Weighted means and weights per bin (``count`` stays the number of rows).
    {logits}
    {classes}
    {validate}

    Returns
    -------
    pandas.DataFrame or numpy.recarray
        One row per bin (slices in lens order, bins in increasing order) with
        the columns

        ``slice`` (str)
            The lens slice (``"positive class"``, ``"top-label"``, ``"class 3"``, ...).
        ``bin`` (int)
            Bin index within the slice.
        ``lower``, ``upper`` (float)
            Bin edges; see the notes.
        ``count`` (int)
            Rows in the bin.
        ``weight`` (float)
            Total sample weight in the bin (equal to ``count`` when unweighted;
            weights whose largest lies outside ``[2**-256, 2**256]`` are first
            rescaled by a power of two, see :func:`calipers.check_predictions`).
        ``mean_score`` (float)
            Weighted mean score ``g_bar_B`` (confidence).
        ``observed`` (float)
            Weighted mean target ``y_bar_B`` (observed frequency, accuracy).
        ``gap`` (float)
            ``observed - mean_score``: negative where the predictions are
            over-confident (the event happens less often than predicted),
            positive where they are under-confident.
        ``ci_lower``, ``ci_upper`` (float)
            The interval for ``observed`` (absent with ``interval=None``).
        ``n_effective`` (float)
            Sample size the interval used (Kish's effective size; ``count``
            when unweighted).
        ``empty`` (bool)
            Whether the bin has no weight (always False with ``empty="drop"``).

        The DataFrame's ``attrs`` record ``interval``, ``confidence_level`` and
        ``estimator``.

    Notes
    -----
    Edges. :class:`~calipers.EqualWidth`: the exact edges ``j / n_bins`` in
    the scores' dtype (as the scores are compared with them), bins ``(lo, hi]``
    with the first closed for ``edge_rule="right"``, ``[lo, hi)`` with the last
    closed for ``"left"``. :class:`~calipers.FixedEdges`: its edges.
    :class:`~calipers.EqualMass`: the data-driven edges it computed for the
    slice (``EqualMass.edges``) with 0 below the first and 1 above the last
    (the last bin, for scores equal to 1.0 under ``rule="nixon"``, is
    ``[1, 1]``). Any other estimator (:class:`~calipers.KDTree`, custom): the
    smallest and largest score in the bin (NaN for an empty bin).

    Reproducing scikit-learn. ``calibration_curve(y, p, n_bins=B,
    strategy="uniform")`` of scikit-learn (checked against 1.9; the
    ``searchsorted`` rule dates from scikit-learn pull request #22526, 2022)
    bins with ``np.searchsorted(np.linspace(0, 1, B + 1)[1:-1], p)``, i.e.
    ``(lo, hi]`` with the first bin closed, and drops empty bins. Its
    ``(prob_true, prob_pred)`` are exactly this table's ``(observed,
    mean_score)`` for the 1-D ``p`` (binary lens, the default for 1-D input)
    with ``estimator=FixedEdges(np.linspace(0, 1, B + 1))`` (``closed="right"``
    by default). ``n_bins=B`` (``EqualWidth(B)``, ``edge_rule="right"``) gives
    the same bins except for a score lying strictly between ``j / B`` and
    ``np.linspace``'s ``j * (1 / B)``, which can differ by one unit in the
    last place (``3 * 0.1 = 0.30000000000000004``); scores equal to ``j / B``
    land in the same bin. ``strategy="quantile"`` takes the edges
    ``np.percentile(p, np.linspace(0, 1, B + 1) * 100)`` (linear
    interpolation) with the same ``(lo, hi]`` rule, and
    ``estimator=FixedEdges(np.percentile(p, np.linspace(0, 1, B + 1) * 100))``
    reproduces it exactly (write the percentiles as scikit-learn does:
    ``np.linspace(0, 100, B + 1)`` can differ in the last bit, which moves
    tied scores across an edge). Neither of :class:`~calipers.EqualMass`'s
    rules produces these edges (``"nixon"`` takes order statistics and
    ``[lo, hi)`` bins, ``"kumar"`` mid-points between ``array_split``
    parts); their bins coincide with scikit-learn's for some samples only (with
    ``B = 3``, ``"nixon"`` differs on ``np.linspace(0.05, 0.95, 10)`` and
    ``"kumar"`` on ``np.linspace(0.05, 0.95, 11)``). Releases before that
    pull request binned with ``np.digitize(p, np.linspace(0, 1 + 1e-8, B + 1)) - 1``, i.e.
    ``FixedEdges(np.linspace(0, 1 + 1e-8, B + 1), closed="left")``.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> p = np.array([0.1, 0.3, 0.35, 0.8, 0.9, 0.95])
    >>> y = np.array([0, 1, 0, 1, 1, 0])
    >>> t = cp.reliability_table(p, y, n_bins=2, as_frame=False)
    >>> t.lower.tolist(), t.upper.tolist(), t["count"].tolist()
    ([0.0, 0.5], [0.5, 1.0], [3, 3])
    >>> t.mean_score.round(4).tolist(), t.observed.round(4).tolist(), t.gap.round(4).tolist()
    ([0.25, 0.8833], [0.3333, 0.6667], [0.0833, -0.2167])
    >>> t.ci_lower.round(4).tolist(), t.ci_upper.round(4).tolist()   # Wilson, 95 %
    ([0.0615, 0.2077], [0.7923, 0.9385])

    The weighted mean of ``|gap|`` is the ECE of the same bins:

    >>> ece = float(np.sum(t.weight * np.abs(t.gap)) / np.sum(t.weight))
    >>> round(ece, 12) == round(cp.ece(p, y, n_bins=2), 12)
    True

    One block of rows per class with the class-wise lens (a DataFrame by
    default when pandas is installed):

    >>> P = np.array([[0.7, 0.2, 0.1], [0.3, 0.6, 0.1], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1]])
    >>> t = cp.reliability_table(P, [0, 1, 1, 2], lens="classwise", n_bins=5, as_frame=False)
    >>> t.slice.tolist()
    ['class 0', 'class 0', 'class 0', 'class 0', 'class 1', 'class 1', 'class 1', 'class 2', 'class 2']
    >>> t.bin.tolist(), t["count"].tolist()
    ([0, 1, 2, 3, 0, 1, 2, 0, 2], [1, 1, 1, 1, 2, 1, 1, 3, 1])
    """
    if n_bins is not None and estimator is not None:
        raise CalibrationInputError("give n_bins or estimator, not both")
    if n_bins is not None:
        est: Binning = EqualWidth(check_integer(n_bins, "n_bins", minimum=1))
    else:
        est = EqualWidth(15) if estimator is None else estimator
    if not hasattr(est, "assign"):
        raise CalibrationInputError(
            f"reliability_table needs a binning estimator (with assign()); got {est!r}"
        )
    _check_table_options(interval, confidence_level, empty)
    if as_frame not in (None, True, False):
        raise CalibrationInputError(f"as_frame must be True, False or None; got {as_frame!r}")
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    lens_fn = get_lens(lens)
    slices = list(lens_fn(P))
    if any(sl.scores.ndim != 1 for sl in slices):
        raise CalibrationInputError(
            "reliability_table needs a lens with 1-D scores ('auto', 'top_label', 'binary', "
            "'classwise', 'top_label_per_class', single_class(c)); vector lenses "
            "(canonical, top_k, grouping) have no 1-D bins"
        )
    # the per-bin totals of the ECE itself (same lens, same estimator)
    stats = binned_statistics(P, lens=lens_fn, estimator=est)

    parts: dict[str, list[np.ndarray]] = {c: [] for c in RELIABILITY_TABLE_COLUMNS}
    for sl, ss in zip(slices, stats, strict=True):
        st = ss.stats
        B = int(st.weight.shape[0])
        if sl.n == 0 or B == 0:
            continue
        s = np.asarray(to_numpy(sl.scores), dtype=np.float64)
        ids = np.asarray(to_numpy(est.assign(sl.scores, sl.weights)[0]), dtype=np.intp)
        lower, upper = _edges(est, sl, s, ids, B)
        weight = np.asarray(st.weight, dtype=np.float64)
        if sl.weights is None:
            n_eff = np.asarray(st.count, dtype=np.float64).copy()
        else:
            w = np.asarray(to_numpy(sl.weights), dtype=np.float64)
            sw2 = np.bincount(ids, weights=w * w, minlength=B)[:B]
            with np.errstate(invalid="ignore", divide="ignore"):
                n_eff = np.where(sw2 > 0, weight**2 / np.where(sw2 > 0, sw2, 1.0), 0.0)
        _append_rows(parts, sl.name, st, lower, upper, n_eff, interval, confidence_level, empty)
    return _assemble_table(parts, interval, confidence_level, est, as_frame)


def _check_table_options(interval: Any, confidence_level: float, empty: Any) -> None:
    """The options shared by every reliability table (in memory or from a state)."""
    if interval not in (None, "wilson", "clopper_pearson"):
        raise CalibrationInputError(
            f"interval must be 'wilson', 'clopper_pearson' or None; got {interval!r}"
        )
    if not 0.0 < confidence_level < 1.0:
        raise CalibrationInputError(
            f"confidence_level must lie in (0, 1); got {confidence_level!r}"
        )
    if empty not in ("drop", "keep"):
        raise CalibrationInputError(f"empty must be 'drop' or 'keep'; got {empty!r}")


def _append_rows(
    parts: dict[str, list[np.ndarray]],
    name: str,
    st: Any,
    lower: np.ndarray,
    upper: np.ndarray,
    n_eff: np.ndarray,
    interval: Any,
    confidence_level: float,
    empty: str,
) -> None:
    """One slice's rows (its bins, empty ones dropped or kept) appended to ``parts``."""
    weight = np.asarray(st.weight, dtype=np.float64)
    B = int(weight.shape[0])
    ne = weight > 0
    mean_score = np.asarray(st.mean_score, dtype=np.float64)
    observed = np.asarray(st.mean_target, dtype=np.float64)
    ci_lo = np.full(B, np.nan)
    ci_hi = np.full(B, np.nan)
    ok = ne & (n_eff > 0)
    if interval == "wilson" and ok.any():
        ci_lo[ok], ci_hi[ok] = wilson_interval(observed[ok], n_eff[ok], confidence_level)
    elif interval == "clopper_pearson" and ok.any():
        ci_lo[ok], ci_hi[ok] = _clopper_pearson(observed[ok], n_eff[ok], confidence_level)
    keep = ne if empty == "drop" else np.ones(B, dtype=bool)
    cols = {
        "slice": np.full(int(keep.sum()), name, dtype=object),
        "bin": np.arange(B, dtype=np.int64),
        "lower": lower,
        "upper": upper,
        "count": np.rint(np.asarray(st.count)).astype(np.int64),
        "weight": weight,
        "mean_score": mean_score,
        "observed": observed,
        "gap": observed - mean_score,
        "ci_lower": ci_lo,
        "ci_upper": ci_hi,
        "n_effective": n_eff,
        "empty": ~ne,
    }
    for c, v in cols.items():
        parts[c].append(v if c == "slice" else v[keep])


def _assemble_table(
    parts: dict[str, list[np.ndarray]],
    interval: Any,
    confidence_level: float,
    est: Any,
    as_frame: bool | None,
) -> Any:
    """The collected rows as a DataFrame or a record array (see :func:`reliability_table`)."""
    columns: dict[str, np.ndarray] = {}
    for c in RELIABILITY_TABLE_COLUMNS:
        if interval is None and c in ("ci_lower", "ci_upper"):
            continue
        if parts[c]:
            columns[c] = np.concatenate(parts[c])
        else:
            columns[c] = np.zeros(0, dtype=object if c == "slice" else np.float64)
    names = columns["slice"]
    width = max((len(str(x)) for x in names), default=1)
    columns["slice"] = names.astype(f"<U{width}")
    attrs = {"interval": interval, "confidence_level": confidence_level, "estimator": repr(est)}
    return _frame_or_records(columns, as_frame, attrs)
