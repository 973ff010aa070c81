"""Debiased binned calibration errors (Kumar, Liang & Ma 2019, "Verified uncertainty calibration").

The plug-in binned estimate ``sum_b (n_b / n) |p_b - y_b|^p`` (``p_b``, ``y_b``
the mean score and mean target of bin b) is biased upwards: even a perfectly
calibrated model gets ``E |p_b - y_b|^2 = Var(y_b) > 0``. Kumar et al. (2019,
§5 and their ``verified_calibration`` code; docs/how-calipers-computes.md §4.1) correct it in
two ways:

* ``method="unbiased"`` (p = 2 only): subtract an unbiased estimate of the
  variance of the bin's label mean,

      D = sum_b (n_b / n) [ (p_b - y_b)^2 - y_b (1 - y_b) / (n_b - 1) ],

  bins with ``n_b < 2`` contributing 0. Conditionally on the scores, when the
  labels of bin b are i.i.d. Bernoulli(mu_b), ``E D = sum_b (n_b / n)(p_b -
  mu_b)^2`` exactly. ``D`` can be negative; the L2 error is ``sqrt(max(D, 0))``
  (``unbiased_l2_ce``).
* ``method="normal"`` (any p): the bias of the plug-in estimate ``c`` is
  estimated by resampling each bin's label mean from its normal approximation,
  ``y*_b ~ N(y_b, y_b (1 - y_b) / n_b)``, and the estimate is
  ``2 c - mean(c*)`` (``normal_debiased_ce``; a parametric-bootstrap bias
  correction).

Bins come from the calipers pipeline (:func:`calipers.binned_statistics`): by
default 15 equal-mass bins with Kumar's rule (``EqualMass(15, rule="kumar")``:
``array_split`` parts, mid-point edges, ``(lo, hi]``), the default of
``lower_bound_scaling_ce``.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .._backend import wrap_scalar
from .._docstrings import fill_doc
from ..estimators.binning import Binning, BinStatistics, EqualMass
from ..pipeline.lenses import Lens
from ..validation import CalibrationInputError, check_predictions, check_size
from ._calibration_error import binned_statistics

__all__ = ["debiased_calibration_error"]


def _unbiased_square(st: BinStatistics, total: float) -> float:
    """``sum_b (W_b / W)[(p_b - y_b)^2 - y_b(1 - y_b)/(W_b - 1)]`` over bins with W_b >= 2."""
    W = st.weight
    ok = W >= 2
    if not ok.any():
        return 0.0
    Wb = W[ok]
    pb = st.sum_score[ok] / Wb
    yb = st.sum_target[ok] / Wb
    term = (pb - yb) ** 2 - yb * (1 - yb) / (Wb - 1)
    return float(np.sum(Wb / total * term))


def _normal_debiased(
    st: BinStatistics,
    total: float,
    p: float,
    root: bool,
    n_resamples: int,
    rng: np.random.Generator,
    name: str,
) -> float:
    """``2 c - mean_r c*_r`` with label means resampled from their normal approximation."""
    W = st.weight
    ne = W > 0
    small = ne & (W < 2)
    if small.any():
        j = int(np.flatnonzero(small)[0])
        raise CalibrationInputError(
            f"method='normal' needs at least 2 samples in every non-empty bin; bin {j} of "
            f"slice {name!r} has weight {W[j]:g}. Use fewer bins or method='unbiased'"
        )
    Wb = W[ne]
    f = Wb / total
    pb = st.sum_score[ne] / Wb
    yb = st.sum_target[ne] / Wb
    sd = np.sqrt(np.maximum(yb * (1 - yb), 0.0) / Wb)
    plugin = float(np.sum(f * np.abs(pb - yb) ** p))
    ystar = yb + sd * rng.standard_normal((n_resamples, yb.shape[0]))
    resampled = (np.abs(ystar - pb) ** p) @ f
    if root:
        return 2 * plugin ** (1 / p) - float(np.mean(resampled ** (1 / p)))
    return 2 * plugin - float(np.mean(resampled))


@fill_doc
def debiased_calibration_error(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "classwise", "binary"] | Lens = "auto",
    estimator: Binning | None = None,
    p: float = 2,
    method: Literal["unbiased", "normal"] = "unbiased",
    root: bool = True,
    class_aggregate: Literal["mean", "sum"] = "mean",
    n_resamples: int = 1000,
    seed: int | np.random.Generator | None = 0,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Debiased binned Lp calibration error of Kumar, Liang & Ma (2019).

    Implements the debiased estimators of "Verified uncertainty calibration"
    (NeurIPS 2019, §5; ``verified_calibration`` ``unbiased_l2_ce`` and
    ``normal_debiased_ce``, docs/how-calipers-computes.md §4.1), on bins from
    :func:`calipers.binned_statistics`. With ``b`` running over bins, ``n_b``
    their sizes, ``p_b``/``y_b`` mean score/target:

    * ``"unbiased"`` (``p = 2``): ``D = sum_b (n_b/n)[(p_b - y_b)^2 -
      y_b(1 - y_b)/(n_b - 1)]``, bins with ``n_b < 2`` contributing 0;
      ``root=True`` returns ``sqrt(max(D, 0))`` (Kumar's ``unbiased_l2_ce``),
      ``root=False`` returns ``D`` itself, unbiased for the binned ``CE_2^2``
      and possibly negative (Gruber & Buettner's (2022) "squared space", ``dEMsTCE`` before
      its ``max(., 0)``).
    * ``"normal"`` (any ``p >= 1``): with ``c = (sum_b (n_b/n)|p_b - y_b|^p)^(1/p)``
      and ``c*_r`` the same with ``y_b`` replaced by draws of
      ``N(y_b, y_b(1 - y_b)/n_b)``, ``r = 1..n_resamples``, returns
      ``2 c - mean_r c*_r`` (Kumar's ``normal_debiased_ce``, not clipped: it
      can be negative). ``root=False`` applies the same correction to the
      p-th powers, ``2 c^p - mean_r (c*_r)^p``. Every non-empty bin must hold
      at least 2 samples.

    Parameters
    ----------
    {probs}
    {labels}
    lens : {"auto", "top_label", "classwise", "binary"}, default "auto"
        ``"auto"``: ``"binary"`` for 1-D input, ``"top_label"`` for ``(n, k)``
        input. ``"top_label"``: confidence vs correctness (Kumar's ``mode='top-label'``);
        ``"classwise"``: every class column vs its indicator (Kumar's
        ``mode='marginal'``); ``"binary"``: P(y = 1) vs y, what Kumar's code
        computes for 1-D input. Any calipers lens with one score per sample
        also works (e.g. ``cp.single_class(c)``); with several slices the
        class aggregation below applies.
    estimator : Binning, default ``EqualMass(15, rule="kumar")``
        Any calipers binning of one score per sample (``EqualWidth(15)`` gives
        Kumar's ``get_equal_prob_bins``, the ``(lo, hi]`` rule).
    p : float, default 2
        Order of the Lp error; ``method="unbiased"`` needs ``p = 2``.
    method : {"unbiased", "normal"}, default "unbiased"
    root : bool, default True
        Return the Lp error (root space) rather than its p-th power.
    class_aggregate : {"mean", "sum"}, default "mean"
        For ``lens="classwise"``: ``"mean"`` is Kumar's marginal rule
        ``(mean_k CE_k^p)^(1/p)``; ``"sum"`` is ``(sum_k CE_k^p)^(1/p)``, the
        convention of Gruber & Buettner (2022) (``sCWCE``, Def. C.1: no 1/K) and Kull et al.
        2019 (docs/how-calipers-computes.md §0 item 5, §4.2). With ``root=True`` each class's
        estimate is clipped at 0 before the power, as ``unbiased_l2_ce`` does
        (Kumar's code raises a negative ``normal`` estimate to the p-th power
        unclipped instead); with ``root=False`` the unclipped ``D_k`` (or
        their power-space ``normal`` analogues) are averaged/summed, which
        keeps the "unbiased" estimate unbiased.
    n_resamples : int, default 1000
        Gaussian resamples for ``method="normal"`` (Kumar's default).
    seed : int, Generator or None, default 0
        Seed of ``np.random.default_rng`` for ``method="normal"``; the value is
        reproducible for a given seed (Kumar's code draws from NumPy's global
        generator, so values agree only up to Monte-Carlo error).
    {sample_weight}
        ``n_b`` is then the bin's total weight ``W_b`` (and the Kumar
        equal-mass edges are taken in the weight-expanded sample). For
        importance (probability) weights the variance correction would need
        Kish's effective size ``W_b^2 / sum w^2`` instead; that is not done
        here, and weights that do not count samples (e.g. normalised to sum 1)
        make every bin "smaller than 2".
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float
        For PyTorch input a detached 0-d ``torch.float64`` tensor on the
        input's device (binned totals in NumPy; no gradient, see docs/pytorch.md).

    Raises
    ------
    CalibrationInputError
        Unknown lens/method, ``method="unbiased"`` with ``p != 2``, ``p < 1``,
        or a non-empty bin with fewer than 2 samples for ``method="normal"``.

    Examples
    --------
    The worked example of docs/how-calipers-computes.md §4.1 (two equal-mass bins, edge 0.75):
    the plug-in ``CE_2^2`` is 0.0172656, the debiased value is negative and the
    L2 error is 0.

    >>> import numpy as np
    >>> import calipers as cp
    >>> from calipers.metrics import debiased_calibration_error
    >>> conf = np.array([.55, .6, .65, .7, .8, .9, .9, .95])
    >>> correct = np.array([1, 0, 1, 0, 1, 1, 0, 1])
    >>> P, y = np.stack([conf, 1 - conf], axis=1), np.where(correct == 1, 0, 1)
    >>> em2 = cp.EqualMass(2, rule="kumar")
    >>> round(debiased_calibration_error(P, y, estimator=em2, root=False), 7)
    -0.055651
    >>> debiased_calibration_error(P, y, estimator=em2)
    0.0
    >>> v = debiased_calibration_error(P, y, estimator=em2, method="normal", n_resamples=20000)
    >>> round(v, 3)   # plug-in L2 0.131 minus its estimated bias (Monte Carlo, seed 0)
    0.024
    """
    if method not in ("unbiased", "normal"):
        raise CalibrationInputError(f"method must be 'unbiased' or 'normal'; got {method!r}")
    if isinstance(lens, str) and lens not in ("auto", "top_label", "classwise", "binary"):
        raise CalibrationInputError(
            f"lens must be 'auto', 'top_label', 'classwise' or 'binary'; got {lens!r}"
        )
    if class_aggregate not in ("mean", "sum"):
        raise CalibrationInputError(
            f"class_aggregate must be 'mean' or 'sum'; got {class_aggregate!r}"
        )
    try:
        pf = float(p)
    except (TypeError, ValueError):
        raise CalibrationInputError(f"p must be a number >= 1; got {p!r}") from None
    if not (pf >= 1 and np.isfinite(pf)):
        raise CalibrationInputError(f"p must be a finite number >= 1; got {p!r}")
    if method == "unbiased" and pf != 2:
        raise CalibrationInputError(
            f"method='unbiased' is the p = 2 estimator; got p={p!r} (use method='normal')"
        )
    check_size(n_resamples, "n_resamples", "MAX_RESAMPLES")  # checked even when unused
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    est = EqualMass(15, rule="kumar") if estimator is None else estimator
    slices = binned_statistics(P, None, lens=lens, estimator=est)
    rng = np.random.default_rng(seed)
    values = []
    for ss in slices:
        st = ss.stats
        if np.ndim(st.sum_score) != 1:
            raise CalibrationInputError(
                "debiased_calibration_error needs a lens with one score per sample"
            )
        if ss.total_weight <= 0:
            values.append(0.0)
            continue
        if method == "unbiased":
            d = _unbiased_square(st, ss.total_weight)
            values.append(d if not root else max(d, 0.0) ** 0.5)
        else:
            values.append(
                _normal_debiased(st, ss.total_weight, pf, root, int(n_resamples), rng, ss.name)
            )
    if len(values) == 1:
        return wrap_scalar(float(values[0]), P.probs)
    v = np.asarray(values, dtype=np.float64)
    if root:
        powered = np.maximum(v, 0.0) ** pf
        agg = powered.mean() if class_aggregate == "mean" else powered.sum()
        value = float(agg ** (1 / pf))
    else:
        value = float(v.mean() if class_aggregate == "mean" else v.sum())
    return wrap_scalar(value, P.probs)
