"""Calibration upper bound of a proper calibration error (Gruber & Buettner (2022) §4).

For a proper score ``S`` with generalized entropy ``g_S(Q) = E_{Y~Q} S(Q, Y)``,
Gruber & Buettner (2022) (Gruber & Buettner 2022) defines the proper calibration error
``CE_S(f) = E[d_S(f(X), P_{Y|f(X)})]`` (Def. 4.2) and bounds it from above by

    U_S(f) = E[S(f(X), Y)] - inf_Q g_S(Q)    >=  CE_S(f)        (Theorem 4.3)

because ``E[S(f(X), Y)] = E[g_S(P_{Y|f(X)})] + CE_S(f)`` (Lemma 4.1 without the
sharpness split) and ``g_S >= inf g_S``. The gap ``U_S - CE_S = E[g_S(P_{Y|f})]
- inf g_S`` vanishes as the accuracy tends to 1 (Theorem 4.3, second part).
Unlike ``CE_S`` itself, ``U_S`` has an unbiased, minimum-variance estimator: the
sample mean of the score.

For both built-in scores the infimum of the entropy is 0 and is attained at
every vertex of the simplex, so ``U_S`` is simply the mean score:

* Brier (Example 4.4): ``g(Q) = E_{Y~Q} ||Q - e_Y||^2 = 1 - ||Q||^2 >= 0`` with
  ``g(e_k) = 0``; ``U = mean_i sum_k (p_ik - 1{y_i = k})^2`` (the multi-class
  Brier score, :func:`calipers.brier`). Its root is the RBS of Gruber & Buettner (2022).
* log score: ``g(Q) = E_{Y~Q}[-log Q_Y] = -sum_k Q_k log Q_k``, the Shannon
  entropy. Every term ``-q log q`` is >= 0 on [0, 1] (with ``0 log 0 = 0``), so
  ``g >= 0``, and ``g(e_k) = 0``; hence ``inf g = 0`` and ``U = NLL``
  (:func:`calipers.nll`). Its calibration error is ``E[KL(P_{Y|f} || f)]``.

Proposition 4.5: for an injective recalibration map ``h`` of the simplex,
``P(Y | h(f(X))) = P(Y | f(X))``, so the entropy term is unchanged and
``U_S(h o f) - U_S(f) = CE_S(h o f) - CE_S(f)``: the change of the (unknown)
calibration error is estimated without bias by the change of the mean score
(:func:`recalibration_improvement`).
"""

from __future__ import annotations

from typing import Any, Literal

from .._docstrings import fill_doc
from ..validation import CalibrationInputError, check_predictions
from .scores import brier, nll

__all__ = ["calibration_upper_bound", "rbs", "recalibration_improvement"]

Score = Literal["brier", "log"]


def _check_score(score: str) -> None:
    if score not in ("brier", "log"):
        raise CalibrationInputError(f"score must be 'brier' or 'log'; got {score!r}")


def _upper_bound(P: Any, score: str) -> Any:
    # inf_Q g_S(Q) = 0 for both scores (module docstring), so U_S = mean score
    if score == "brier":
        return brier(P, None, reduction="sum")
    return nll(P, None)


@fill_doc
def calibration_upper_bound(
    probs: Any,
    labels: Any,
    *,
    score: Score = "brier",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Calibration upper bound ``U_S(f) = E[S(f(X), Y)] - inf_Q g_S(Q)`` (Gruber & Buettner (2022) Thm. 4.3).

    Gruber & Buettner (2022) Theorem 4.3 and Example 4.4. For the Brier and the log score the
    generalized entropy ``g_S`` is non-negative and vanishes at the vertices of
    the simplex, so ``inf g_S = 0`` and the bound is the mean score:

    * ``"brier"``: ``g(Q) = 1 - ||Q||^2 >= 0``, ``g(e_k) = 0``; ``U`` is the
      multi-class Brier score ``mean_i sum_k (p_ik - 1{y_i = k})^2``
      (:func:`calipers.brier` with ``reduction="sum"``), an upper bound of
      ``CE_2^2 = E||E[Y | f(X)] - f(X)||^2``.
    * ``"log"``: ``g(Q) = -sum_k Q_k log Q_k`` (Shannon entropy, nats). Each
      term ``-q log q`` is >= 0 for ``q`` in [0, 1] and ``0 log 0 = 0``, so
      ``g >= 0`` with ``g(e_k) = 0``: ``inf g = 0``, attained at every vertex.
      ``U`` is the NLL (:func:`calipers.nll`, exact from logits when
      ``logits=True``), an upper bound of ``E[KL(P_{Y|f(X)} || f(X))]``.

    The gap ``U - CE = E[g_S(P_{Y|f(X)})]`` tends to 0 as the accuracy tends
    to 1 (Theorem 4.3, second part).

    Parameters
    ----------
    {probs}
        For 1-D binary input the binary scores are used: ``mean (p - y)^2``
        (half the two-column Brier sum, bounding the binary
        ``E[(P(Y=1 | p) - p)^2]``) and the binary NLL. Pass ``[1 - p, p]``
        columns for Gruber & Buettner's (2022) two-class sum.
    {labels}
    score : {"brier", "log"}, default "brier"
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float (``inf`` possible for the log score when a true-class probability
    is 0), or a 0-d tensor for PyTorch input.

    Examples
    --------
    >>> from calipers.metrics.upper_bound import calibration_upper_bound
    >>> P, y = [[0.8, 0.2], [0.4, 0.6]], [0, 0]
    >>> round(calibration_upper_bound(P, y), 6)              # (0.08 + 0.72) / 2
    0.4
    >>> round(calibration_upper_bound(P, y, score="log"), 6)  # -(log .8 + log .4) / 2
    0.569717
    """
    _check_score(score)
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    return _upper_bound(P, score)


@fill_doc
def rbs(
    probs: Any,
    labels: Any,
    *,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Root Brier score, ``sqrt(mean_i sum_k (p_ik - 1{y_i = k})^2)`` (Gruber & Buettner (2022) "RBS").

    The square root of the Brier calibration upper bound ``U_BS`` (Gruber & Buettner (2022)
    Theorem 4.3, Example 4.4 and §4 "root calibration upper bound"; as coded in
    its ``experiments.py``, docs/how-calipers-computes.md §0 item 11 and §4.7). It bounds the
    L2 calibration error ``CE_2 = sqrt(E||E[Y | f(X)] - f(X)||^2)`` from above,
    and is a consistent, asymptotically unbiased estimate of ``sqrt(U_BS)``.

    Parameters
    ----------
    {probs}
        For 1-D binary input the binary Brier score ``mean (p - y)^2`` is used
        (see :func:`calibration_upper_bound`); Gruber & Buettner (2022) sums
        over the two softmax columns, i.e. pass ``[1 - p, p]`` for its number.
    {labels}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float in [0, sqrt(2)] (a 0-d tensor for PyTorch input)

    Examples
    --------
    >>> from calipers.metrics.upper_bound import rbs
    >>> round(rbs([[0.8, 0.2], [0.4, 0.6]], [0, 0]), 6)   # sqrt(0.4)
    0.632456
    """
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    return _upper_bound(P, "brier") ** 0.5


@fill_doc
def recalibration_improvement(
    probs_before: Any,
    probs_after: Any,
    labels: Any,
    *,
    score: Score = "brier",
    root: bool = False,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Estimated change of the calibration error by a recalibration (Gruber & Buettner (2022) Prop. 4.5).

    Returns ``U_S(h o f) - U_S(f)`` (``after - before``; negative means the
    recalibration reduced the calibration error). By Gruber & Buettner (2022) Proposition 4.5,
    **if the recalibration map h is injective** (temperature scaling, ETS,
    DIAG, ...), ``P(Y | h(f(X))) = P(Y | f(X))``, the generalized-entropy term of
    the score is unchanged and

        U_S(h o f) - U_S(f) = CE_S(h o f) - CE_S(f),

    so the difference of mean scores is an unbiased estimate of the change of
    the proper calibration error itself. For a non-injective map (histogram
    binning, isotonic regression, mapping everything to one vector) the
    equality does not hold in general: the difference then also contains the
    loss of sharpness. Gruber & Buettner's (2022) improvement plots show the opposite sign,
    ``e(f) - e(h o f)``.

    Parameters
    ----------
    probs_before : array-like of shape (n, k) or (n,)
        Predictions of ``f`` (or logits with ``logits=True``).
    probs_after : array-like, same shape
        Predictions of ``h o f`` on the same rows.
    {labels}
    score : {"brier", "log"}, default "brier"
        Brier: change of ``CE_2^2``; log: change of ``E[KL(P_{Y|f} || f)]``.
    root : bool, default False
        Return the difference of the roots, ``sqrt(U(h o f)) - sqrt(U(f))``
        (for the Brier score: the RBS difference that Gruber & Buettner (2022) plots). The
        exact identity of Prop. 4.5 holds for the unrooted difference only.
    {sample_weight}
    logits : bool, default False
        Both prediction arrays hold logits.
    {validate}
    classes : array-like or fitted classifier, optional
        The class of each column of ``probs_before`` and ``probs_after``, in
        order (1-D probabilities: ``[negative, positive]``), or a fitted
        scikit-learn classifier (its ``classes_``); ``labels`` are then read as
        these classes (strings, any integers). Default: labels are column
        indices.

    Returns
    -------
    float (a 0-d tensor for PyTorch input)

    Examples
    --------
    >>> from calipers.metrics.upper_bound import recalibration_improvement
    >>> before, after = [[0.9, 0.1], [0.9, 0.1]], [[0.6, 0.4], [0.6, 0.4]]
    >>> round(recalibration_improvement(before, after, [0, 1]), 6)   # 0.52 - 0.82
    -0.3
    """
    _check_score(score)
    Pb = check_predictions(
        probs_before,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    Pa = check_predictions(
        probs_after,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    if tuple(Pb.probs.shape) != tuple(Pa.probs.shape):
        raise CalibrationInputError(
            f"probs_before and probs_after must have the same shape; got "
            f"{tuple(Pb.probs.shape)} and {tuple(Pa.probs.shape)}"
        )
    ub, ua = _upper_bound(Pb, score), _upper_bound(Pa, score)
    if root:
        return ua**0.5 - ub**0.5
    return ua - ub
