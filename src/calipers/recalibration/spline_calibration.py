"""Spline calibration: penalised logistic regression on a natural cubic spline (Lucena 2018).

Lucena (2018), "Spline-based probability calibration" (arXiv:1809.07751), the
method of ml-insights' ``SplineCalib``: the label is regressed on a natural
cubic spline of the score's log-odds ``x = log(p / (1 - p))`` by a penalised
logistic regression, ``P(y = 1) = sigmoid(N(x) beta)``, with the basis
``N_1 = 1``, ``N_2 = x``, ``N_{k+2} = d_k - d_{K-1}``,
``d_k(x) = ((x - xi_k)_+^3 - (x - xi_K)_+^3) / (xi_K - xi_k)`` of a natural cubic
spline with knots ``xi_1 < ... < xi_K`` (Hastie, Tibshirani & Friedman 2009,
eq. 5.4-5.5): a cubic between the knots, linear beyond the boundary knots.

The fit minimises ``sum_i v_i l_i(beta) / N + lambda * |beta|^2 / K``, ``l_i`` the
log loss of row ``i``, ``N`` the number of rows, ``v_i`` the row weights (1 for
the data) and ``K`` the number of basis functions (the objective of
``SplineCalib``, intercept included in the penalty), by Newton's method. As
``SplineCalib`` does by default:

* a *unity prior*: 135 synthetic rows on the diagonal ``y = p`` (19 points
  ``10^-8 .. 10^-2`` log-spaced, ``0.01 .. 0.99`` by 0.01, and their mirror
  images ``1 - p``; the 18 tail points on each side together weigh as much as
  one central point), of total weight ``unity_prior_weight`` = 20, which pulls
  the map towards the identity where data are scarce;
* probabilities are clipped to ``[eps, 1 - eps]`` before the log-odds, ``eps =
  max(min(1e-4, 2^(round(log2 m) - 1)), 1e-16)``, ``m`` the smallest distance
  of a score (prior included) from 0 or 1;
* ``lambda`` is chosen among 17 values ``10^-4 .. 10^4`` by the held-out log
  loss of stratified folds (``cv`` = 5; ``search="fast"``: the first fold only,
  ``"full"``: all folds), the losses rounded to 4 decimals, ties going to the
  larger ``lambda`` (more regularisation, what ``SplineCalib`` documents).
  The folds are ``SplineCalib``'s: the rows of each class shuffled by NumPy's
  legacy generator seeded with ``random_state`` and cut into ``cv`` runs of
  rounded equal length, assigned in order for class 0 and in reverse order
  for class 1; the prior rows always fit.

Differences from ``SplineCalib`` 0.0.13: the knots are the ``n_knots``
equally spaced quantiles of the distinct log-odds (``SplineCalib`` draws 30
distinct scores at random and adds 0.1, ..., 0.9); the final fit uses every
row (``SplineCalib`` refits on the training part of the last fold it
evaluated); the optimum is solved to a gradient of 1e-10 (``SplineCalib``
stops BFGS at 1e-4). With the same knots, rows and ``lambda``, the two fits
minimise the same function (tested against ``SplineCalib``).

Multiclass: one fit per class column against ``1{y = k}`` (one-vs-rest), rows
then divided by their sums, as ``SplineCalib`` does. Binary ``(n, 2)`` scores
are fitted on their second column.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..validation import CalibrationInputError
from ._schema import Array, ArrayList, Integer, OneOf, Real, Schema, Values
from .base import Recalibrator, register
from .histogram_binning import _renormalize_rows

__all__ = ["SplineCalibration"]

#: The penalties tried by default: 17 values 10^-4 .. 10^4, evenly spaced on a log scale.
DEFAULT_PENALTIES = np.logspace(-4, 4, 17)


def natural_cubic_basis(x: np.ndarray, knots: np.ndarray, derivative: bool = False) -> np.ndarray:
    """The natural cubic spline basis (or its derivative) at ``x``, shape ``(n, K)``.

    ``N_1 = 1``, ``N_2 = x``, ``N_{k+2} = d_k - d_{K-1}`` with
    ``d_k(x) = ((x - xi_k)_+^3 - (x - xi_K)_+^3) / (xi_K - xi_k)`` (Hastie et al.
    2009, eq. 5.4-5.5); ``knots`` increasing, at least 2 of them.
    """
    x = np.asarray(x, dtype=np.float64)
    knots = np.asarray(knots, dtype=np.float64)
    K = knots.shape[0]
    out = np.empty((x.shape[0], K))
    out[:, 0] = 0.0 if derivative else 1.0
    out[:, 1] = 1.0 if derivative else x
    if K > 2:
        last = knots[-1]
        tail = np.maximum(x - last, 0.0)
        tail = 3.0 * tail**2 if derivative else tail**3

        def d(k: int) -> np.ndarray:
            r = np.maximum(x - knots[k], 0.0)
            r = 3.0 * r**2 if derivative else r**3
            return (r - tail) / (last - knots[k])

        d_last = d(K - 2)
        for k in range(K - 2):
            out[:, k + 2] = d(k) - d_last
    return out


def _unity_prior(weight: float) -> tuple[np.ndarray, np.ndarray]:
    """The prior rows of ``SplineCalib``: points on the diagonal and their weights."""
    a1 = 10.0 ** np.linspace(-8, -2, 19)
    pts = np.unique(np.concatenate((a1, np.linspace(0.01, 0.99, 99), 1.0 - a1)))
    wv = np.concatenate((np.full(18, 1.0 / 18), np.ones(99), np.full(18, 1.0 / 18)))
    return pts, wv * (weight / wv.sum())


def _auto_eps(p: np.ndarray) -> float:
    """``SplineCalib``'s clipping of probabilities before the log-odds."""
    inner = p[(p > 0) & (p < 1)]
    if inner.size == 0:
        return 1e-4
    m = min(float(inner.min()), float((1.0 - inner).min()))
    return float(max(min(1e-4, 2.0 ** (np.round(np.log2(m)) - 1)), 1e-16))


def _logit(p: np.ndarray, eps: float) -> np.ndarray:
    q = np.clip(p, eps, 1.0 - eps)
    return np.log(q / (1.0 - q))


def _fold_numbers(y: np.ndarray, folds: int, random_state: int) -> np.ndarray:
    """``SplineCalib``'s stratified folds of 0/1 labels (see the module docstring)."""
    fn = np.full(y.shape[0], -1, dtype=np.int64)
    for val in (0, 1):
        idx = np.flatnonzero(y == val)
        np.random.RandomState(random_state).shuffle(idx)
        cut = np.round(len(idx) / folds * np.arange(folds + 1)).astype(np.int64)
        for i in range(folds):
            fn[idx[cut[i] : cut[i + 1]]] = i if val == 0 else folds - 1 - i
    return fn


def _penalized_logistic(
    X: np.ndarray,
    t: np.ndarray,
    v: np.ndarray,
    lam: float,
    beta: np.ndarray,
    tol: float = 1e-10,
    max_iter: int = 100,
) -> np.ndarray:
    """Newton's method on ``sum v_i l_i / N + lam |beta|^2 / K`` (strictly convex for lam > 0).

    The Hessian is kept while each step shrinks the gradient at least fourfold, with a
    backtracking line search; the stopping rule (largest gradient entry below ``tol``) is
    the same as with a fresh Hessian at every step.
    """
    from scipy.special import expit

    N, K = X.shape
    ridge = 2.0 * lam / K

    def value(b: np.ndarray) -> float:
        s = X @ b
        return float(v @ (np.logaddexp(0.0, s) - t * s)) / N + lam * float(b @ b) / K

    f = value(beta)
    H: np.ndarray | None = None
    last = np.inf
    for _ in range(max_iter):
        s = X @ beta
        q = expit(s)
        g = X.T @ (v * (q - t)) / N + ridge * beta
        gn = float(np.max(np.abs(g)))
        if gn < tol:
            break
        if H is None or gn > 0.25 * last:
            # the Hessian (n K^2, the cost of a step) is refreshed only where the previous
            # one no longer gives fast progress; any positive definite H gives a descent step
            H = (X.T * (v * q * (1.0 - q))) @ X / N
            H[np.diag_indices(K)] += ridge
        last = gn
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:  # pragma: no cover - H is positive definite for lam > 0
            step = np.linalg.lstsq(H, g, rcond=None)[0]
        a = 1.0
        while True:
            new = beta - a * step
            fn = value(new)
            if fn <= f + 1e-15 * abs(f) or a < 1e-10:
                break
            a *= 0.5
        if fn >= f and a < 1e-10:
            break
        beta, f = new, fn
    return beta


def _n_maps(v: Values) -> list[int]:
    k = v["n_classes_"]
    return [1] if k == 2 else [k]


@register
class SplineCalibration(Recalibrator):
    """Spline calibration (Lucena 2018): a penalised logistic regression on a natural cubic spline.

    See the module docstring for the basis, the objective, the unity prior and
    the cross-validated choice of the penalty, and how they compare with
    ml-insights' ``SplineCalib``.

    Natural input: probabilities (logits are turned into probabilities with a
    softmax / sigmoid). Not accuracy-preserving (the per-class maps differ and
    need not be monotone) and not injective.

    Parameters
    ----------
    n_knots : int, default 30
        Number of knots: equally spaced quantiles (levels ``0, 1/(n_knots-1),
        ..., 1``) of the distinct transformed calibration scores, or all of
        them when there are fewer. At least 3 distinct scores are needed.
    penalty : float, optional
        A fixed ``lambda`` > 0 (no cross-validation). Default: chosen among
        ``10^-4 .. 10^4`` (17 values) by cross-validated log loss.
    cv : int, default 5
        Number of stratified folds for the choice of ``lambda``.
    search : {"fast", "full"}, default "fast"
        Score each ``lambda`` on the first fold only (``SplineCalib``'s default)
        or on all folds.
    unity_prior_weight : float, default 20.0
        Total weight of the synthetic rows on the diagonal (0: no prior).
    scale : {"logit", "probability"}, default "logit"
        The spline's variable: the log-odds of the score, or the probability.
    random_state : int, default 42
        Seed of the fold assignment (``SplineCalib``'s default).

    Attributes
    ----------
    knots_ : list of numpy.ndarray
        The knots of each map (on the spline's scale), one map per class (one
        for binary scores).
    coef_ : list of numpy.ndarray
        The basis coefficients ``beta`` of each map.
    penalty_ : numpy.ndarray
        The ``lambda`` of each map.
    eps_ : numpy.ndarray
        The clipping of each map's probabilities before the log-odds.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.recalibration.spline_calibration import SplineCalibration
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.01, 0.99, 4000)
    >>> y = (rng.random(4000) < p**2).astype(int)        # true P(y = 1 | p) = p^2
    >>> sc = SplineCalibration().fit(p, y)
    >>> t = np.array([0.2, 0.5, 0.9])
    >>> bool(np.max(np.abs(sc.predict_proba(t) - t**2)) < 0.03)
    True
    """

    input = "probs"
    _accuracy_preserving = False
    _injective = False
    schema = Schema(
        params={
            "n_knots": Integer(lo=3),
            "penalty": Real(lo=0, lo_open=True, none_ok=True),
            "cv": Integer(lo=2),
            "search": OneOf(("fast", "full")),
            "unity_prior_weight": Real(lo=0),
            "scale": OneOf(("logit", "probability")),
            "random_state": Integer(lo=0, hi=2**32 - 1),
        },
        state={
            "knots_": ArrayList(Array((None,), order="increasing"), _n_maps),
            "coef_": ArrayList(Array((None,)), lambda v: [len(v["knots_"])], like="knots_"),
            "penalty_": Array(lambda v: [(len(v["knots_"]),)], lo=0.0, lo_open=True),
            "eps_": Array(lambda v: [(len(v["knots_"]),)], lo=0.0, hi=0.5, lo_open=True),
        },
    )

    def __init__(
        self,
        n_knots: int = 30,
        penalty: float | None = None,
        cv: int = 5,
        search: Literal["fast", "full"] = "fast",
        unity_prior_weight: float = 20.0,
        scale: Literal["logit", "probability"] = "logit",
        random_state: int = 42,
    ) -> None:
        self.n_knots = n_knots
        self.penalty = penalty
        self.cv = cv
        self.search = search
        self.unity_prior_weight = unity_prior_weight
        self.scale = scale
        self.random_state = random_state

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        if w is not None:
            raise CalibrationInputError(
                "SplineCalibration does not take sample_weight: its cross-validation folds "
                "and knots are defined on rows (repeat the rows instead)"
            )
        if S.ndim == 2 and S.shape[1] == 2:
            cols, targets = [S[:, 1]], [y == 1]
        elif S.ndim == 1:
            cols, targets = [S], [y == 1]
        else:
            cols = list(np.ascontiguousarray(S.T))
            targets = [y == k for k in range(S.shape[1])]
        from threadpoolctl import threadpool_limits

        knots, coefs, lams, epss = [], [], [], []
        for k, (p, t) in enumerate(zip(cols, targets, strict=True)):
            # products of K ~ 30 columns: one BLAS thread is as fast, and spares a loaded machine
            with threadpool_limits(limits=1, user_api="blas"):
                kn, b, lam, eps = self._fit_one(p, t.astype(np.float64), k, len(cols))
            knots.append(kn)
            coefs.append(b)
            lams.append(lam)
            epss.append(eps)
        self.knots_, self.coef_ = knots, coefs
        self.penalty_ = np.array(lams)
        self.eps_ = np.array(epss)

    def _fit_one(
        self, p: np.ndarray, t: np.ndarray, k: int, n_maps: int
    ) -> tuple[np.ndarray, np.ndarray, float, float]:
        where = "" if n_maps == 1 else f" (class {k})"
        if np.unique(p).size < 3:
            raise CalibrationInputError(
                f"SplineCalibration needs at least 3 distinct scores{where}; got "
                f"{np.unique(p).size}"
            )
        pw = float(self.unity_prior_weight)
        if pw > 0:
            prior, v_prior = _unity_prior(pw)
        else:
            prior, v_prior = np.empty(0), np.empty(0)
        logit = self.scale == "logit"
        eps = _auto_eps(np.concatenate((p, prior))) if logit else 1e-16
        x = _logit(p, eps) if logit else p
        xp = _logit(prior, eps) if logit else prior
        ux = np.unique(x)
        if ux.size <= self.n_knots:
            knots = ux
        else:
            knots = np.unique(np.quantile(ux, np.linspace(0.0, 1.0, int(self.n_knots))))
        X = natural_cubic_basis(np.concatenate((x, xp)), knots)
        tt = np.concatenate((t, prior))
        v = np.concatenate((np.ones_like(t), v_prior))
        n = t.shape[0]
        if self.penalty is not None:
            lam = float(self.penalty)
        else:
            lam = self._choose_penalty(X, tt, v, n, where)
        beta = _penalized_logistic(X, tt, v, lam, np.zeros(X.shape[1]))
        return knots, beta, lam, eps

    def _choose_penalty(
        self, X: np.ndarray, t: np.ndarray, v: np.ndarray, n: int, where: str
    ) -> float:
        folds = int(self.cv)
        fn = np.concatenate(
            (_fold_numbers(t[:n], folds, int(self.random_state)), np.full(len(t) - n, -1))
        )
        scored = range(1) if self.search == "fast" else range(folds)
        if any(not np.any(fn == f) for f in scored) or any(
            not np.any((fn != f)[:n]) for f in scored
        ):
            raise CalibrationInputError(
                f"SplineCalibration: {n} calibration rows{where} are too few for {folds}-fold "
                "cross-validation of the penalty; pass penalty= or more rows"
            )
        lams = DEFAULT_PENALTIES[::-1]  # largest first: each fit starts from the previous one
        losses = np.zeros(len(lams))
        parts = [(X[fn != f], t[fn != f], v[fn != f], X[fn == f], t[fn == f]) for f in scored]
        count = sum(int(te.shape[0]) for *_, te in parts)
        starts = [np.zeros(X.shape[1]) for _ in scored]
        for i, lam in enumerate(lams):
            total = 0.0
            for j, (Xtr, ttr, vtr, Xte, tte) in enumerate(parts):
                starts[j] = _penalized_logistic(Xtr, ttr, vtr, float(lam), starts[j])
                s = Xte @ starts[j]
                total += float(np.sum(np.logaddexp(0.0, s) - tte * s))
            losses[i] = total / count
        rounded = np.round(losses, 4)
        best = int(np.flatnonzero(rounded == rounded.min())[0])  # the largest lambda among ties
        return float(lams[best])

    def _map(self, p: np.ndarray, j: int) -> np.ndarray:
        from scipy.special import expit

        eps = float(self.eps_[j])
        x = _logit(p, eps) if self.scale == "logit" else p
        kn = np.asarray(self.knots_[j], dtype=np.float64)
        return expit(natural_cubic_basis(x, kn) @ np.asarray(self.coef_[j], dtype=np.float64))

    def _transform(self, S: np.ndarray) -> np.ndarray:
        one = len(self.knots_) == 1
        if S.ndim == 1:
            if not one:
                raise CalibrationInputError(  # pragma: no cover - the reading refuses it
                    "SplineCalibration was fitted on more than two classes"
                )
            return self._map(S, 0)
        if one:
            q = self._map(np.ascontiguousarray(S[:, 1]), 0)
            return np.stack([1.0 - q, q], axis=1)
        Q = np.empty_like(S)
        for k in range(S.shape[1]):
            Q[:, k] = self._map(np.ascontiguousarray(S[:, k]), k)
        return _renormalize_rows(Q)
