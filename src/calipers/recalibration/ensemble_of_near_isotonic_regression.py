"""Ensemble of near-isotonic regression models, ENIR (Naeini & Cooper 2016).

Near-isotonic regression (Tibshirani, Hoefling & Tibshirani 2011) fits values
``b_1, ..., b_m`` to the calibration targets ``t_i`` sorted by score, minimising
``1/2 sum_i W_i (t_i - b_i)^2 + lambda sum_i (b_i - b_{i+1})_+``: at
``lambda = 0`` the fit is the data, and as ``lambda`` grows adjacent values fuse
into groups until, past the last violation of monotonicity, the fit is the
isotonic regression (pool adjacent violators). The solution path is piecewise
linear in ``lambda`` and only ever merges groups (their modified PAV
algorithm): between two merges a group's value moves at the rate
``(1{b_left > b} - 1{b > b_right}) / W_group``, and the next merge is the first
collision of two neighbours.

ENIR takes every model at a merge of that path (``lambda > 0``: the saturated
fit at ``lambda = 0``, which gives 0/1 outputs, is left out, as in netcal),
scores each by BIC ``-2 log L + G log n`` (``G`` groups: the degrees of freedom
of the near-isotonic fit; or AIC ``-2 log L + 2 G``) and predicts with the
score-weighted average (weights ``exp(-BIC / 2)`` normalised). Between
calibration scores the paper interpolates linearly (``interpolation="linear"``,
the default); the average of the models is then the linear interpolation of
their averaged values at the distinct calibration scores, which is what is
stored. Outside the calibration range the end values are used.

Calibration scores that are exactly equal are merged first (their targets
pooled with their weights), so that tied scores get one value; the path is
then the path with that constraint.

Cost and the cap: each merge costs one pass over the current groups, and there
are at most as many merges as initial groups (runs of equal targets), so the
path costs ``O(m^2)`` for ``m`` distinct scores in the worst case. Beyond
``max_knots`` distinct scores (default 10 000) the sorted scores are first
pooled into ``max_knots`` blocks of consecutive distinct scores (equal numbers
of them; a block's score is its weighted mean score, its target its weighted
mean target), which bounds the fit by ``O(max_knots^2)`` whatever ``n``
(at the default, a few seconds on 10^6 rows). ``max_knots=None`` removes the cap.

netcal 1.4's ``ENIR`` (the peer) differs from the paper in several ways;
``EnsembleOfNearIsotonicRegression(interpolation="step", selection="elbow")``
reads the method as netcal does, but not its defects (the tests rebuild netcal's
numbers from this path with the defects listed here, to 1e-12):

* it predicts with **step functions**: a group's value holds up to the
  midpoint between its last calibration score and the next one (``interpolation="step"``);
* it keeps only the models before its **"elbow"** of the sorted relative scores
  (``selection="elbow"``; see BBQ);
* it computes ``log L`` in float32 (torch), so its weights differ from the
  float64 ones in about the 6th digit;
* each model it stores shares its array of values with the next model of the
  path, which moves them on to the next merge: the model at ``lambda_m`` is
  scored and averaged with the function of the model at ``lambda_(m+1)``
  (counted with one group more), so the first model's function is left out
  and the isotonic end is counted twice;
* when merges happen at the same ``lambda`` on three or more consecutive
  groups, its merged group keeps the calibration scores and the interval of
  the first two only: the later groups' scores leave the fit (their weight is
  lost from the slopes that follow) and test scores in their interval are
  mapped to 0. With 0/1 targets this happens at the first merge already
  (alternating single labels such as ``1, 0, 1, 0`` all meet at
  ``lambda = 1/2``), so on most data netcal's models are not the
  near-isotonic path: on eight scores with labels ``0, 0, 1, 0, 1, 0, 1, 1``
  its ENIR predicts ``0, 0, 0.5, 0.5, 0, 0, 1, 1``, where the path's only
  model (the isotonic regression) is ``0, 0, 0.5, 0.5, 0.5, 0.5, 1, 1``;
  when the path reaches a single group it raises (``np.min`` of an empty
  array);
* it does not merge tied scores (a tied pair with different labels gets two
  groups whose intervals coincide) and stops the path when rounding makes a
  collision time fall a hair below the current ``lambda``.

Multi-class scores: one ENIR per class on column ``k`` against ``1{y = k}``
(one-vs-rest, as netcal), rows then divided by their sum (``renormalize=True``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np

from ._bayesian_averaging import log_likelihood, one_vs_rest, posterior_weights
from ._schema import Array, ArrayList, Flag, Integer, OneOf, Schema
from .base import Recalibrator, register
from .histogram_binning import _renormalize_rows
from .isotonic_regression import _n_maps

__all__ = ["EnsembleOfNearIsotonicRegression"]


def _pool(
    x: np.ndarray, t: np.ndarray, w: np.ndarray | None, max_knots: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct scores (or ``max_knots`` blocks of them), their weights and positive weights."""
    wt = np.ones_like(x) if w is None else w
    order = np.argsort(x, kind="stable")
    xs, ts, ws = x[order], t[order], wt[order]
    start = np.flatnonzero(np.concatenate([[True], xs[1:] != xs[:-1]]))
    knots = xs[start]
    W = np.add.reduceat(ws, start)
    P = np.add.reduceat(ws * ts, start)
    if max_knots is not None and len(knots) > max_knots:
        block = (np.arange(len(knots)) * max_knots) // len(knots)
        first = np.flatnonzero(np.concatenate([[True], block[1:] != block[:-1]]))
        XW = np.add.reduceat(np.add.reduceat(ws * xs, start), first)
        W = np.add.reduceat(W, first)
        P = np.add.reduceat(P, first)
        knots = XW / W
    return knots, W, P


def _nir_path(
    W: np.ndarray, P: np.ndarray
) -> Iterator[tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The models at the merges of the near-isotonic path of targets ``P / W`` with weights ``W``.

    Yields ``(lambda, values, group weights, group positives, group starts)``
    after every merge (arrays owned by the caller until the next step), the
    last one the isotonic regression; yields the start (``lambda = 0``, runs
    of equal targets fused) alone when that is already non-decreasing.
    """
    ybar = P / W
    starts = np.flatnonzero(np.concatenate([[True], ybar[1:] != ybar[:-1]]))
    gw = np.add.reduceat(W, starts)
    gp = np.add.reduceat(P, starts)
    val = ybar[starts].copy()
    lam = 0.0
    if not np.any(val[:-1] > val[1:]):
        yield lam, val, gw, gp, starts
        return
    while len(val) > 1:
        viol = (val[:-1] > val[1:]).astype(np.float64)
        if not viol.any():
            return
        ind = np.concatenate([[0.0], viol, [0.0]])
        slope = (ind[:-1] - ind[1:]) / gw
        ds = slope[:-1] - slope[1:]
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(ds != 0, (val[1:] - val[:-1]) / np.where(ds != 0, ds, 1.0), np.inf) + lam
        nxt = float(np.min(t))
        if not np.isfinite(nxt):
            return
        nxt = max(nxt, lam)  # a collision a hair in the past (rounding) happens now
        val = val + slope * (nxt - lam)
        lam = nxt
        merge = t <= nxt  # pair (j, j + 1) fuses
        new = np.concatenate([[True], ~merge])  # old group j opens a new group
        first = np.flatnonzero(new)
        starts = starts[first]
        gw = np.add.reduceat(gw, first)
        gp = np.add.reduceat(gp, first)
        val = val[first]
        yield lam, val, gw, gp, starts


def _log_evidence(
    val: np.ndarray, gw: np.ndarray, gp: np.ndarray, n: float, criterion: str
) -> float:
    """``-BIC / 2`` (or ``-AIC / 2``) of one model of the path, ``G`` groups its parameters."""
    G = len(val)
    penalty = G * np.log(n) if criterion == "bic" else 2.0 * G
    return (2.0 * log_likelihood(gp, gw, np.clip(val, 0.0, 1.0)) - penalty) / 2.0


def _enir_fit(
    knots: np.ndarray, W: np.ndarray, P: np.ndarray, n: float, criterion: str, selection: str
) -> np.ndarray:
    """The score-weighted average of the path's models at the knots.

    The average is kept as jumps at the groups' starts, summed once at the end.
    ``selection="average"`` walks the path once, the weights relative to the
    best model so far (the sum rescaled when a better one comes); ``"elbow"``
    needs every score first and walks it twice.
    """
    D = np.zeros(len(knots))
    if selection == "average":
        ref, total = -np.inf, 0.0
        last: tuple[np.ndarray, np.ndarray] | None = None
        for _, val, gw, gp, starts in _nir_path(W, P):
            last = (val, starts)
            e = _log_evidence(val, gw, gp, n, criterion)
            if not np.isfinite(e):
                continue
            if e > ref:
                scale = float(np.exp(ref - e))
                D *= scale
                total *= scale
                ref = e
            wm = float(np.exp(e - ref))
            D[starts] += wm * np.diff(np.clip(val, 0.0, 1.0), prepend=0.0)
            total += wm
        if total == 0.0 and last is not None:  # no model with a finite score: the last one
            D[last[1]] = np.diff(np.clip(last[0], 0.0, 1.0), prepend=0.0)
            total = 1.0
        return np.clip(np.cumsum(D) / total, 0.0, 1.0)
    logs = np.array([_log_evidence(v, gw, gp, n, criterion) for _, v, gw, gp, _ in _nir_path(W, P)])
    if not np.any(np.isfinite(logs)):
        logs = np.where(np.arange(len(logs)) == len(logs) - 1, 0.0, -np.inf)
    weights = posterior_weights(logs, selection)
    for m, (_, val, _, _, starts) in enumerate(_nir_path(W, P)):
        if weights[m] > 0:
            D[starts] += weights[m] * np.diff(np.clip(val, 0.0, 1.0), prepend=0.0)
    return np.clip(np.cumsum(D), 0.0, 1.0)


def _predict(
    x: np.ndarray, knots: np.ndarray, values: np.ndarray, interpolation: str
) -> np.ndarray:
    if interpolation == "linear":
        return np.interp(x, knots, values)
    mids = (knots[:-1] + knots[1:]) / 2.0
    return values[np.searchsorted(mids, x, side="left")]


@register
class EnsembleOfNearIsotonicRegression(Recalibrator):
    """Ensemble of near-isotonic regression models, ENIR (Naeini & Cooper 2016).

    The BIC-weighted average of the models on the near-isotonic regression
    path (Tibshirani, Hoefling & Tibshirani 2011) of the calibration targets
    sorted by score, predicted by linear interpolation; see the module
    docstring for the path, the cap on its cost and the options that
    describe netcal's ``ENIR`` (whose merges lose calibration scores on most
    binary data).

    Natural input: probabilities (logits are turned into probabilities with a
    softmax / sigmoid). Binary scores: one ensemble on P(y = 1); multi-class:
    one per class (one-vs-rest), rows renormalised. Not accuracy-preserving,
    not injective (flat pieces) and not necessarily monotone (the models
    before the isotonic end of the path are only nearly monotone).

    Parameters
    ----------
    criterion : {"bic", "aic"}, default "bic"
        Score of a model with ``G`` groups: ``exp(-BIC / 2)`` with
        ``BIC = -2 log L + G log n`` (the paper, netcal's default) or
        ``exp(-AIC / 2)``.
    interpolation : {"linear", "step"}, default "linear"
        Between calibration scores: linear interpolation of the fitted values
        (the paper) or netcal's step function (the value of the nearest
        calibration score, the switch half-way between two).
    selection : {"average", "elbow"}, default "average"
        Average every model of the path (the paper) or only those before
        netcal's elbow.
    max_knots : int or None, default 10000
        Distinct calibration scores beyond which the sorted scores are pooled
        into ``max_knots`` blocks before the path (its cost is quadratic in
        their number); None: no cap.
    renormalize : bool, default True
        Multi-class: divide each row of the K values by its sum (netcal).

    Attributes
    ----------
    knots_ : list of numpy.ndarray
        Per class (one entry for binary input): the distinct calibration
        scores (block means beyond ``max_knots``), increasing.
    values_ : list of numpy.ndarray
        The averaged fitted probability at each knot.

    Examples
    --------
    Three scores with labels 1, 0, 1: the path fuses the first two at
    ``lambda = 1/2`` (values 1/2, 1/2, 1), the only model with ``lambda > 0``.

    >>> import numpy as np
    >>> from calipers.recalibration import EnsembleOfNearIsotonicRegression
    >>> enir = EnsembleOfNearIsotonicRegression().fit(
    ...     np.array([0.2, 0.5, 0.8]), np.array([1, 0, 1])
    ... )
    >>> enir.values_[0]
    array([0.5, 0.5, 1. ])
    >>> enir.predict_proba(np.array([0.1, 0.65, 0.9]))
    array([0.5 , 0.75, 1.  ])
    """

    input = "probs"
    _accuracy_preserving = False
    _injective = False
    schema = Schema(
        params={
            "criterion": OneOf(("bic", "aic")),
            "interpolation": OneOf(("linear", "step")),
            "selection": OneOf(("average", "elbow")),
            "max_knots": Integer(lo=2, none_ok=True),
            "renormalize": Flag(),
        },
        state={
            "knots_": ArrayList(Array((None,), order="increasing"), _n_maps),
            "values_": ArrayList(
                Array((None,), lo=0.0, hi=1.0),
                lambda v: [len(v["knots_"])],
                like="knots_",
            ),
        },
    )

    def __init__(
        self,
        criterion: Literal["bic", "aic"] = "bic",
        interpolation: Literal["linear", "step"] = "linear",
        selection: Literal["average", "elbow"] = "average",
        max_knots: int | None = 10_000,
        renormalize: bool = True,
    ) -> None:
        self.criterion = criterion
        self.interpolation = interpolation
        self.selection = selection
        self.max_knots = max_knots
        self.renormalize = renormalize

    def _fit_one(
        self, x: np.ndarray, t: np.ndarray, w: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        if w is not None:
            keep = w > 0
            x, t, w = x[keep], t[keep], w[keep]
        cap = None if self.max_knots is None else int(self.max_knots)
        knots, W, P = _pool(x, t, w, cap)
        n = float(len(x)) if w is None else float(np.sum(w))  # a row of weight k counts k times
        vals = _enir_fit(knots, W, P, n, str(self.criterion), str(self.selection))
        return knots, vals

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        self.knots_, self.values_ = one_vs_rest(S, y, w, self._fit_one)

    def _transform(self, S: np.ndarray) -> np.ndarray:
        knots = [np.asarray(a, dtype=np.float64) for a in self.knots_]
        vals = [np.asarray(b, dtype=np.float64) for b in self.values_]
        how = str(self.interpolation)
        if (S.ndim == 1) != (len(knots) == 1):
            # fitted on (n, 2) columns and given P(y = 1), or the other way round
            if S.ndim == 1:
                return self._transform(np.stack([1.0 - S, S], axis=1))[:, 1]
            q = self._transform(np.ascontiguousarray(S[:, 1]))
            return np.stack([1.0 - q, q], axis=1)
        if S.ndim == 1:
            return _predict(S, knots[0], vals[0], how)
        Q = np.empty_like(S)
        for k in range(S.shape[1]):
            Q[:, k] = _predict(S[:, k], knots[k], vals[k], how)
        return _renormalize_rows(Q) if self.renormalize else Q
