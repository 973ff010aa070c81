"""Mean replacement recalibration (MRR): a cautionary baseline, not a method to use.

Chidambaram & Ge (2024) §3 ("mean replacement recalibration") and Gruber & Buettner (2022) Prop. D.2
(``FlawedRecal``): the confidence of every prediction is replaced by the
accuracy ``a`` measured on the calibration split; the predicted class gets
``a`` and each of the other ``K - 1`` classes gets ``(1 - a) / (K - 1)``
(docs/how-calipers-computes.md §7.2). The prediction itself (the arg-max) is kept whenever
``a > 1/K``.

Why it is shipped: it drives every top-label calibration error (ECE, ACE,
SmoothECE, KS, MMCE, ...) to ``|a_test - a|``, i.e. to about zero, while
throwing away all sharpness — every row has the same confidence — so proper
scores (NLL, Brier) get much worse. The papers use it to show that a small
calibration error alone says nothing about the quality of a recalibration.
With test accuracy ``a_t`` the test scores have closed forms (Chidambaram & Ge (2024),
docs/how-calipers-computes.md §7.2)::

    NLL   = -a_t log a - (1 - a_t) log((1 - a) / (K - 1))
    Brier = a_t (1 - a)^2 K / (K - 1) + (1 - a_t) [a^2 + (1 - b)^2 + (K - 2) b^2],
            b = (1 - a) / (K - 1)
    ECE   = |a_t - a|

which reproduce the MRR rows of Chidambaram & Ge (2024) Tables 1-6.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._params import user_stacklevel
from ._schema import Real, Schema
from .base import Recalibrator, register

__all__ = ["MeanReplacement"]


@register
class MeanReplacement(Recalibrator):
    """Mean replacement recalibration (Chidambaram & Ge (2024) §3; Gruber & Buettner (2022) Prop. D.2 ``FlawedRecal``).

    **A cautionary baseline, not a recalibration method to use.** It makes
    ECE-type metrics (almost) zero while destroying sharpness: every output row
    has the same top probability, the calibration accuracy ``a``. calipers
    ships it so that evaluations can show that a metric (or a report) is not
    fooled by it — proper scores such as :func:`calipers.nll` and
    :func:`calipers.brier` expose it at once.

    Fit: ``a`` = (weighted) accuracy of the arg-max on the calibration split
    (ties resolve to the lowest class index; binary ``(n,)`` input predicts
    class 1 when ``p > 0.5``). Transform: the predicted class gets ``a`` and
    every other class ``(1 - a) / (K - 1)``; binary input returns ``a`` or
    ``1 - a`` as the probability of class 1.

    Natural input: probabilities (logits are turned into probabilities with a
    softmax / sigmoid; only their arg-max matters).

    ``accuracy_preserving`` depends on the fitted ``a``: the arg-max is kept
    exactly when ``a > 1/K`` (otherwise the predicted class no longer has the
    largest probability, and a tie goes to the lowest class index), so the
    property is ``accuracy_ > 1 / n_classes_`` after fitting and ``False``
    before. Not injective (all rows with the same arg-max map to one output).

    Attributes
    ----------
    accuracy_ : float
        The calibration accuracy ``a``.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> from calipers.recalibration.mean_replacement import MeanReplacement
    >>> p = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
    >>> y = np.array([0, 1, 1, 2])                 # 3 of 4 arg-maxes right: a = 0.75
    >>> mrr = MeanReplacement().fit(p, y)
    >>> mrr.accuracy_, mrr.accuracy_preserving
    (0.75, True)
    >>> mrr.predict_proba(np.array([[0.1, 0.3, 0.6]]))
    array([[0.125, 0.125, 0.75 ]])
    >>> round(cp.ece(mrr.predict_proba(p), y), 12)  # the calibration error vanishes ...
    0.0
    >>> round(cp.nll(p, y), 4), round(cp.nll(mrr.predict_proba(p), y), 4)  # ... the NLL does not
    (0.5737, 0.7356)
    """

    input = "probs"
    _accuracy_preserving = False
    _injective = False
    schema = Schema(state={"accuracy_": Real(lo=0.0, hi=1.0)})

    def __init__(self) -> None:
        pass

    @property
    def accuracy_preserving(self) -> bool:
        """True after fitting when ``accuracy_ > 1 / n_classes_`` (the arg-max is kept)."""
        a = getattr(self, "accuracy_", None)
        if a is None:
            return False
        return bool(a > 1.0 / self.n_classes_)

    def _fit(self, S: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        pred = (S > 0.5).astype(np.int64) if S.ndim == 1 else np.argmax(S, axis=1)
        correct = (pred == y).astype(np.float64)
        a = float(np.average(correct, weights=w))
        self.accuracy_ = a
        k = 2 if S.ndim == 1 else S.shape[1]
        if not a > 1.0 / k:
            warnings.warn(
                f"MeanReplacement: the calibration accuracy {a:.6g} is not above 1/K = {1 / k:.6g}, "
                "so the recalibrated arg-max differs from the model's prediction",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )

    def _transform(self, S: np.ndarray) -> np.ndarray:
        a = float(self.accuracy_)
        if S.ndim == 1:
            return np.where(S > 0.5, a, 1.0 - a)
        n, K = S.shape
        out = np.full((n, K), (1.0 - a) / (K - 1))
        out[np.arange(n), np.argmax(S, axis=1)] = a
        return out
