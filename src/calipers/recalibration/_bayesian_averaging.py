"""Model averaging shared by BBQ and ENIR (Naeini, Cooper & Hauskrecht 2015; Naeini & Cooper 2016).

Both methods fit a family of binary calibration maps, score every member
(BDeu marginal likelihood, BIC or AIC) and predict with the score-weighted
average of the members. This module holds the pieces they share: the range of
bin counts, the posterior weights of the members (all of them, or netcal's
"elbow" pruning), the log-likelihood of binned 0/1 targets and the one-vs-rest
driver.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: netcal's pruning threshold of the elbow rule (``AbstractCalibration._elbow(alpha=0.001)``).
ELBOW_ALPHA = 0.001


def bin_count_range(n: float, constant: float) -> range:
    """Bin counts ``B`` of BBQ's binnings for ``n`` calibration scores.

    From ``max(1, floor(n^(1/3) / C))`` to ``min(ceil(n / 5), ceil(C n^(1/3)))``
    (Naeini et al. 2015, with ``C = 10``; the rounding and the cap of five
    scores per bin on average are netcal 1.4's).
    """
    root = float(np.power(n, 1.0 / 3.0))
    lo = int(max(1, np.floor(root / constant)))
    hi = int(min(np.ceil(n / 5), np.ceil(root * constant)))
    return range(lo, max(lo, hi) + 1)


def log_likelihood(pos: np.ndarray, tot: np.ndarray, value: np.ndarray) -> float:
    """Bernoulli log-likelihood of ``pos`` positives among ``tot`` at probability ``value``.

    ``0 log 0 = 0``; a positive count at probability 0 (or a negative at 1)
    gives ``-inf``.
    """
    neg = tot - pos
    if np.any((pos > 0) & (value <= 0.0)) or np.any((neg > 0) & (value >= 1.0)):
        return -np.inf
    tiny = np.finfo(np.float64).tiny  # only where the count is 0: 0 * log(tiny) = 0
    return float(
        pos @ np.log(np.maximum(value, tiny)) + neg @ np.log(np.maximum(1.0 - value, tiny))
    )


def posterior_weights(log_evidence: np.ndarray, selection: str) -> np.ndarray:
    """Normalised model weights from each member's log evidence.

    ``selection="average"``: ``exp(e_m - max e) / sum``, Bayesian model
    averaging over every member (the papers). ``selection="elbow"``: netcal's
    pruning, which sorts the relative scores ``exp(e_m - max e)`` in decreasing
    order, keeps the leading run of equal scores, then keeps going while the
    drop to the next score divided by the scores' variance exceeds 0.001, and
    renormalises the kept scores. A member with evidence ``-inf`` gets weight 0.
    """
    e = np.asarray(log_evidence, dtype=np.float64)
    rel = np.exp(e - np.max(e))
    if selection == "elbow":
        var = np.var(rel)
        order = np.argsort(rel)[::-1]
        srt = rel[order]
        k = 0
        m = len(rel)
        while k < m - 1 and srt[k] == srt[k + 1]:
            k += 1
        with np.errstate(divide="ignore", invalid="ignore"):
            while k < m - 1 and (srt[k] - srt[k + 1]) / var > ELBOW_ALPHA:
                k += 1
        keep = np.zeros(m, dtype=bool)
        keep[order[: k + 1]] = True
        rel = np.where(keep, rel, 0.0)
    return rel / np.sum(rel)


def one_vs_rest(
    S: np.ndarray,
    y: np.ndarray,
    w: np.ndarray | None,
    fit_one: Callable[[np.ndarray, np.ndarray, np.ndarray | None], tuple[np.ndarray, np.ndarray]],
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``fit_one`` on P(y = 1) for ``(n,)`` scores, on every column against ``1{y = k}`` else."""
    cols = [S] if S.ndim == 1 else list(np.ascontiguousarray(S.T))
    targets = [y == 1] if S.ndim == 1 else [y == k for k in range(S.shape[1])]
    first, second = [], []
    for x, t in zip(cols, targets, strict=True):
        a, b = fit_one(x, t.astype(np.float64), w)
        first.append(a)
        second.append(b)
    return first, second
