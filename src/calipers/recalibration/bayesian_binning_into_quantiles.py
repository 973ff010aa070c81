"""Bayesian binning into quantiles, BBQ (Naeini, Cooper & Hauskrecht 2015).

BBQ averages many histogram-binning maps of one binary problem. For every bin
count ``B`` from ``max(1, floor(n^(1/3) / C))`` to
``min(ceil(n / 5), ceil(C n^(1/3)))`` (``C = 10``; ``n`` calibration scores) it
builds one binning of the scores; each binning ``M`` gets a score, and a test
score ``x`` is mapped to ``sum_M w_M P(y = 1 | x, M)`` with the weights
``w_M`` proportional to the scores (a uniform prior over the binnings).

The paper's reading (the defaults):

* **equal-frequency bins** (``binning="equal_frequency"``): the sorted scores
  are cut into ``B`` runs of ``floor(b n / B) - floor((b - 1) n / B)`` scores;
  an inner edge lies half-way between the last score of a run and the first of
  the next, the outer edges are 0 and 1; bins are ``(lo, hi]`` (the first one
  ``[0, hi]``) in the fit and in the prediction, so tied scores share a bin;
* **the BDeu score** (``criterion="bdeu"``, Heckerman, Geiger & Chickering 1995)
  of a binning with bins ``b``, ``N_b`` scores and ``m_b`` positives
  (``n_b = N_b - m_b``)::

      P(D | M) = prod_b  G(N'/B) / G(N_b + N'/B)
                        * G(m_b + a_b) / G(a_b) * G(n_b + c_b) / G(c_b)

  with ``G`` the gamma function, ``a_b = (N'/B) p_b``, ``c_b = (N'/B)(1 - p_b)``,
  ``p_b`` the midpoint of bin ``b`` and the prior strength ``N' = 2``;
* **the posterior mean** of each bin, ``(m_b + a_b) / (N_b + N'/B)``
  (``estimate="posterior_mean"``): never 0 or 1, and ``p_b`` in an empty bin;
* **every binning** of the range in the average (``selection="average"``).

netcal 1.4's ``BBQ`` (the peer) reads the method differently, and each of its
choices is one option here, so ``BayesianBinningIntoQuantiles(binning=
"equal_width", criterion="bic", estimate="frequency", selection="elbow")``
reproduces it (tested against netcal):

* it bins on **equal-width** edges ``j / B`` (``equal_intervals=True``, its
  default; with ``equal_intervals=False``, its equal-frequency option, ``fit``
  raises "currently not implemented");
* it scores by **BIC** ``-2 log L + B log n`` (or AIC ``-2 log L + 2 B``), its
  docstring saying that BDeu "is currently not supported", with ``log L`` the
  log-likelihood of the binning's own fitted values;
* a bin's value is the **frequency** ``m_b / N_b`` (the midpoint in an empty
  bin), so a binning's values can be exactly 0 or 1;
* it keeps only the binnings before an **"elbow"** of the sorted relative
  scores (see :func:`calipers.recalibration._bayesian_averaging.posterior_weights`),
  which with two nearly equal best binnings keeps only the best one;
* it computes ``log L`` in float32 (torch's ``binary_cross_entropy``), so its
  weights differ from the float64 ones in about the 6th digit;
* it clips the scores to ``[eps, 1 - eps]`` and bins them with ``[lo, hi)`` in
  its fit but ``(lo, hi]`` in its prediction, and uses ``numpy.linspace``
  edges (not always the correctly rounded ``j / B``): the three differ only for
  scores exactly on an edge.

Multi-class scores: one BBQ per class on column ``k`` against ``1{y = k}``
(one-vs-rest, as netcal), each row then divided by its sum
(``renormalize=True``).

The fitted average is stored as one step function (the union of all the
binnings' edges and the averaged value between consecutive edges), so a
prediction costs one binary search whatever the number of binnings; the
values equal the per-binning weighted sums to rounding (about 1e-15).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..estimators.binning import equal_width_edges
from ._bayesian_averaging import bin_count_range, log_likelihood, one_vs_rest, posterior_weights
from ._schema import Array, ArrayList, Flag, OneOf, Real, Schema, Values
from .base import Recalibrator, register
from .histogram_binning import _renormalize_rows
from .isotonic_regression import _n_maps

__all__ = ["BayesianBinningIntoQuantiles"]


def _bdeu_log(pos: np.ndarray, tot: np.ndarray, mid: np.ndarray, strength: float) -> float:
    """Log BDeu marginal likelihood of one binning (bins: positives, totals, midpoints)."""
    from scipy.special import gammaln  # lazy: ``import calipers`` loads no scipy.special

    B = len(tot)
    s = strength / B
    a = s * mid
    c = s - a
    neg = tot - pos
    # G(k + a) / G(a) is 1 for k = 0 (also when a = 0: a bin of zero width at 0 or 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_pos = np.where(pos > 0, gammaln(pos + a) - gammaln(a), 0.0)
        t_neg = np.where(neg > 0, gammaln(neg + c) - gammaln(c), 0.0)
        t_pos = np.where((pos > 0) & (a == 0), -np.inf, t_pos)
        t_neg = np.where((neg > 0) & (c == 0), -np.inf, t_neg)
    return float(np.sum(gammaln(s) - gammaln(tot + s) + t_pos + t_neg))


def _bbq_models(
    x: np.ndarray,
    t: np.ndarray,
    w: np.ndarray | None,
    *,
    binning: str = "equal_frequency",
    criterion: str = "bdeu",
    estimate: str = "posterior_mean",
    prior_strength: float = 2.0,
    range_constant: float = 10.0,
) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """Edges (``B + 1``), bin values (``B``) and log score of every binning of the range.

    The log score is the log marginal likelihood (BDeu) or ``-BIC / 2`` or
    ``-AIC / 2``: the model weights are proportional to its exponential.
    """
    order = np.argsort(x, kind="stable")
    xs = x[order]
    ws = np.ones(len(x)) if w is None else w[order]
    cw = np.concatenate([[0.0], np.cumsum(ws)])
    cp = np.concatenate([[0.0], np.cumsum(ws * t[order])])
    n = float(cw[-1])  # the number of scores (the total weight with sample_weight)
    edges_list, values_list, logs = [], [], []
    for B in bin_count_range(n, range_constant):
        if binning == "equal_width":
            edges = equal_width_edges(B)
        else:
            # the row holding each cut position r (a row of weight k counts k times)
            r = np.floor(np.arange(1, B) * n / B)
            lo = np.searchsorted(cw[1:], r - 1, side="right")
            hi = np.searchsorted(cw[1:], r, side="right")
            edges = np.concatenate([[0.0], (xs[lo] + xs[hi]) / 2.0, [1.0]])
        # scores <= an inner edge fall below it: bins (lo, hi], as in the prediction
        idx = np.concatenate([[0], np.searchsorted(xs, edges[1:-1], side="right"), [len(xs)]])
        tot = np.diff(cw[idx])
        pos = np.diff(cp[idx])
        mid = (edges[:-1] + edges[1:]) / 2.0
        if estimate == "frequency":
            with np.errstate(invalid="ignore", divide="ignore"):
                val = np.where(tot > 0, pos / np.where(tot > 0, tot, 1.0), mid)
        else:
            s = prior_strength / B
            val = (pos + s * mid) / (tot + s)
        val = np.clip(val, 0.0, 1.0)
        if criterion == "bdeu":
            logs.append(_bdeu_log(pos, tot, mid, prior_strength))
        else:
            penalty = B * np.log(n) if criterion == "bic" else 2.0 * B
            logs.append((2.0 * log_likelihood(pos, tot, val) - penalty) / 2.0)
        edges_list.append(edges)
        values_list.append(val)
    return edges_list, values_list, np.array(logs)


def _average_steps(
    edges_list: list[np.ndarray], values_list: list[np.ndarray], weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The weighted sum of step functions as one: right ends of its pieces and their values.

    Piece ``j`` is ``(thr[j - 1], thr[j]]`` (the first starts at 0; the last
    right end is 1); the inner edges of all binnings with weight > 0, once each.
    """
    keep = [m for m in range(len(weights)) if weights[m] > 0]
    inner = [edges_list[m][1:-1] for m in keep] + [np.array([1.0])]
    jumps = [weights[m] * np.diff(values_list[m]) for m in keep] + [np.array([0.0])]
    base = float(sum(weights[m] * values_list[m][0] for m in keep))
    thr, inv = np.unique(np.concatenate(inner), return_inverse=True)
    jump = np.bincount(inv, weights=np.concatenate(jumps), minlength=len(thr))
    vals = base + np.concatenate([[0.0], np.cumsum(jump)[:-1]])
    # edges at 1 (ties at 1) only separate scores above 1, which are read as 1
    thr, vals = thr[thr <= 1.0], vals[: int(np.sum(thr <= 1.0))]
    return thr, np.clip(vals, 0.0, 1.0)


def _predict_steps(x: np.ndarray, thr: np.ndarray, vals: np.ndarray) -> np.ndarray:
    j = np.searchsorted(thr, x, side="left")
    return vals[np.clip(j, 0, len(vals) - 1)]


def _pieces_consistent(v: Values) -> str | None:
    thr = v["thresholds_"]
    if any(a[-1] != 1.0 for a in thr):
        i = next(i for i, a in enumerate(thr) if a[-1] != 1.0)
        return f"field 'thresholds_' item {i} must end at 1.0; it ends at {float(thr[i][-1])!r}"
    return None


@register
class BayesianBinningIntoQuantiles(Recalibrator):
    """Bayesian binning into quantiles, BBQ (Naeini, Cooper & Hauskrecht 2015).

    The score-weighted average of equal-frequency histogram binnings with
    ``B`` from about ``n^(1/3) / 10`` to ``10 n^(1/3)`` bins, each scored by
    its BDeu marginal likelihood; see the module docstring for the formulas
    and for the options that reproduce netcal's ``BBQ``.

    Natural input: probabilities (logits are turned into probabilities with a
    softmax / sigmoid). Binary scores: one average on P(y = 1); multi-class:
    one per class (one-vs-rest), rows renormalised. Not accuracy-preserving
    and not injective (a step function).

    Parameters
    ----------
    binning : {"equal_frequency", "equal_width"}, default "equal_frequency"
        Bins with equal numbers of calibration scores (the paper) or of equal
        width ``1 / B`` (netcal).
    criterion : {"bdeu", "bic", "aic"}, default "bdeu"
        Score of a binning: BDeu marginal likelihood (the paper), or
        ``exp(-BIC / 2)`` / ``exp(-AIC / 2)`` with ``B`` parameters (netcal).
    estimate : {"posterior_mean", "frequency"}, default "posterior_mean"
        Value of a bin: the posterior mean ``(m_b + a_b) / (N_b + N'/B)`` of
        its Beta prior (the paper) or the frequency ``m_b / N_b`` (netcal;
        the bin midpoint when empty).
    selection : {"average", "elbow"}, default "average"
        Average every binning (the paper) or only those before netcal's elbow.
    prior_strength : float, default 2.0
        The equivalent sample size ``N'`` of the BDeu prior (the paper's 2);
        used by ``criterion="bdeu"`` and ``estimate="posterior_mean"``.
    range_constant : float, default 10.0
        ``C`` of the range of bin counts (the paper's and netcal's 10).
    renormalize : bool, default True
        Multi-class: divide each row of the K values by its sum (netcal).

    Attributes
    ----------
    thresholds_ : list of numpy.ndarray
        Per class (one entry for binary input): the right ends of the pieces
        of the averaged step function, increasing, the last one 1.0.
    values_ : list of numpy.ndarray
        The averaged probability on each piece ``(thresholds_[j - 1], thresholds_[j]]``.

    Examples
    --------
    Four scores, one bin (``n / 5`` caps the range at ``B = 1``): the posterior
    mean ``(m + N' p) / (N + N') = (2 + 2 * 0.5) / (4 + 2)``.

    >>> import numpy as np
    >>> from calipers.recalibration import BayesianBinningIntoQuantiles
    >>> p = np.array([0.2, 0.4, 0.6, 0.8])
    >>> y = np.array([0, 1, 0, 1])
    >>> BayesianBinningIntoQuantiles().fit(p, y).predict_proba(np.array([0.1, 0.9]))
    array([0.5, 0.5])
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> y = (rng.uniform(size=2000) < p**2).astype(int)    # true P(y = 1) = p**2
    >>> bbq = BayesianBinningIntoQuantiles().fit(p, y)
    >>> np.round(bbq.predict_proba(np.array([0.3, 0.5, 0.9])), 2)    # 0.09, 0.25, 0.81
    array([0.09, 0.28, 0.9 ])
    """

    input = "probs"
    _accuracy_preserving = False
    _injective = False
    schema = Schema(
        params={
            "binning": OneOf(("equal_frequency", "equal_width")),
            "criterion": OneOf(("bdeu", "bic", "aic")),
            "estimate": OneOf(("posterior_mean", "frequency")),
            "selection": OneOf(("average", "elbow")),
            "prior_strength": Real(lo=0.0, lo_open=True),
            "range_constant": Real(lo=1.0),
            "renormalize": Flag(),
        },
        state={
            "thresholds_": ArrayList(Array((None,), lo=0.0, hi=1.0, order="increasing"), _n_maps),
            "values_": ArrayList(
                Array((None,), lo=0.0, hi=1.0),
                lambda v: [len(v["thresholds_"])],
                like="thresholds_",
            ),
        },
        state_checks=(_pieces_consistent,),
    )

    def __init__(
        self,
        binning: Literal["equal_frequency", "equal_width"] = "equal_frequency",
        criterion: Literal["bdeu", "bic", "aic"] = "bdeu",
        estimate: Literal["posterior_mean", "frequency"] = "posterior_mean",
        selection: Literal["average", "elbow"] = "average",
        prior_strength: float = 2.0,
        range_constant: float = 10.0,
        renormalize: bool = True,
    ) -> None:
        self.binning = binning
        self.criterion = criterion
        self.estimate = estimate
        self.selection = selection
        self.prior_strength = prior_strength
        self.range_constant = range_constant
        self.renormalize = renormalize

    def _fit_one(
        self, x: np.ndarray, t: np.ndarray, w: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        if w is not None:
            keep = w > 0
            x, t, w = x[keep], t[keep], w[keep]
        edges, values, logs = _bbq_models(
            x,
            t,
            w,
            binning=str(self.binning),
            criterion=str(self.criterion),
            estimate=str(self.estimate),
            prior_strength=float(self.prior_strength),
            range_constant=float(self.range_constant),
        )
        return _average_steps(edges, values, posterior_weights(logs, str(self.selection)))

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        self.thresholds_, self.values_ = one_vs_rest(S, y, w, self._fit_one)

    def _transform(self, S: np.ndarray) -> np.ndarray:
        thr = [np.asarray(a, dtype=np.float64) for a in self.thresholds_]
        vals = [np.asarray(b, dtype=np.float64) for b in self.values_]
        if (S.ndim == 1) != (len(thr) == 1):
            # fitted on (n, 2) columns and given P(y = 1), or the other way round
            if S.ndim == 1:
                return self._transform(np.stack([1.0 - S, S], axis=1))[:, 1]
            q = self._transform(np.ascontiguousarray(S[:, 1]))
            return np.stack([1.0 - q, q], axis=1)
        if S.ndim == 1:
            return _predict_steps(S, thr[0], vals[0])
        Q = np.empty_like(S)
        for k in range(S.shape[1]):
            Q[:, k] = _predict_steps(S[:, k], thr[k], vals[k])
        return _renormalize_rows(Q) if self.renormalize else Q
