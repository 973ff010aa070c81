"""Verdicts: whether a calibration-error estimate can be trusted at this n, and the number to quote.

An estimate of a calibration error is a number with a bias: binned estimators are
biased upward by their noise at small n, and kernel estimators by their smoothing
(the Dirichlet-kernel CE_KL of Popordanoska et al. 2024, §7.1, is several times its
true value in 5 or 10 classes at a few thousand rows). :func:`verdict` measures that
bias on the user's own predictions, gives one **recommended** number (the estimate
corrected for its bias) with an interval, and says in words whether the number
resolves a calibration error.

Two kinds of label draws, with the predictions kept fixed:

* the **calibrated null** (consistency resampling, Bröcker & Smith 2007;
  Vaicenavicius et al. 2019, as cited by Gruber & Buettner 2022): ``y*_i ~ p_i``, which
  makes the same predictions perfectly calibrated. It gives the p-value of the test of
  calibration;
* the **fitted world**: ``y*_i ~ q_i`` with ``q`` a calibration curve fitted to the
  data (:mod:`calipers.inference.calibration_world`), as Roelofs et al. (2022) measured estimator
  bias. It gives the estimator's bias where the data are, hence the recommended number
  and its interval (:mod:`calipers.inference.bias_correction`). The bias at calibration would
  over-correct a miscalibrated model: for absolute-value estimators the noise mostly averages
  out once the error is well above it.

The rule (``alpha = 0.05`` by default):

1. **not distinguishable from calibrated at this n** -- the Monte-Carlo p-value
   ``(1 + #{T*_b >= T}) / (1 + B)`` of the calibrated null exceeds ``alpha``;
2. **resolved** -- otherwise, when the interval of the recommended number excludes 0
   (and, for a kernel estimator, the estimate moves over the bandwidths ``h/2 .. 2h``
   by less than the recommended number);
3. **cannot resolve** -- otherwise: the model is not calibrated, but at this n the
   size of its error is not separated from the estimator's bias and noise. The reason
   gives the n at which it would be (the interval narrows as ``1/sqrt(n)``).

docs/guide/verdicts.md documents the rule and benchmarks/study_verdicts.py measures
how often each verdict is right, the recommended number's error and the interval's
coverage on predictors with a known calibration error.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .._docstrings import fill_doc
from ..validation import (
    CalibrationInputError,
    Predictions,
    check_predictions,
    check_size,
    check_work,
)
from . import _resampling as rs
from ._confidence_interval import confidence_interval
from ._resampling import format_p_value
from .bias_correction import BiasCorrection, correct, soft_targets
from .calibration_test import _draw_labels

__all__ = ["Verdict", "verdict", "decide", "n_to_resolve"]

#: The three verdicts: short code -> the sentence every rendering shows.
VERDICTS: dict[str, str] = {
    "resolved": "resolved",
    "not_distinguishable": "not distinguishable from calibrated at this n",
    "cannot_resolve": (
        "cannot resolve the size at this n: not calibrated, but the bias-corrected "
        "number's interval reaches 0"
    ),
}

#: Multiples of the chosen bandwidth at which kernel estimators are re-evaluated.
BANDWIDTH_FACTORS: tuple[float, ...] = (0.5, 2**-0.5, 1.0, 2**0.5, 2.0)

#: Entries (rows x draws x columns) per batch of the batched kernel null: the targets
#: of a batch take at most 128 MiB in float64 (n = 10^4 rows of 10 classes: 167 draws).
_BATCH_ENTRIES = 1 << 24

#: Level of the recommended number's interval.
LEVEL = 0.95

Category = Literal["resolved", "not_distinguishable", "cannot_resolve"]


def _p_text(p: float, n_resamples: int) -> str:
    """``"= 0.042"``, or the resampling floor's bound ``"< 0.005"`` (B = 200)."""
    text = format_p_value(p, n_resamples)
    return text if text[0] in "<≤" else f"= {text}"


def n_to_resolve(n: int, recommended: float, interval: tuple[float, float]) -> int | None:
    """Rows at which the interval would clear 0: ``n (half-width / recommended)^2``.

    The half-width of the interval narrows as ``1/sqrt(n)``; None when the recommended
    number is 0 (no scale to resolve).

    Examples
    --------
    >>> from calipers.inference import n_to_resolve
    >>> n_to_resolve(2000, 0.02, (0.0, 0.05))     # half-width 0.03 at n = 2000
    4500
    """
    if not recommended > 0:
        return None
    half = (interval[1] - interval[0]) / 2 if interval[0] > 0 else interval[1] - recommended
    need = max(float(n) + 1, n * (max(half, 0.0) / recommended) ** 2)
    step = 10.0 ** max(0, math.floor(math.log10(need)) - 1)  # two significant digits, up
    return int(math.ceil(need / step) * step)


@dataclass(frozen=True)
class Verdict:
    """Whether a calibration-error estimate resolves anything at this n, and the number to quote.

    Built by :func:`verdict` (the rule is in :mod:`calipers.inference`).

    Attributes
    ----------
    metric : str
        Name of the calibration-error function.
    estimate : float
        ``T``, the metric on the data (the raw estimate).
    recommended : float
        The number to quote: ``T`` corrected for the estimator's bias at the
        fitted calibration curve (:mod:`calipers.inference.bias_correction`), 0 when the
        correction is larger than ``T``.
    recommended_method : str
        How the bias was measured, in words.
    interval : tuple of float
        95 % interval of the recommended number (lower end >= 0;
        :mod:`calipers.inference.bias_correction`; coverage in docs/intervals.md).
    bias : float
        The estimator's bias that was subtracted.
    bias_corrected : float
        ``T - bias`` (may be negative; ``recommended`` is it clipped at 0).
    null_mean : float
        Mean of the metric over ``n_resamples`` label draws from the predictions
        (a perfectly calibrated model with the same predictions): the estimator's
        bias at calibration at this n.
    null_quantile : float
        The ``1 - alpha`` quantile of those draws.
    p_value : float
        ``(1 + #{T*_b >= T}) / (1 + B)`` of the calibrated null.
    category : {"resolved", "not_distinguishable", "cannot_resolve"}
    reason : str
        The rule that decided, with its numbers, in words.
    n : int
        Rows.
    n_resamples : int
        Label draws ``B`` behind each of the null and the fitted world.
    alpha : float
        Level of the test of calibration.
    n_to_resolve : int or None
        "cannot resolve": about how many rows would resolve the error.
    world_model : str or None
        The calibration curve the bias was measured at.
    bandwidth : float or None
        The bandwidth the estimate used (kernel estimators), else None.
    bandwidth_sensitivity : tuple of (float, float)
        ``(bandwidth, estimate)`` at each of ``BANDWIDTH_FACTORS`` times ``bandwidth``
        (empty for estimators without a bandwidth).
    bandwidth_flag : bool
        The estimate moves over those bandwidths by more than the recommended number.
    bootstrap_interval : tuple of float or None
        95 % basic bootstrap interval of the raw estimate (``n_bootstrap > 0``).
    null_distribution : ndarray of shape (n_resamples,)
        The calibrated draws ``T*_b`` (read-only).

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(2)
    >>> p = rng.uniform(size=2000)
    >>> y = (rng.uniform(size=2000) < p**2).astype(int)   # over-confident: ECE about 1/6
    >>> v = cp.verdict(cp.ece, p, y, n_resamples=100)
    >>> v.category, v.verdict
    ('resolved', 'resolved')
    >>> v.interval[0] < 1 / 6 < v.interval[1]
    True
    """

    metric: str
    estimate: float
    recommended: float
    recommended_method: str
    interval: tuple[float, float]
    bias: float
    bias_corrected: float
    null_mean: float
    null_quantile: float
    p_value: float
    category: Category
    reason: str
    n: int
    n_resamples: int
    alpha: float
    n_to_resolve: int | None = None
    world_model: str | None = None
    bandwidth: float | None = None
    bandwidth_sensitivity: tuple[tuple[float, float], ...] = ()
    bandwidth_flag: bool = False
    bootstrap_interval: tuple[float, float] | None = None
    null_distribution: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)

    def __post_init__(self) -> None:
        a = np.array(self.null_distribution, dtype=np.float64)
        a.setflags(write=False)
        object.__setattr__(self, "null_distribution", a)

    @classmethod
    def from_draws(
        cls,
        metric: str,
        estimate: float,
        null: np.ndarray,
        *,
        n: int,
        world_draws: np.ndarray | None = None,
        world_estimand: float | None = None,
        refit_estimands: np.ndarray | None = None,
        world_model: str | None = None,
        alpha: float = 0.05,
        bandwidth: float | None = None,
        bandwidth_sensitivity: Sequence[tuple[float, float]] = (),
        bootstrap_interval: tuple[float, float] | None = None,
    ) -> Verdict:
        """The verdict of ``estimate`` from its calibrated draws and its fitted-world draws.

        For callers that draw themselves (the report draws in batches). Without
        ``world_draws`` the calibrated null corrects the bias (an over-correction for a
        miscalibrated model; ``recommended_method`` says so).

        Examples
        --------
        >>> import numpy as np
        >>> from calipers.inference import Verdict
        >>> rng = np.random.default_rng(0)
        >>> null = 0.03 + 0.005 * rng.standard_normal(99)
        >>> world = 0.205 + 0.01 * rng.standard_normal(99)
        >>> v = Verdict.from_draws("ece", 0.2, null, n=1000, world_draws=world,
        ...                        world_estimand=0.2)
        >>> v.category, round(v.recommended, 2)
        ('resolved', 0.2)
        """
        null = np.asarray(null, dtype=np.float64)
        B = null.shape[0]
        tol = 1e-12 * max(1.0, abs(estimate))
        p = float((1 + np.count_nonzero(null >= estimate - tol)) / (1 + B))
        corr = correct(
            estimate,
            null,
            world_draws=world_draws,
            world_estimand=world_estimand,
            refit_estimands=refit_estimands,
            world_model=world_model,
            level=LEVEL,
        )
        if p > alpha and corr.method != "calibrated null":
            # consistent with a calibrated model: quote the calibrated-null correction,
            # and let the interval span both worlds
            null_corr = correct(estimate, null, level=LEVEL)
            corr = BiasCorrection(
                recommended=null_corr.recommended,
                corrected=null_corr.corrected,
                bias=null_corr.bias,
                interval=(
                    min(null_corr.interval[0], corr.interval[0]),
                    max(null_corr.interval[1], corr.interval[1]),
                ),
                method="calibrated null",
                world_model=corr.world_model,
                world_estimand=corr.world_estimand,
            )
        sens = tuple((float(h), float(v)) for h, v in bandwidth_sensitivity)
        finite = [v for _, v in sens if math.isfinite(v)]
        spread = (max(finite) - min(finite) if finite else math.inf) if sens else None
        category, reason, need = decide(estimate, null, corr, n=n, alpha=alpha, p=p, spread=spread)
        return cls(
            metric=metric,
            estimate=float(estimate),
            recommended=corr.recommended,
            recommended_method=_method_text(corr, p > alpha),
            interval=corr.interval,
            bias=corr.bias,
            bias_corrected=corr.corrected,
            null_mean=float(null.mean()),
            null_quantile=float(np.quantile(null, 1 - alpha)),
            p_value=p,
            category=category,
            reason=reason,
            n=int(n),
            n_resamples=int(B),
            alpha=float(alpha),
            n_to_resolve=need,
            world_model=corr.world_model,
            bandwidth=bandwidth,
            bandwidth_sensitivity=sens,
            bandwidth_flag=spread is not None
            and spread > corr.recommended
            and corr.method == "calibrated null",
            bootstrap_interval=bootstrap_interval,
            null_distribution=null,
        )

    @classmethod
    def from_null(
        cls,
        metric: str,
        estimate: float,
        null: np.ndarray,
        *,
        n: int,
        alpha: float = 0.05,
        bandwidth: float | None = None,
        bandwidth_sensitivity: Sequence[tuple[float, float]] = (),
    ) -> Verdict:
        """:meth:`from_draws` with the calibrated null only (no fitted world).

        Examples
        --------
        >>> import numpy as np
        >>> from calipers.inference import Verdict
        >>> v = Verdict.from_null("ece", 0.2, np.full(99, 0.03), n=1000)
        >>> v.category, round(v.recommended, 2), v.recommended_method.split(",")[0]
        ('resolved', 0.17, 'bias at calibration only')
        """
        return cls.from_draws(
            metric,
            estimate,
            null,
            n=n,
            alpha=alpha,
            bandwidth=bandwidth,
            bandwidth_sensitivity=bandwidth_sensitivity,
        )

    @property
    def verdict(self) -> str:
        """The verdict as the sentence of :data:`VERDICTS`."""
        return VERDICTS[self.category]

    @property
    def relative_error(self) -> float:
        """Half-width of :attr:`interval` over :attr:`recommended` (inf when it is 0)."""
        if not self.recommended > 0:
            return math.inf
        return (self.interval[1] - self.interval[0]) / 2 / self.recommended

    def __str__(self) -> str:
        lo, hi = self.interval
        lines = [
            f"{self.metric} = {self.estimate:.4g} (n = {self.n}): {self.verdict}",
            f"  recommended: {self.recommended:.4g}, {100 * LEVEL:g}% interval "
            f"[{lo:.4g}, {hi:.4g}] ({self.recommended_method})",
            f"  calibrated null ({self.n_resamples} label draws from the predictions): mean "
            f"{self.null_mean:.4g}, {100 * (1 - self.alpha):g}% quantile "
            f"{self.null_quantile:.4g}, p {_p_text(self.p_value, self.n_resamples)}",
        ]
        if self.bootstrap_interval is not None:
            b = self.bootstrap_interval
            lines.append(
                f"  95% basic bootstrap interval of the raw estimate: [{b[0]:.4g}, {b[1]:.4g}]"
            )
        if self.bandwidth_sensitivity:
            pts = ", ".join(f"{h:.3g}: {v:.4g}" for h, v in self.bandwidth_sensitivity)
            flag = " (moves more than it resolves)" if self.bandwidth_flag else ""
            lines.append(f"  bandwidth sensitivity{flag}: {pts}")
        lines.append(f"  why: {self.reason}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (the null draws left out; non-finite numbers as strings)."""

        def num(v: float) -> Any:
            return v if math.isfinite(v) else str(v)

        return {
            "metric": self.metric,
            "estimate": num(self.estimate),
            "recommended": num(self.recommended),
            "recommended_method": self.recommended_method,
            "interval": [num(x) for x in self.interval],
            "bias": num(self.bias),
            "bias_corrected": num(self.bias_corrected),
            "null_mean": num(self.null_mean),
            "null_quantile": num(self.null_quantile),
            "p_value": num(self.p_value),
            "category": self.category,
            "verdict": self.verdict,
            "reason": self.reason,
            "n": self.n,
            "n_resamples": self.n_resamples,
            "alpha": self.alpha,
            "n_to_resolve": self.n_to_resolve,
            "world_model": self.world_model,
            "bandwidth": self.bandwidth,
            "bandwidth_sensitivity": [[h, num(v)] for h, v in self.bandwidth_sensitivity],
            "bandwidth_flag": self.bandwidth_flag,
            "bootstrap_interval": None
            if self.bootstrap_interval is None
            else [num(x) for x in self.bootstrap_interval],
        }


def _method_text(c: BiasCorrection, consistent: bool) -> str:
    if consistent:
        return (
            "bias of a calibrated model with these predictions, which the data cannot be told from"
        )
    if c.method == "calibrated null":
        return (
            "bias at calibration only, no calibration curve fitted for this metric: an "
            "over-correction for a miscalibrated model"
        )
    return (
        f"bias at the fitted calibration curve ({c.world_model}; its own error "
        f"{c.world_estimand:.4g}): {c.bias:.4g}"
    )


# ----------------------------------------------------------------------------- the rule


def decide(
    estimate: float,
    null: np.ndarray,
    correction: BiasCorrection,
    *,
    n: int,
    alpha: float = 0.05,
    p: float | None = None,
    spread: float | None = None,
) -> tuple[Category, str, int | None]:
    """Apply the verdict rule of :mod:`calipers.inference`: ``(category, reason, n_to_resolve)``.

    ``null``: the metric on label draws from the predictions (consistency resampling,
    Vaicenavicius et al. 2019); ``correction``: the recommended number and its interval
    (:func:`calipers.inference.bias_correction.correct`); ``spread``: how far the estimate moves
    over the bandwidth range (None for estimators without a bandwidth).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.inference.bias_correction import correct
    >>> from calipers.inference import decide
    >>> null = np.linspace(0.01, 0.03, 99)
    >>> decide(0.30, null, correct(0.30, null), n=1000)[0]
    'resolved'
    >>> decide(0.02, null, correct(0.02, null), n=1000)[0]
    'not_distinguishable'
    """
    B = null.shape[0]
    if p is None:
        tol = 1e-12 * max(1.0, abs(estimate))
        p = float((1 + np.count_nonzero(null >= estimate - tol)) / (1 + B))
    rec, (lo, hi) = correction.recommended, correction.interval
    shown = f"{rec:.4g} ({100 * LEVEL:g}% interval [{lo:.4g}, {hi:.4g}])"
    if p > alpha:
        share = 100 * (p * (B + 1) - 1) / B
        return (
            "not_distinguishable",
            f"{share:.0f}% of {B} draws of a perfectly calibrated model with these "
            f"predictions (labels drawn from them) reach the estimate {estimate:.4g} "
            f"(p {_p_text(p, B)} > {alpha:g}); at n = {n} this estimate cannot be told "
            f"from 0. Bias-corrected: {shown}",
            None,
        )
    if spread is not None and spread > rec and correction.method == "calibrated null":
        return (
            "cannot_resolve",
            f"the estimate {estimate:.4g} exceeds the calibrated draws (p {_p_text(p, B)}), "
            f"but it moves by {spread:.4g} over bandwidths 1/2 to 2 times the chosen one, "
            f"more than the bias-corrected {rec:.4g}: the number is the bandwidth's, not "
            "the data's",
            None,
        )
    if lo > 0:
        return (
            "resolved",
            f"the estimate {estimate:.4g} exceeds the calibrated draws (p {_p_text(p, B)}); "
            f"corrected for the estimator's bias {correction.bias:.4g} it is {shown}, "
            "which excludes 0",
            None,
        )
    need = n_to_resolve(n, rec, (lo, hi))
    more = (
        f"; at about n = {need} the interval would clear 0"
        if need is not None
        else "; the correction leaves no error to size"
    )
    return (
        "cannot_resolve",
        f"the estimate {estimate:.4g} exceeds the calibrated draws (p {_p_text(p, B)}), "
        f"so the model is not calibrated, but corrected for the estimator's bias "
        f"{correction.bias:.4g} it is {shown}, which reaches 0: at n = {n} the size of "
        f"the error is not separated from the estimator's bias and noise{more}",
        need,
    )


# ----------------------------------------------------------------------------- metrics


def _value(result: Any) -> float:
    """The number of a metric's result: a float, ``.value`` or ``.calibration_error``."""
    for attr in ("value", "calibration_error"):
        if hasattr(result, attr) and not isinstance(result, (float, np.floating)):
            result = getattr(result, attr)
            break
    try:
        return float(result)
    except (TypeError, ValueError) as e:
        raise CalibrationInputError(
            f"the metric must return a number or a result with .value; got {type(result).__name__}"
        ) from e


def _name(metric: Callable[..., Any]) -> str:
    return getattr(metric, "__name__", type(metric).__name__)


def _parameters(metric: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(metric).parameters)
    except (TypeError, ValueError):
        return {}


@dataclass
class _Metric:
    """A metric bound to its keyword arguments, with what the verdict needs of it."""

    fn: Callable[..., Any]
    kwargs: dict[str, Any]
    name: str
    pce: bool  # a proper_calibration_error-family estimator (batched null)

    def __call__(self, P: Predictions, **extra: Any) -> float:
        return _value(self.fn(P, None, **{**self.kwargs, **extra}))


def _bind(metric: Callable[..., Any], kwargs: dict[str, Any]) -> _Metric:
    """Normalise ``ce_kl`` / ``ce_squared_l2`` to ``proper_calibration_error``."""
    from ..metrics import ce_kl, ce_squared_l2, proper_calibration_error

    if not callable(metric):
        raise CalibrationInputError(
            f"metric must be a calibration-error function; got {type(metric).__name__}"
        )
    divergence = {ce_kl: "kl", ce_squared_l2: "squared_l2"}.get(metric)  # type: ignore[call-overload]
    if divergence is not None:
        if "divergence" in kwargs:
            raise CalibrationInputError(
                f"{_name(metric)} fixes the divergence; use proper_calibration_error to choose one"
            )
        return _Metric(
            proper_calibration_error, {**kwargs, "divergence": divergence}, _name(metric), True
        )
    return _Metric(metric, dict(kwargs), _name(metric), metric is proper_calibration_error)


def _bandwidth(m: _Metric, P: Predictions, result: Any) -> float | None:
    """The bandwidth behind ``result``, or None (no bandwidth, or one per class)."""
    from ..metrics import kde_bandwidth, kde_calibration_error
    from ..metrics.smooth_ece import smece, smece_bandwidth

    params = _parameters(m.fn)
    if "bandwidth" not in params:
        return None
    bw = m.kwargs.get("bandwidth", params["bandwidth"].default)
    if isinstance(bw, (int, float, np.floating)) and not isinstance(bw, bool):
        return float(bw)
    got = getattr(result, "bandwidth", None)
    if isinstance(got, (int, float, np.floating)) and not isinstance(got, bool):
        return float(got)
    lens = m.kwargs.get("lens", "auto")
    if m.fn is smece:
        return float(smece_bandwidth(P, None, lens=lens))
    if m.fn is kde_calibration_error:
        return float(kde_bandwidth(P, None, lens=lens))
    return None


# ----------------------------------------------------------------------------- the null


def _relabel(P: Predictions, y: np.ndarray) -> Predictions:
    return check_predictions(P.probs, y, sample_weight=P.sample_weight, validate=False)


#: Entries (draws x rows x columns) per chunk of :func:`_draw_terms` (16 MiB in float64).
_TERMS_ENTRIES = 1 << 21


def _draw_terms(
    scores: np.ndarray,
    T: np.ndarray,
    R: np.ndarray,
    weights: np.ndarray | None,
    divergence: str,
    binary_f: str,
    clip: float,
    method: str,
) -> np.ndarray:
    """``_slice_terms(scores, T[:, j], ..., r=R[:, j])[method]`` for every draw ``j`` at once.

    ``T`` and ``R``: the targets and their leave-one-out kernel estimates of ``r``
    draws, shape ``(n, r)`` (1-D scores) or ``(n, r, k)``. The same arithmetic as
    :func:`calipers.metrics._proper_calibration_error._slice_terms` (the direct estimator,
    Popordanoska et al. 2024 eq. 9, or the one via risk and refinement, eq. 14-15),
    on the draws taken a chunk at a time as ``(draws, n[, k])`` arrays: every draw's
    row sums and weighted means add the same numbers in the same order as the
    draw-by-draw computation, and ``F(g)``, ``grad F(g)`` are evaluated once.
    """
    from ..estimators.dirichlet_kernel import _as_simplex
    from ..metrics._proper_calibration_error import _generator, _pair

    n, r = T.shape[0], T.shape[1]
    if scores.ndim == 1:
        g = _as_simplex(scores, clip)[:, 1]
        two_point = binary_f == "two_point"
        if two_point:
            g = _pair(g)
    else:
        g = _as_simplex(scores, clip)
        two_point = False
    vector = g.ndim > 1
    F, grad, _ = _generator(divergence, vector=vector)
    Fg, Gg = F(g), grad(g)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    wsum = float(n) if w is None else w.sum()

    def mean(v: np.ndarray) -> np.ndarray:  # (draws, n) -> (draws,)
        return (v.sum(1) if w is None else (w * v).sum(1)) / wsum

    def rowsum(v: np.ndarray) -> np.ndarray:
        return v.sum(-1) if vector else v

    out = np.empty(r)
    per_draw = n * (int(np.prod(T.shape[2:])) if T.ndim > 2 else 1) * (2 if two_point else 1)
    step = max(1, _TERMS_ENTRIES // max(1, per_draw))
    for j0 in range(0, r, step):
        Rc = np.ascontiguousarray(np.moveaxis(R[:, j0 : j0 + step], 1, 0))
        if two_point:
            Rc = _pair(Rc.reshape(-1)).reshape(*Rc.shape, 2)
        Fr = F(Rc)
        direct = mean(Fr - Fg - rowsum(Gg * (Rc - g)))
        if method == "direct":
            out[j0 : j0 + step] = direct
            continue
        Tc = np.ascontiguousarray(np.moveaxis(np.asarray(T[:, j0 : j0 + step], np.float64), 1, 0))
        if two_point:
            Tc = _pair(Tc.reshape(-1)).reshape(*Tc.shape, 2)
        FT = F(Tc)
        risk = mean(FT - Fg - rowsum(Gg * (Tc - g)) - FT)
        ref = -mean(Fr)
        out[j0 : j0 + step] = risk - ref
    return out


def _pce_null(
    m: _Metric,
    P: Predictions,
    B: int,
    rng: np.random.Generator,
    q: np.ndarray | None = None,
    on_draw: Callable[[np.ndarray], None] | None = None,
) -> np.ndarray:
    """The Dirichlet/Beta-kernel estimate on ``B`` label draws, with one kernel pass per batch.

    Labels are drawn from ``q`` (default: the predictions, the calibrated null);
    ``on_draw(labels)`` sees every draw. The bandwidth is a number here (the one
    selected on the data: the likelihood choice of :func:`calipers.select_bandwidth`
    reads the scores only, which the draws share). A lens's scores do not depend on the
    labels, so the leave-one-out regression of all draws' targets is one product with
    the kernel matrix (:meth:`calipers.DirichletKernel.regress` takes a column per draw),
    and the divergence terms of all of a batch's draws are array operations
    (:func:`_draw_terms`; a user's :class:`calipers.Bregman` generator goes draw by draw).
    """
    from ..estimators.dirichlet_kernel import DirichletKernel
    from ..metrics._proper_calibration_error import _slice_terms
    from ..pipeline.lenses import get_lens

    kw = m.kwargs
    lens = get_lens(kw.get("lens", "canonical"))
    divergence = kw.get("divergence", "kl")
    method = kw.get("method", "direct")
    binary_f = kw.get("binary_f", "scalar")
    clip = kw.get("clip", 1e-7)
    block = kw.get("block_size")
    aggregate = kw.get("class_aggregate", "mean")
    bws = kw["bandwidth"]
    n = P.n_samples
    k = 1 if P.binary else P.n_classes
    src = P.probs if q is None else q
    step = max(1, min(B, _BATCH_ENTRIES // max(1, n * k)))
    out = np.zeros(B)
    for b0 in range(0, B, step):
        r = min(step, B - b0)
        draws = []
        for _ in range(r):
            y = _draw_labels(src, rng)
            if on_draw is not None:
                on_draw(y)
            draws.append(list(lens(_relabel(P, y))))
        n_slices = len(draws[0])
        hs = bws if isinstance(bws, tuple) else (bws,) * n_slices
        for s in range(n_slices):
            sl = draws[0][s]
            T = np.stack([np.asarray(d[s].targets, dtype=np.float64) for d in draws], axis=1)
            R = DirichletKernel(float(hs[s]), clip=clip, block_size=block).regress(
                sl.scores, T, sl.weights
            )
            if isinstance(divergence, str):
                out[b0 : b0 + r] += _draw_terms(
                    sl.scores, T, R, sl.weights, divergence, binary_f, clip, method
                )
                continue
            for j in range(r):  # a user's Bregman generator: F acts on one draw's rows
                terms = _slice_terms(
                    sl.scores,
                    T[:, j],
                    sl.weights,
                    divergence,
                    binary_f,
                    float(hs[s]),
                    clip,
                    block,
                    r=R[:, j],
                )
                out[b0 + j] += float(terms[method])
        if aggregate == "mean":
            out[b0 : b0 + r] /= n_slices
    return out


def _null(
    m: _Metric,
    P: Predictions,
    B: int,
    rng: np.random.Generator,
    q: np.ndarray | None = None,
    on_draw: Callable[[np.ndarray], None] | None = None,
) -> np.ndarray:
    """The metric on ``B`` label draws from ``q`` (default: the predictions themselves)."""
    if m.pce:
        return _pce_null(m, P, B, rng, q, on_draw)
    src = P.probs if q is None else q
    out = np.empty(B)
    for b in range(B):
        y = _draw_labels(src, rng)
        if on_draw is not None:
            on_draw(y)
        out[b] = m(_relabel(P, y))
    return out


# ----------------------------------------------------------------------------- the estimand


def _lens_name(m: _Metric) -> Any:
    if "lens" in m.kwargs:
        return m.kwargs["lens"]
    par = _parameters(m.fn).get("lens")
    return "auto" if par is None else par.default


def _family(m: _Metric, P: Predictions) -> Literal["curve", "canonical"]:
    """The calibration curve a metric's bias is measured at (:mod:`calipers.inference.calibration_world`)."""
    if not P.binary and P.n_classes > 2 and _lens_name(m) in ("canonical", "classwise"):
        return "canonical"
    return "curve"


def _weighted_sum_metrics() -> tuple[Callable[..., Any], ...]:
    """Metrics that are functions of weighted sums of targets: exact on weighted copies."""
    from ..metrics.binned import ece, rmsce
    from ..metrics.smooth_ece import smece

    return (ece, rmsce, smece)


def _estimand_fn(m: _Metric, P: Predictions) -> Callable[[np.ndarray], float] | None:
    """``theta(q)``: the quantity ``m`` estimates, with the labels distributed as ``q``.

    The proper calibration errors (Popordanoska et al. 2024, eq. 8): the divergence
    between each lens target's expectation under ``q`` and the score, exactly. The
    binned ECE, RMSCE and SmoothECE: the metric on two (or K) weighted copies of every
    row, one per label, weighted by its probability under ``q``. None for other
    metrics (their bias is then measured at calibration only).
    """
    from ..metrics._proper_calibration_error import _slice_terms
    from ..pipeline.lenses import get_lens

    n = P.n_samples
    w0 = np.ones(n) if P.sample_weight is None else np.asarray(P.sample_weight, dtype=np.float64)
    if m.pce:
        kw = m.kwargs
        lens = get_lens(kw.get("lens", "canonical"))
        divergence = kw.get("divergence", "kl")
        method = kw.get("method", "direct")
        binary_f = kw.get("binary_f", "scalar")
        clip = kw.get("clip", 1e-7)
        aggregate = kw.get("class_aggregate", "mean")
        slices = list(lens(P))

        def pce(q: np.ndarray) -> float:
            soft = soft_targets(lens, P, q)
            if soft is None:
                return math.nan
            total = 0.0
            for sl, t in zip(slices, soft, strict=True):
                terms = _slice_terms(
                    sl.scores, t, sl.weights, divergence, binary_f, 1.0, clip, None, r=t
                )
                total += float(terms[method])
            return total / len(slices) if aggregate == "mean" else total

        return pce
    if m.fn not in _weighted_sum_metrics() or _lens_name(m) not in ("auto", "top_label", "binary"):
        return None
    probs = np.asarray(P.probs, dtype=np.float64)
    if P.binary:
        X = np.concatenate([probs, probs])
        Y = np.concatenate([np.ones(n, np.int64), np.zeros(n, np.int64)])

        def weights(q: np.ndarray) -> np.ndarray:
            return np.concatenate([w0 * q, w0 * (1 - q)])

    elif _lens_name(m) == "binary":
        K = probs.shape[1]
        X = np.tile(probs, (K, 1))
        Y = np.repeat(np.arange(K), n)

        def weights(q: np.ndarray) -> np.ndarray:
            return (q * w0[:, None]).T.reshape(-1)

    else:  # top label: only whether the label is the predicted class matters
        order = np.argsort(-probs, axis=1, kind="stable")
        top, second = order[:, 0], order[:, 1]
        X = np.concatenate([probs, probs])
        Y = np.concatenate([top, second])

        def weights(q: np.ndarray) -> np.ndarray:
            g = q[np.arange(n), top]
            return np.concatenate([w0 * g, w0 * (1 - g)])

    def weighted(q: np.ndarray) -> float:
        PP = check_predictions(X, Y, sample_weight=weights(q), validate=False)
        return m(PP)

    return weighted


# ----------------------------------------------------------------------------- verdict


def _check_fraction(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not 0 < v < 1:
        raise CalibrationInputError(f"{name} must be a number in (0, 1); got {v!r}")
    return float(v)


@fill_doc
def verdict(
    metric: Callable[..., Any],
    probs: Any,
    labels: Any = None,
    *,
    n_resamples: int = 200,
    n_bootstrap: int = 0,
    alpha: float = 0.05,
    bandwidth_factors: Sequence[float] | None = BANDWIDTH_FACTORS,
    seed: int | None = 0,
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
    bias_ratio: float | None = None,
    **metric_kwargs: Any,
) -> Verdict:
    """Estimate a calibration error, correct it for its bias, and say whether it is resolved.

    Two kinds of label draws, the predictions kept as they are (module docstring of
    :mod:`calipers.inference`; docs/guide/verdicts.md):

    * ``n_resamples`` draws from the predictions themselves (consistency resampling,
      Bröcker & Smith 2007; Vaicenavicius et al. 2019, §4): a perfectly calibrated
      model with these predictions. They give the p-value of the estimate;
    * ``n_resamples`` draws from a calibration curve fitted to the data
      (:func:`calipers.inference.calibration_world.fit_calibration_world`; Roelofs et al. 2022
      measured estimator bias this way). They give the estimator's bias where the data
      are, the **recommended** number ``T - bias`` and its 95 % interval
      (:mod:`calipers.inference.bias_correction`).

    The rule: ``"not_distinguishable"`` when ``p > alpha``; else ``"resolved"`` when
    the interval of the recommended number excludes 0 (and a kernel estimate moves
    over ``bandwidth_factors`` times its bandwidth by less than the recommended
    number); else ``"cannot_resolve"``, with the n at which it would resolve.

    Parameters
    ----------
    metric : callable
        A calipers calibration error, ``metric(probs, labels, **kw)`` returning a
        number or a result with ``.value`` (``cp.proper_calibration_error``) or
        ``.calibration_error`` (``cp.calibration_sharpness``). It is called with a
        validated :class:`calipers.Predictions` and ``None`` as labels. The bias is
        measured at the fitted curve for ``cp.ece``, ``cp.rmsce``, ``cp.smece`` (binary
        and top-label lenses) and the proper calibration errors (``cp.ce_kl``,
        ``cp.ce_squared_l2``, ``cp.proper_calibration_error``, every lens); for other
        metrics at calibration only (an over-correction; ``recommended_method`` says so).
    probs : array-like of shape (n, k) or (n,), or Predictions
        Probabilities (binary: P(y = 1)), logits with ``logits=True``.
    {labels}
    n_resamples : int, default 200
        Label draws ``B`` of each kind (at least 19, so that a p-value of 0.05 is
        reachable; at most ``calipers.validation.MAX_RESAMPLES``, 10**6). Cost: ``2 B`` metric calls plus ``B`` curve refits; for the
        Dirichlet-kernel estimators one kernel pass per batch of draws, at the
        bandwidth chosen on the data.
    n_bootstrap : int, default 0
        Resamples of a 95 % basic bootstrap interval of the *raw* estimate
        (:func:`calipers.confidence_interval`), reported as ``bootstrap_interval``;
        0 skips it.
    alpha : float, default 0.05
        Level of the test against perfect calibration.
    bandwidth_factors : sequence of float or None, default (1/2, 1/sqrt 2, 1, sqrt 2, 2)
        Multiples of the chosen bandwidth at which a kernel estimator is recomputed
        (metrics with a ``bandwidth`` parameter); None skips it.
    seed : int or None, default 0
        Seed of :func:`numpy.random.default_rng` (draws and bootstrap).
    {sample_weight}
        Every draw and the curve fit keep them.
    {logits}
    {classes}
    bias_ratio : None
        Deprecated: the rule of calipers 0.2 ("cannot resolve" when the calibrated
        mean is at least this fraction of the estimate). It no longer takes part; a
        value gives a ``FutureWarning``.
    **metric_kwargs
        Passed to ``metric`` (e.g. ``bandwidth=0.001``, ``lens="classwise"``).

    Returns
    -------
    Verdict

    Raises
    ------
    CalibrationInputError
        Bad input or options, or a metric that is not finite on the data or on a draw.

    Examples
    --------
    A moderately miscalibrated model (true ECE 0.0305) at n = 5000:

    >>> import numpy as np
    >>> import calipers as cp
    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(2, 2, size=5000)
    >>> y = (rng.uniform(size=5000) < p**0.9).astype(int)
    >>> v = cp.verdict(cp.ece, p, y, n_resamples=100)
    >>> v.category, round(v.estimate, 3), round(v.recommended, 3)
    ('resolved', 0.032, 0.03)
    >>> v.interval[0] < 0.0305 < v.interval[1]
    True
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)):
        raise CalibrationInputError(f"n_resamples must be an integer >= 19; got {n_resamples!r}")
    if n_resamples < 19:
        raise CalibrationInputError(
            f"n_resamples must be >= 19 (with fewer draws no p-value reaches 0.05); "
            f"got {n_resamples}"
        )
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, (int, np.integer)):
        raise CalibrationInputError(f"n_bootstrap must be an integer >= 0; got {n_bootstrap!r}")
    if n_bootstrap == 1 or n_bootstrap < 0:
        raise CalibrationInputError(f"n_bootstrap must be 0 or >= 2; got {n_bootstrap}")
    B = check_size(n_resamples, "n_resamples", "MAX_RESAMPLES", minimum=19)
    if n_bootstrap:
        check_size(n_bootstrap, "n_bootstrap", "MAX_RESAMPLES", minimum=2)
    a = _check_fraction(alpha, "alpha")
    if bias_ratio is not None:
        warnings.warn(
            "verdict(bias_ratio=...) no longer takes part in the rule: the bias is now "
            "measured at a calibration curve fitted to the data and the verdict reads "
            "the recommended number's interval (docs/guide/verdicts.md); the argument "
            "is ignored and will be removed",
            FutureWarning,
            stacklevel=2,
        )
    factors: tuple[float, ...] = ()
    if bandwidth_factors is not None:
        factors = tuple(float(f) for f in bandwidth_factors)
        if not factors or not all(math.isfinite(f) and f > 0 for f in factors):
            raise CalibrationInputError(
                f"bandwidth_factors must be positive numbers; got {bandwidth_factors!r}"
            )
    if isinstance(probs, Predictions) and (
        sample_weight is not None or logits or classes is not None
    ):
        raise CalibrationInputError(
            "probs is already a calipers.Predictions: give its weights, logits and classes "
            "to check_predictions, not here"
        )
    P = rs.numpy_predictions(
        check_predictions(
            probs, labels, logits=logits, sample_weight=sample_weight, classes=classes
        )
    )
    check_work(
        "n_resamples",
        B,
        [("rows", P.n_samples), ("label draws", 2 * B + int(n_bootstrap))],
        unit="row evaluations",
        advice="use fewer resamples or a subsample of the rows",
    )
    m = _bind(metric, metric_kwargs)
    result = m.fn(P, None, **m.kwargs)
    T = _value(result)
    if not math.isfinite(T):
        raise CalibrationInputError(f"{m.name} is {T} on the data itself; no verdict")
    h = _bandwidth(m, P, result)
    boot_kwargs = dict(m.kwargs)
    if m.pce:
        bw = getattr(result, "bandwidth", None)
        if bw is None:  # pragma: no cover - every proper_calibration_error result has one
            raise CalibrationInputError("the kernel estimate did not report its bandwidth")
        m.kwargs["bandwidth"] = bw  # the draws use the bandwidth chosen on the data
        if not isinstance(bw, tuple):
            boot_kwargs["bandwidth"] = bw
    rng = np.random.default_rng(seed)
    null = _null(m, P, B, rng)
    _check_draws(null, m.name, B)
    world_draws = world_theta = refits = None
    model = None
    theta_fn = _estimand_fn(m, P)
    if theta_fn is not None:
        from .calibration_world import CalibrationWorldFitter  # SciPy: imported on use

        fitter = CalibrationWorldFitter(P.probs, _family(m, P), P.sample_weight)
        world = fitter.fit(P.labels, include_identity=False)

        def fit(y: np.ndarray) -> np.ndarray:
            return fitter.fit(y, include_identity=False, start=world).probs

        theta = theta_fn(world.probs)
        if not world.calibrated and math.isfinite(theta):
            got: list[float] = []
            world_draws = _null(
                m, P, B, rng, q=world.probs, on_draw=lambda y: got.append(theta_fn(fit(y)))
            )
            _check_draws(world_draws, m.name, B)
            world_theta, model = theta, world.model
            refits = np.asarray(got)
            if not np.all(np.isfinite(refits)):
                refits = None
    sens: list[tuple[float, float]] = []
    if h is not None:
        sens = [(h * f, T if f == 1.0 else m(P, bandwidth=h * f)) for f in factors]
    boot = None
    if n_bootstrap:
        fn = _pce_value if m.pce else m.fn
        ci = confidence_interval(
            fn, P, None, n_resamples=int(n_bootstrap), seed=seed, **boot_kwargs
        )
        boot = (ci.low, ci.high)
    return Verdict.from_draws(
        m.name,
        T,
        null,
        n=P.n_samples,
        world_draws=world_draws,
        world_estimand=world_theta,
        refit_estimands=refits,
        world_model=model,
        alpha=a,
        bandwidth=h,
        bandwidth_sensitivity=sens,
        bootstrap_interval=boot,
    )


def _check_draws(draws: np.ndarray, name: str, B: int) -> None:
    bad = int(np.count_nonzero(~np.isfinite(draws)))
    if bad:
        raise CalibrationInputError(
            f"{name} is not finite on {bad} of {B} label draws from the predictions"
        )


def _pce_value(probs: Any, labels: Any, **kwargs: Any) -> float:
    """``proper_calibration_error(...).value`` as a float (for the bootstrap)."""
    from ..metrics import proper_calibration_error

    return float(proper_calibration_error(probs, labels, **kwargs).value)
