"""The calibration hierarchy of a clinical risk model in one call."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..validation import CalibrationInputError, check_predictions
from ._calibration_belt import CalibrationBelt, calibration_belt
from ._calibration_in_the_large import CalibrationInTheLarge, _ciltl
from ._calibration_intercept_slope import WeakCalibration, _weak
from ._flexible_calibration_curve import FlexibleCalibrationCurve, _check_curve_args, _curve
from ._hosmer_lemeshow import HosmerLemeshowTest, _check_n_groups, _hosmer_lemeshow
from ._inputs import _numpy, binary_risks, check_confidence
from ._integrated_calibration_index import CalibrationIndex, _index_from
from ._spiegelhalter import SpiegelhalterTest, _spiegelhalter

__all__ = ["CalibrationHierarchy", "calibration_hierarchy", "calibration_hierarchy_by_class"]


@dataclass(frozen=True)
class CalibrationHierarchy:
    """Every level of the calibration hierarchy of binary risk predictions.

    Attributes
    ----------
    n : int
        Number of rows.
    n_events : float
        Observed events (weighted).
    in_the_large : CalibrationInTheLarge
        Mean risk against event rate, O/E (level 1, "mean calibration").
    weak : WeakCalibration
        Calibration intercept and slope (level 2, "weak calibration").
    curve : FlexibleCalibrationCurve
        Flexible calibration curve with its band (level 3, "moderate calibration").
    index : CalibrationIndex
        ICI, E50, E90, Emax of that curve.
    hosmer_lemeshow : HosmerLemeshowTest
        The Hosmer-Lemeshow test over ``n_groups`` risk groups.
    spiegelhalter : SpiegelhalterTest
        Spiegelhalter's z test.
    c_statistic : float
        Area under the ROC curve (the probability that a random event has a higher
        risk than a random non-event, ties counted one half).
    brier : float
        Mean squared difference between risk and outcome.
    belt : CalibrationBelt or None
        The calibration belt, when asked for (``belt=True``; None otherwise).
    """

    n: int
    n_events: float
    in_the_large: CalibrationInTheLarge
    weak: WeakCalibration
    curve: FlexibleCalibrationCurve
    index: CalibrationIndex
    hosmer_lemeshow: HosmerLemeshowTest
    spiegelhalter: SpiegelhalterTest
    c_statistic: float
    brier: float
    belt: CalibrationBelt | None = None

    def to_dict(self) -> dict[str, Any]:
        """Every number as JSON-ready floats, lists and dictionaries."""

        def part(x: Any) -> Any:
            if x is None:
                return None
            if hasattr(x, "to_dict"):
                return x.to_dict()
            if hasattr(x, "__dataclass_fields__"):
                from dataclasses import asdict

                return _jsonable(asdict(x))
            return _jsonable(x)

        return {
            "n": self.n,
            "n_events": self.n_events,
            "in_the_large": part(self.in_the_large),
            "weak": part(self.weak),
            "curve": part(self.curve),
            "index": part(self.index),
            "hosmer_lemeshow": part(self.hosmer_lemeshow),
            "spiegelhalter": part(self.spiegelhalter),
            "c_statistic": self.c_statistic,
            "brier": self.brier,
            "belt": part(self.belt),
        }

    def summary(self) -> list[str]:
        """The hierarchy in plain words, one line per level (Van Calster et al. 2016; Van Calster et al. 2019)."""
        return _summary(self)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x


def _fmt(v: float, digits: int = 2) -> str:
    if not math.isfinite(v):
        return "n/a"
    return f"{v:.{digits}f}"


def _p(v: float) -> str:
    if not math.isfinite(v):
        return "n/a"
    return "< 0.001" if v < 0.001 else f"= {v:.3f}"


def _pct(v: float) -> str:
    return f"{100 * v:.1f} %"


def _summary(h: CalibrationHierarchy) -> list[str]:
    lines: list[str] = []
    il, weak, idx = h.in_the_large, h.weak, h.index
    level = f"{round(100 * il.confidence):d} % CI"
    lo, hi = il.oe_interval
    if lo <= 1 <= hi or not (math.isfinite(lo) and math.isfinite(hi)):
        reading = "no evidence that the average risk is off"
    elif hi < 1:
        reading = "fewer events than predicted: risks too high on average"
    else:
        reading = "more events than predicted: risks too low on average"
    lines.append(
        f"Calibration in the large: mean predicted risk {_pct(il.mean_predicted)}, "
        f"observed event rate {_pct(il.observed_rate)}; O/E {_fmt(il.oe_ratio)} "
        f"({level} {_fmt(lo)} to {_fmt(hi)}): {reading}."
    )
    a_lo, a_hi = weak.intercept_interval
    if a_lo <= 0 <= a_hi:
        reading = "no evidence of systematic over- or under-estimation"
    elif a_hi < 0:
        reading = "risks overestimated"
    else:
        reading = "risks underestimated"
    lines.append(
        f"Calibration intercept {_fmt(weak.intercept)} ({level} {_fmt(a_lo)} to "
        f"{_fmt(a_hi)}): {reading}."
    )
    b_lo, b_hi = weak.slope_interval
    if b_lo <= 1 <= b_hi:
        reading = "no evidence that the risks are too extreme or too moderate"
    elif b_hi < 1:
        reading = "predictions too extreme (typical of over-fitting: high risks too high, low risks too low)"
    else:
        reading = "predictions too moderate (risks not spread enough)"
    lines.append(
        f"Calibration slope {_fmt(weak.slope)} ({level} {_fmt(b_lo)} to {_fmt(b_hi)}): {reading}."
    )
    lines.append(
        f"Flexible calibration curve ({h.curve.method}): ICI {_fmt(idx.ici, 3)}, "
        f"E50 {_fmt(idx.e50, 3)}, E90 {_fmt(idx.e90, 3)}, Emax {_fmt(idx.emax, 3)} "
        "(absolute differences between predicted and observed risk)."
    )
    hl = h.hosmer_lemeshow
    if hl is not None:
        reading = (
            "evidence that observed and expected events differ between risk groups"
            if hl.p_value < 1 - il.confidence
            else "no evidence of a difference between risk groups (a test of low power in "
            "small samples, and one that flags trivial differences in large ones)"
        )
        # the chi-square reference needs expected counts of about 5 or more in every
        # group (Hosmer & Lemeshow 1980); a group of tiny risks with one event makes the
        # statistic huge, so the sentence says when the p-value rests on such groups
        expected_non_events = hl.group_sizes - hl.expected_events
        sparse = int(np.sum((hl.expected_events < 5) | (expected_non_events < 5)))
        caveat = (
            f" ({sparse} of the {hl.group_sizes.size} groups expect fewer than 5 events or "
            "non-events, so the chi-square p-value is only approximate there: read the "
            "Spiegelhalter test and the calibration curve beside it)"
            if sparse
            else ""
        )
        lines.append(
            f"Hosmer-Lemeshow test ({hl.n_groups} risk groups): chi-square "
            f"{_fmt(hl.statistic)} on {hl.df} df, p {_p(hl.p_value)}: {reading}{caveat}."
        )
    sp = h.spiegelhalter
    if sp is not None:
        lines.append(f"Spiegelhalter z test: z = {_fmt(sp.z)}, p {_p(sp.p_value)}.")
    if h.belt is not None:
        belt_level = float(max(h.belt.confidence_levels))
        dev = h.belt.deviations(belt_level)
        where = (
            "; ".join(
                f"{_pct(a)} to {_pct(b)} ("
                + ("risks too high" if kind == "over" else "risks too low")
                + ")"
                for a, b, kind in dev
            )
            if dev
            else "nowhere"
        )
        lines.append(
            f"Calibration belt (degree {h.belt.degree}): p {_p(h.belt.p_value)}; at "
            f"{round(100 * belt_level):d} % it excludes the diagonal {where}."
        )
    lines.append(
        f"Discrimination: c-statistic {_fmt(h.c_statistic, 3)}; Brier score "
        f"{_fmt(h.brier, 4)} (n = {h.n}, {_fmt(h.n_events, 0)} events)."
    )
    return lines


def _c_statistic(
    p: np.ndarray, y: np.ndarray, w: np.ndarray | None, order: np.ndarray | None = None
) -> float:
    """AUC, ties counted one half, O(n log n) (``order``: an argsort of ``p``)."""
    if order is None:
        order = np.argsort(p)
    return _c_statistic_sorted(p[order], y[order], None if w is None else w[order])


def _c_statistic_sorted(ps: np.ndarray, ys: np.ndarray, ws: np.ndarray | None) -> float:
    """AUC of risks ``ps`` sorted in increasing order, outcomes and weights in that order."""
    pos = ys if ws is None else ws * ys
    neg = (1.0 - ys) if ws is None else ws - pos
    new = np.empty(ps.shape[0], dtype=bool)  # first row of each tie group of equal risk
    new[0] = True
    np.not_equal(ps[1:], ps[:-1], out=new[1:])
    if new.all():  # no ties: the events' share of non-events below them
        neg_below = np.cumsum(neg) - neg
        num = float(np.dot(pos, neg_below))
    else:
        starts = np.flatnonzero(new)
        pos_g = np.add.reduceat(pos, starts)
        neg_g = np.add.reduceat(neg, starts)
        neg_below = np.cumsum(neg_g) - neg_g
        num = float(np.dot(pos_g, neg_below) + 0.5 * np.dot(pos_g, neg_g))
    den = float(pos.sum() * neg.sum())
    return num / den if den > 0 else math.nan


def _hierarchy(
    p: np.ndarray,
    y: np.ndarray,
    w: np.ndarray | None,
    confidence: float,
    curve: str,
    n_groups: int,
    belt: bool,
) -> CalibrationHierarchy:
    in_large = _ciltl(p, y, w, confidence)
    weak = _weak(p, y, w, confidence)
    method, span, degree, n_knots = _check_curve_args(curve, 0.75, 2, 5)
    order = np.argsort(p)  # one sort for the curve and the c-statistic
    fc, fitter = _curve(p, y, w, method, span, degree, n_knots, 200, confidence, order)
    index = _index_from(p, w, fc, fitter)
    if fitter is not None:  # the loess fitter holds the rows sorted by risk
        auc = _c_statistic_sorted(fitter.x, fitter.y, None if w is None else fitter.w)
    else:
        auc = _c_statistic(p, y, w, order)
    hl = _hosmer_lemeshow(p, y, w, n_groups)
    sp = _spiegelhalter(p, y, w)
    bt = None
    if belt:
        levels = (0.8, confidence) if confidence > 0.8 else (confidence,)
        bt = calibration_belt(p, y, confidence_levels=levels, sample_weight=w)
    brier = float(np.mean((p - y) ** 2) if w is None else np.dot(w, (p - y) ** 2) / w.sum())
    return CalibrationHierarchy(
        n=int(p.shape[0]),
        n_events=in_large.n_events,
        in_the_large=in_large,
        weak=weak,
        curve=fc,
        index=index,
        hosmer_lemeshow=hl,
        spiegelhalter=sp,
        c_statistic=auc,
        brier=brier,
        belt=bt,
    )


def calibration_hierarchy(
    probs: Any,
    labels: Any,
    *,
    confidence: float = 0.95,
    curve: str = "loess",
    n_groups: int = 10,
    belt: bool = False,
    sample_weight: Any = None,
    classes: Any = None,
) -> CalibrationHierarchy:
    """Every level of the calibration hierarchy of Van Calster et al. (2016).

    What R's ``rms::val.prob`` and ``CalibrationCurves::val.prob.ci.2`` report, in
    one object: calibration in the large, the calibration intercept and slope (Cox
    1958), a flexible calibration curve with its band and the integrated
    calibration index with E50, E90, Emax (Austin & Steyerberg 2019), the
    Hosmer-Lemeshow and Spiegelhalter tests, the c-statistic and the Brier score,
    and, on request, the calibration belt.

    Parameters
    ----------
    probs : array-like or tensor, shape (n,) or (n, 2)
        Predicted risks ``P(y = 1)``, strictly between 0 and 1.
    labels : array-like, shape (n,)
        Outcomes 0/1 (or class names with ``classes``).
    confidence : float, default 0.95
        Level of every interval and band.
    curve : {"loess", "rcs"}, default "loess"
        The flexible calibration curve (see
        :func:`calipers.clinical.flexible_calibration_curve`; defaults span 0.75,
        degree 2, 5 knots).
    n_groups : int, default 10
        Risk groups of the Hosmer-Lemeshow test.
    belt : bool, default False
        Also compute the calibration belt (slower).
    sample_weight : array-like, shape (n,), optional
        Non-negative row weights.
    classes : array-like, optional
        ``[negative, positive]`` class names, to read ``labels`` as names.

    Returns
    -------
    CalibrationHierarchy

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import expit
    >>> from calipers.clinical import calibration_hierarchy
    >>> rng = np.random.default_rng(0)
    >>> lp = rng.normal(-1.5, 1.2, 4000)
    >>> y = rng.uniform(size=4000) < expit(-1.5 + 0.7 * (lp + 1.5))
    >>> h = calibration_hierarchy(expit(lp), y)
    >>> print(h.summary()[2])
    Calibration slope 0.72 (95 % CI 0.65 to 0.79): predictions too extreme (typical of over-fitting: high risks too high, low risks too low).
    """
    c = check_confidence(confidence)
    g = _check_n_groups(n_groups)
    _check_curve_args(curve, 0.75, 2, 5)
    p, y, w = binary_risks(probs, labels, sample_weight, classes)
    return _hierarchy(p, y, w, c, curve, g, bool(belt))


def calibration_hierarchy_by_class(
    probs: Any,
    labels: Any,
    *,
    confidence: float = 0.95,
    curve: str = "loess",
    n_groups: int = 10,
    belt: bool = False,
    sample_weight: Any = None,
    classes: Any = None,
) -> dict[Any, CalibrationHierarchy]:
    """The calibration hierarchy of each class against the rest.

    For ``(n, k)`` probabilities: column ``j`` is the predicted risk of class ``j``
    and the outcome is ``label == j`` (one-vs-rest), each read by
    :func:`calipers.clinical.calibration_hierarchy` with the same arguments.

    Parameters
    ----------
    probs : array-like or tensor, shape (n, k)
        Class probabilities (rows on the simplex).
    labels : array-like, shape (n,)
        Class indices, or class names with ``classes``.
    confidence, curve, n_groups, belt, sample_weight
        As :func:`calipers.clinical.calibration_hierarchy`.
    classes : array-like, optional
        The class of each column; the result is then keyed by class name.

    Returns
    -------
    dict
        Class index (or name) -> :class:`CalibrationHierarchy`.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.clinical import calibration_hierarchy_by_class
    >>> rng = np.random.default_rng(0)
    >>> P = rng.dirichlet([2, 2, 2], 3000)
    >>> y = np.array([rng.choice(3, p=row) for row in P])
    >>> by = calibration_hierarchy_by_class(P, y)
    >>> sorted(by), all(abs(h.weak.slope - 1) < 0.2 for h in by.values())
    ([0, 1, 2], True)
    """
    conf = check_confidence(confidence)
    g = _check_n_groups(n_groups)
    _check_curve_args(curve, 0.75, 2, 5)
    P = check_predictions(probs, labels, sample_weight=sample_weight, classes=classes)
    X = _numpy(P.probs).astype(np.float64, copy=False)
    if X.ndim == 1:
        X = np.column_stack([1 - X, X])
    X = np.clip(X, 0.0, 1.0)
    lab = _numpy(P.labels)
    if lab.ndim == 2:
        lab = np.argmax(lab, axis=1)
    w = None if P.sample_weight is None else _numpy(P.sample_weight).astype(np.float64)
    names = (
        list(range(X.shape[1]))
        if P.classes is None
        else [c.item() if hasattr(c, "item") else c for c in P.classes]
    )
    out: dict[Any, CalibrationHierarchy] = {}
    for j, name in enumerate(names):
        yj = (lab == j).astype(np.float64)
        try:
            out[name] = _hierarchy(X[:, j], yj, w, conf, curve, g, bool(belt))
        except CalibrationInputError as exc:
            raise CalibrationInputError(
                f"class {name!r} (column {j}) against the rest: {exc}"
            ) from None
    return out
