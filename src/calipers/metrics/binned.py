"""Named binned calibration metrics: thin presets of :func:`calibration_error`.

Each function documents the paper, equation and convention it follows. The
table below is the map from a name in the literature to the pipeline parts.

==================================  =================  ==================================  ==============  ===========================
metric                              lens               estimator                           divergence      aggregate
==================================  =================  ==================================  ==============  ===========================
:func:`ece`                         auto               EqualWidth(15), ``(lo, hi]``        L1              weighted
:func:`mce`                         auto               EqualWidth(15)                      L1              max
:func:`rmsce`                       auto               EqualMass(15, nixon)                L2 (root)       weighted
:func:`bin_averaged_ece`            auto               EqualWidth(15)                      L1              mean
:func:`top_label_ece`               per predicted      EqualWidth(15)                      L1              weighted, weighted over
                                    class                                                                  predicted classes
:func:`sce`                         class-wise         Nixon's even bins, ``p > 0``        L1              weighted, mean over classes
:func:`ace`                         class-wise         EqualMass(15, nixon), ``p > 0``     L1              weighted, mean over classes
:func:`tace`                        class-wise         EqualMass(15, nixon), ``p > 0.01``  L1              weighted, mean over classes
:func:`classwise_ece`               class-wise         EqualWidth(15)                      L1              weighted, mean or sum
:func:`top_k_ece`                   top-k              KDTree(0.1)                         TVD             weighted
:func:`full_ece`                    canonical          KDTree(0.1)                         TVD             weighted
:func:`group_ece`                   grouping           KDTree(0.1)                         TVD             weighted
:func:`interval_calibration_error`  top-label/binary,  KDTree(0.1)                         inter-interval  weighted
                                    ``l <= s <= h``
:func:`tce_p`                       auto               EqualWidth(15)                      Lp (root)       weighted
:func:`cwce_p`                      class-wise         EqualWidth(15)                      Lp (root)       weighted, sum over classes
:func:`ce_p`                        canonical          KDTree(0.1)                         Lp (root)       weighted
==================================  =================  ==================================  ==============  ===========================

"auto" is the positive-class (binary) lens for 1-D input, P(y = 1) against y,
as scikit-learn, torchmetrics, relplot and netcal read binary predictions, and
the top-label lens (confidence against correctness, Guo et al. 2017) for
``(n, k)`` input, two columns included; ``lens="top_label"`` or
``lens="binary"`` chooses one explicitly.

Every metric accepts ``sample_weight``, ``logits=True``, ``validate=False`` and
``classes`` (labels given as class names, read against the columns of
``probs``; see :func:`calipers.validation.check_predictions`) and returns a
float; PyTorch input gives a detached 0-d ``torch.float64`` tensor on the
input's device (no gradient; see docs/pytorch.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import numpy as np

from .._docstrings import fill_doc
from ..estimators.binning import Binning, EqualMass, EqualWidth, KDTree, nixon_even_bins
from ..pipeline.divergences import TVD, InterInterval, Lp
from ..pipeline.lenses import grouping, top_k
from ..pipeline.selection import ScoreInterval, threshold
from ..validation import CalibrationInputError, check_predictions
from ._calibration_error import calibration_error

__all__ = [
    "ece",
    "mce",
    "rmsce",
    "bin_averaged_ece",
    "top_label_ece",
    "sce",
    "ace",
    "tace",
    "classwise_ece",
    "top_k_ece",
    "full_ece",
    "group_ece",
    "interval_calibration_error",
    "tce_p",
    "cwce_p",
    "ce_p",
]

_torch_doc = """
    Notes
    -----
    PyTorch input gives a 0-d ``torch.float64`` tensor on the input's device,
    detached from the autograd graph: bin membership is piecewise constant in
    the scores and the per-bin totals are summed in float64 NumPy, so no
    gradient reaches ``probs``. For a differentiable calibration term use
    :func:`calipers.smece` or a kernel estimator (docs/pytorch.md).

    Examples"""


_F = TypeVar("_F", bound=Callable[..., Any])


def _doc(f: _F) -> _F:
    """Fill the shared parameter text (:func:`calipers._docstrings.fill_doc`) and the torch note.

    Typed to return its argument's own type, so that type checkers see each
    metric's signature (a decorator returning ``Any`` would hide it).
    """
    doc = fill_doc(f).__doc__ or ""
    if "    Notes\n" not in doc and getattr(f, "__name__", "") != "interval_calibration_error":
        doc = doc.replace("\n    Examples", _torch_doc, 1)
    f.__doc__ = doc
    return f


@_doc
def ece(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    n_bins: int = 15,
    edge_rule: Literal["right", "left"] = "right",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Expected calibration error (Guo et al. 2017, eq. 5): top label, or P(y = 1) for 1-D input.

    ``ECE = sum_b (n_b / n) |acc_b - conf_b|`` over non-empty bins, with the
    confidence ``max_k p_k``, the accuracy ``1{argmax = y}`` (ties in the
    arg-max go to the lowest class), and ``n_bins`` equal-width bins. The
    default edge rule ``(lo, hi]`` is Guo et al.'s and the Popordanoska et al. 2024 / Gruber & Buettner 2022 code's
    (docs/how-calipers-computes.md §2); edges are exact in the input's dtype.

    Parameters
    ----------
    {probs}
        Binary 1-D input is scored with the positive-class lens by default (see
        ``lens``).
    {labels}
    n_bins : int, default 15
        Number of equal-width bins.
    edge_rule : {"right", "left"}, default "right"
        ``(lo, hi]`` or ``[lo, hi)``.
    {lens}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> import calipers as cp
    >>> conf = [0.6, 0.4, 0.8, 0.5, 1.0, 0.34]
    >>> P = [[c, (1 - c) / 2, (1 - c) / 2] for c in conf]   # class 0 is predicted
    >>> y = [0, 1, 0, 1, 0, 1]                             # correct = 1, 0, 1, 0, 1, 0
    >>> round(cp.ece(P, y, n_bins=5), 5), round(cp.ece(P, y, n_bins=5, edge_rule="left"), 5)
    (0.17333, 0.30667)
    """
    return calibration_error(
        probs,
        labels,
        **ece_pipeline(n_bins=n_bins, edge_rule=edge_rule, lens=lens),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def mce(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    n_bins: int = 15,
    edge_rule: Literal["right", "left"] = "right",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Maximum calibration error (Naeini et al. 2015; Guo et al. 2017 eq. 6).

    ``max_b |acc_b - conf_b|`` over the non-empty bins of :func:`ece`.

    Parameters
    ----------
    probs, labels, n_bins, edge_rule
        As in :func:`ece`.
    {lens}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[0.6, 0.4], [0.4, 0.6], [0.9, 0.1]]
    >>> round(cp.mce(P, [0, 0, 0], n_bins=5), 6)   # bins {.6, .6}: |.5 - .6|, {.9}: |1 - .9|
    0.1
    """
    return calibration_error(
        probs,
        labels,
        **mce_pipeline(n_bins=n_bins, edge_rule=edge_rule, lens=lens),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def rmsce(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    n_bins: int = 15,
    estimator: Binning | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Root-mean-square calibration error of the top label (Nixon et al. 2019).

    ``sqrt(sum_b (n_b / n) (acc_b - conf_b)^2)`` with equal-mass bins by the
    Nixon et al. (2019) code's rule (robustness_metrics ``rmsce``: adaptive, max-prob,
    L2; docs/how-calipers-computes.md §3.2) and the weights *not* squared (the ≥ Oct-2020
    semantics; older uncertainty-metrics releases squared them). The
    robustness_metrics registration uses ``n / 100`` bins; pass
    ``n_bins=len(y) // 100`` for that, or ``estimator=EqualWidth(15)`` for
    the equal-width RMSCE of torchmetrics (``norm="l2"``).

    Parameters
    ----------
    probs, labels
        As in :func:`ece`.
    n_bins : int, default 15
    estimator : Binning, optional
        Overrides the equal-mass bins.
    {lens}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[.6,.3,.1],[.4,.4,.2],[.8,.1,.1],[.2,.5,.3],[.98,.015,.005],[.34,.33,.33]]
    >>> round(cp.rmsce(P, [0, 1, 0, 2, 0, 1], n_bins=2), 6)   # docs/how-calipers-computes.md §3.4
    0.326769
    """
    return calibration_error(
        probs,
        labels,
        **rmsce_pipeline(n_bins=n_bins, estimator=estimator, lens=lens),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def bin_averaged_ece(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    n_bins: int = 15,
    edge_rule: Literal["right", "left"] = "right",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Unweighted mean of ``|acc_b - conf_b|`` over non-empty top-label bins.

    This is netcal's "Average Calibration Error" (Neumann et al. 2018), the
    quantity Chidambaram & Ge's (2024) tables print as "ACE" (docs/how-calipers-computes.md §7.3). It is
    **not** Nixon et al.'s adaptive calibration error (:func:`ace`); the name
    says what it is to avoid that confusion.

    Parameters
    ----------
    probs, labels, n_bins, edge_rule
        As in :func:`ece`.
    {lens}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[0.6, 0.4], [0.4, 0.6], [0.9, 0.1]]
    >>> round(cp.bin_averaged_ece(P, [0, 1, 1], n_bins=5), 6)   # (|1 - .6| + |0 - .9|) / 2
    0.65
    """
    return calibration_error(
        probs,
        labels,
        **bin_averaged_ece_pipeline(n_bins=n_bins, edge_rule=edge_rule, lens=lens),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def top_label_ece(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    estimator: Binning | None = None,
    class_aggregate: Literal["weighted", "mean"] = "weighted",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Top-label ECE of Gupta & Ramdas (2022): the ECE of each predicted class, averaged.

    Gupta & Ramdas (2022, "Top-label calibration and multiclass-to-binary
    reductions") call a predictor top-label calibrated when
    ``P(Y = c | C = c, max p = s) = s`` for every predicted class ``c``: the
    confidence must be right *within* the rows predicted as each class, not
    only on average over classes as in :func:`ece`. The estimate bins the
    confidences of the rows predicted as ``c`` (``n_bins`` equal-width bins,
    ``(lo, hi]``, as :func:`ece`), takes their binned ECE against
    ``1{y = c}``, and averages over the predicted classes:

    * ``class_aggregate="weighted"`` (default): weighted by the fraction of
      rows predicted as ``c``, ``sum_c (n_c / n) ECE_c`` — the estimator of
      Gupta & Ramdas's TL-ECE (their ``toplabel_ece``, which bins each class
      with 15 equal-mass bins: pass ``estimator=cp.EqualMass(15)``);
    * ``class_aggregate="mean"``: the plain mean over the predicted classes,
      as MAPIE's ``top_label_ece`` computes it (MAPIE's ``num_bins=B``
      with ``split_strategy="uniform"`` is ``n_bins=B - 1`` here).

    Classes never predicted do not enter. With one bin per class the
    weighted form is the plain top-label ECE with one bin; in general it is at
    least as large as :func:`ece` with the same bins (Jensen), because errors
    of opposite sign in different classes no longer cancel.

    Parameters
    ----------
    {probs}
        Binary input is read as ``[1 - p, p]``: the predicted class is 1 when
        ``p > 0.5``.
    {labels}
    n_bins : int, default 15
        Equal-width bins per predicted class.
    estimator : Binning, optional
        Overrides the equal-width bins (e.g. ``cp.EqualMass(15)``).
    class_aggregate : {"weighted", "mean"}, default "weighted"
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    Class 0 is predicted twice (confidences 0.7 and 0.8, both correct), class 1
    once (0.6, wrong). With one bin per class, ECE_0 = ``|1 - 0.75|`` = 0.25
    (under-confident) and ECE_1 = 0.6 (over-confident); the plain ECE lets
    the two cancel:

    >>> import calipers as cp
    >>> P = [[.7, .2, .1], [.3, .6, .1], [.8, .1, .1]]
    >>> y = [0, 0, 0]
    >>> round(cp.top_label_ece(P, y, n_bins=1), 6)                # (2/3) .25 + (1/3) .6
    0.366667
    >>> round(cp.top_label_ece(P, y, n_bins=1, class_aggregate="mean"), 6)
    0.425
    >>> round(cp.ece(P, y, n_bins=1), 6)                          # |2/3 - 0.7|
    0.033333
    """
    return calibration_error(
        probs,
        labels,
        **top_label_ece_pipeline(
            n_bins=n_bins, estimator=estimator, class_aggregate=class_aggregate
        ),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


def _one_slice_lens(lens: str) -> str:
    """Check a preset's ``lens`` argument (``"auto"``, ``"top_label"`` or ``"binary"``)."""
    if not isinstance(lens, str) or lens not in ("auto", "top_label", "binary"):
        raise CalibrationInputError(f"lens must be 'auto', 'top_label' or 'binary'; got {lens!r}")
    return lens


# ----------------------------------------------------------------------------- pipelines
#
# Each preset's pipeline parts, written once: the preset passes them to
# calibration_error, and CalibrationState.for_metric (through the metric registry,
# calipers.metrics.registry) configures a mergeable state with the same parts. A
# factory takes the preset's own parameters that choose the parts and returns the
# keyword arguments of calibration_error that the preset sets.


def ece_pipeline(
    *, n_bins: int = 15, edge_rule: Literal["right", "left"] = "right", lens: str = "auto"
) -> dict[str, Any]:
    """The pipeline parts of :func:`ece`."""
    return {
        "lens": _one_slice_lens(lens),
        "estimator": EqualWidth(n_bins, edge_rule),
        "divergence": "l1",
    }


def mce_pipeline(
    *, n_bins: int = 15, edge_rule: Literal["right", "left"] = "right", lens: str = "auto"
) -> dict[str, Any]:
    """The pipeline parts of :func:`mce`."""
    return {**ece_pipeline(n_bins=n_bins, edge_rule=edge_rule, lens=lens), "aggregate": "max"}


def bin_averaged_ece_pipeline(
    *, n_bins: int = 15, edge_rule: Literal["right", "left"] = "right", lens: str = "auto"
) -> dict[str, Any]:
    """The pipeline parts of :func:`bin_averaged_ece`."""
    return {**ece_pipeline(n_bins=n_bins, edge_rule=edge_rule, lens=lens), "aggregate": "mean"}


def rmsce_pipeline(
    *, n_bins: int = 15, estimator: Binning | None = None, lens: str = "auto"
) -> dict[str, Any]:
    """The pipeline parts of :func:`rmsce`."""
    est = EqualMass(n_bins, "nixon") if estimator is None else estimator
    return {"lens": _one_slice_lens(lens), "estimator": est, "divergence": "l2"}


def top_label_ece_pipeline(
    *,
    n_bins: int = 15,
    estimator: Binning | None = None,
    class_aggregate: Literal["weighted", "mean"] = "weighted",
) -> dict[str, Any]:
    """The pipeline parts of :func:`top_label_ece`."""
    if class_aggregate not in ("weighted", "mean"):
        raise CalibrationInputError(
            f"class_aggregate must be 'weighted' or 'mean'; got {class_aggregate!r}"
        )
    est = EqualWidth(n_bins) if estimator is None else estimator
    return {
        "lens": "top_label_per_class",
        "estimator": est,
        "divergence": "l1",
        "class_aggregate": class_aggregate,
    }


def _nixon_pipeline(estimator: Binning, thr: float) -> dict[str, Any]:
    return {
        "lens": "classwise",
        "selection": threshold(thr),
        "estimator": estimator,
        "divergence": "l1",
        "class_aggregate": "mean",
    }


def sce_pipeline(*, n_bins: int = 15, threshold: float = 0.0) -> dict[str, Any]:
    """The pipeline parts of :func:`sce`."""
    return _nixon_pipeline(nixon_even_bins(n_bins), threshold)


def ace_pipeline(*, n_bins: int = 15, threshold: float = 0.0) -> dict[str, Any]:
    """The pipeline parts of :func:`ace` (a ``threshold`` above 0 is TACE's selection)."""
    return _nixon_pipeline(EqualMass(n_bins, "nixon"), threshold)


def tace_pipeline(*, n_bins: int = 15, threshold: float = 0.01) -> dict[str, Any]:
    """The pipeline parts of :func:`tace`."""
    return _nixon_pipeline(EqualMass(n_bins, "nixon"), threshold)


def classwise_ece_pipeline(
    *,
    n_bins: int = 15,
    reduction: Literal["mean", "sum"] = "mean",
    edge_rule: Literal["right", "left"] = "right",
    estimator: Binning | None = None,
) -> dict[str, Any]:
    """The pipeline parts of :func:`classwise_ece`."""
    est = EqualWidth(n_bins, edge_rule) if estimator is None else estimator
    return {"lens": "classwise", "estimator": est, "divergence": "l1", "class_aggregate": reduction}


def top_k_ece_pipeline(
    *, k: int = 5, gamma: float = 0.1, estimator: Binning | None = None
) -> dict[str, Any]:
    """The pipeline parts of :func:`top_k_ece`."""
    est = KDTree(gamma) if estimator is None else estimator
    return {"lens": top_k(k), "estimator": est, "divergence": TVD()}


def full_ece_pipeline(*, gamma: float = 0.1, estimator: Binning | None = None) -> dict[str, Any]:
    """The pipeline parts of :func:`full_ece`."""
    est = KDTree(gamma) if estimator is None else estimator
    return {"lens": "canonical", "estimator": est, "divergence": TVD()}


def tce_p_pipeline(
    *,
    lens: str = "auto",
    p: float = 2.0,
    n_bins: int = 15,
    estimator: Binning | None = None,
    root: bool = True,
) -> dict[str, Any]:
    """The pipeline parts of :func:`tce_p`."""
    est = EqualWidth(n_bins) if estimator is None else estimator
    return {"lens": _one_slice_lens(lens), "estimator": est, "divergence": Lp(p, root=root)}


def cwce_p_pipeline(
    *, p: float = 2.0, n_bins: int = 15, estimator: Binning | None = None, root: bool = True
) -> dict[str, Any]:
    """The pipeline parts of :func:`cwce_p`."""
    est = EqualWidth(n_bins) if estimator is None else estimator
    return {
        "lens": "classwise",
        "estimator": est,
        "divergence": Lp(p, root=root),
        "class_aggregate": "sum",
    }


def ce_p_pipeline(
    *, p: float = 2.0, gamma: float = 0.1, estimator: Binning | None = None, root: bool = True
) -> dict[str, Any]:
    """The pipeline parts of :func:`ce_p`."""
    est = KDTree(gamma) if estimator is None else estimator
    return {"lens": "canonical", "estimator": est, "divergence": Lp(p, root=root)}


@_doc
def sce(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    threshold: float = 0.0,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Static calibration error (Nixon et al. 2019, §4), as the Nixon et al. (2019) code computes it.

    ``SCE = (1/K) sum_k sum_b (n_bk / N_k) |acc(b, k) - conf(b, k)|``: every
    class column is binned on its own with the code's equal-width bins
    (:func:`nixon_even_bins`), keeping entries ``p > threshold`` (strict: exact
    zeros are dropped even with the default 0, as in that code) and
    normalising by ``N_k``, the number of entries kept for class k. The paper's
    formula normalises by N; the two agree when nothing is dropped.

    Because the bins are that code's float64 edges, a float32 score exactly on
    an edge such as 3/5 can fall in the neighbouring bin compared with the same
    value in float64 (as in the reference code); use
    ``cp.calibration_error(..., lens="classwise", selection=cp.threshold(0),
    estimator=cp.EqualWidth(n_bins, "left"))`` for dtype-exact edges.

    Parameters
    ----------
    probs, labels
        As in :func:`ece`.
    n_bins : int, default 15
        The paper's tables use 15 (the code's default is 30).
    threshold : float, default 0.0
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[.6,.3,.1],[.4,.4,.2],[.8,.1,.1],[.2,.5,.3],[.98,.015,.005],[.34,.33,.33]]
    >>> round(cp.sce(P, [0, 1, 0, 2, 0, 1], n_bins=5), 6)   # docs/how-calipers-computes.md §3.4
    0.095556
    """
    return calibration_error(
        probs,
        labels,
        **sce_pipeline(n_bins=n_bins, threshold=threshold),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def ace(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Adaptive calibration error (Nixon et al. 2019, §4), as the Nixon et al. (2019) code computes it.

    Class-wise, equal-mass ("adaptive") ranges by the code's rule
    (:class:`~calipers.estimators.binning.EqualMass` ``rule="nixon"``), entries ``p > 0``
    kept, count-weighted within each class, mean over classes. The paper writes
    ``1/(KR) sum_k sum_r |acc(r, k) - conf(r, k)|`` (unweighted over ranges);
    that equals the code only when every range holds exactly ``N/R`` entries,
    and differs under ties or when ``R`` does not divide ``N``
    (docs/how-calipers-computes.md §3.1, §11.8).

    Parameters
    ----------
    probs, labels
        As in :func:`ece`.
    n_bins : int, default 15
        Number of ranges R (the paper's tables use 15; the code default is 30).
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[.6,.3,.1],[.4,.4,.2],[.8,.1,.1],[.2,.5,.3],[.98,.015,.005],[.34,.33,.33]]
    >>> round(cp.ace(P, [0, 1, 0, 2, 0, 1], n_bins=2), 6)   # docs/how-calipers-computes.md §3.4
    0.173333
    """
    return calibration_error(
        probs,
        labels,
        **ace_pipeline(n_bins=n_bins),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def tace(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    threshold: float = 0.01,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Thresholded adaptive calibration error (Nixon et al. 2019, §4).

    :func:`ace` computed only on entries ``p > threshold``; the paper gives no
    value, the code uses 0.01 (uncertainty-metrics; note robustness_metrics
    registers "tace" with the threshold ignored, i.e. equal to ACE —
    docs/how-calipers-computes.md §0.4).

    Parameters
    ----------
    probs, labels
        As in :func:`ece`.
    n_bins : int, default 15
    threshold : float, default 0.01
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[.6,.3,.1],[.4,.4,.2],[.8,.1,.1],[.2,.5,.3],[.98,.015,.005],[.34,.33,.33]]
    >>> round(cp.tace(P, [0, 1, 0, 2, 0, 1], n_bins=2), 6)   # docs/how-calipers-computes.md §3.4
    0.177167
    """
    return calibration_error(
        probs,
        labels,
        **tace_pipeline(n_bins=n_bins, threshold=threshold),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def classwise_ece(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    reduction: Literal["mean", "sum"] = "mean",
    edge_rule: Literal["right", "left"] = "right",
    estimator: Binning | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Class-wise ECE: binned ``E|p_k - P(Y = k | p_k)|`` for every class.

    ``reduction="mean"`` averages over classes (Nixon et al.'s SCE without
    the threshold; Kumar et al.'s marginal CE for p = 1); ``"sum"`` adds them,
    as Kull et al. (2019) do (docs/how-calipers-computes.md §4.2). Kull et al.'s published
    values also use their own bins, ``np.digitize(p, linspace(0, 1, 15)) - 1``
    (14 bins of width 1/14 plus {1.0}); pass
    ``estimator=FixedEdges(np.r_[np.linspace(0, 1, 15), 1.0], closed="left")``
    with ``reduction="sum"`` to reproduce them.

    Parameters
    ----------
    probs, labels, n_bins, edge_rule
        As in :func:`ece`.
    reduction : {"mean", "sum"}, default "mean"
    estimator : Binning, optional
        Overrides the equal-width bins.
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]
    >>> round(cp.classwise_ece(P, [0, 1, 1], n_bins=5), 6)   # each class (.2+.3+.6)/3
    0.366667
    >>> round(cp.classwise_ece(P, [0, 1, 1], n_bins=5, reduction="sum"), 6)
    0.733333
    """
    return calibration_error(
        probs,
        labels,
        **classwise_ece_pipeline(
            n_bins=n_bins, reduction=reduction, edge_rule=edge_rule, estimator=estimator
        ),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def top_k_ece(
    probs: Any,
    labels: Any,
    *,
    k: int = 5,
    gamma: float = 0.1,
    estimator: Binning | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Top-k ECE of Kirchenbauer, Oaks & Heim (2022) (eq. 4 lens, TVD, adaptive k-d tree bins).

    The lens keeps the ``k`` largest probabilities and a remainder column;
    the estimate bins these (k + 1)-vectors with :class:`~calipers.estimators.binning.KDTree`
    (``gamma`` = largest fraction of samples per bin; Kirchenbauer, Oaks & Heim (2022) App. B.4 uses
    0.1) and averages the TVD between bin-mean scores and bin-mean targets.

    Parameters
    ----------
    probs, labels
        As in :func:`ece`.
    k : int, default 5
    gamma : float, default 0.1
    estimator : Binning, optional
        Overrides ``KDTree(gamma)``.
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[.6,.3,.1],[.4,.4,.2],[.8,.1,.1],[.2,.5,.3],[.98,.015,.005],[.34,.33,.33]]
    >>> y = [0, 1, 0, 2, 0, 1]
    >>> cp.top_k_ece(P, y, k=1, estimator=cp.EqualWidth(5)) == cp.ece(P, y, n_bins=5)
    True
    """
    return calibration_error(
        probs,
        labels,
        **top_k_ece_pipeline(k=k, gamma=gamma, estimator=estimator),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def full_ece(
    probs: Any,
    labels: Any,
    *,
    gamma: float = 0.1,
    estimator: Binning | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Full (canonical) ECE of Kirchenbauer, Oaks & Heim (2022): whole probability vectors, k-d tree bins, TVD.

    Estimates ``E TVD(P(Y | g(X)), g(X))`` (Kirchenbauer, Oaks & Heim (2022) eq. 12-13) with the
    adaptive binning of App. B (:class:`~calipers.estimators.binning.KDTree`).

    Parameters
    ----------
    probs, labels
        As in :func:`ece`.
    gamma : float, default 0.1
    estimator : Binning, optional
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.1, 0.9]]
    >>> round(cp.full_ece(P, [0, 0, 1, 1], gamma=0.6), 6)   # two bins, |0.85 - 1|
    0.15
    """
    return calibration_error(
        probs,
        labels,
        **full_ece_pipeline(gamma=gamma, estimator=estimator),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def group_ece(
    probs: Any,
    labels: Any,
    groups: Sequence[Sequence[int]],
    *,
    gamma: float = 0.1,
    estimator: Binning | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """ECE of the grouping lens (Kirchenbauer, Oaks & Heim (2022) eq. 5-6): calibration of group probabilities.

    Probabilities and one-hot labels are summed within each group of classes
    (the groups must partition the classes), then binned with the k-d tree and
    compared with TVD. With every class in its own group it is :func:`full_ece`.

    Parameters
    ----------
    probs, labels
        As in :func:`ece`.
    groups : sequence of sequences of int
        A partition of ``0..k-1``.
    gamma : float, default 0.1
    estimator : Binning, optional
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[0.5, 0.4, 0.1], [0.1, 0.1, 0.8]]
    >>> round(cp.group_ece(P, [1, 2], [[0, 1], [2]], estimator=cp.EqualWidth(2)), 6)
    0.15
    """
    est = KDTree(gamma) if estimator is None else estimator
    return calibration_error(
        probs,
        labels,
        lens=grouping(groups),
        estimator=est,
        divergence=TVD(),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def interval_calibration_error(
    probs: Any,
    labels: Any,
    *,
    intervals: Sequence[tuple[float, float]] = ((0.0, 0.33), (0.33, 0.66), (0.66, 1.0)),
    lens: Literal["auto", "top_label", "binary"] = "auto",
    gamma: float = 0.1,
    estimator: Binning | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> np.ndarray:
    """Per-interval (Likert) calibration errors of Kirchenbauer, Oaks & Heim (2022) §4.3 and §5.3.

    For every category ``[l, h]``: keep the samples whose score lies in
    ``[l, h]`` (output selection, Kirchenbauer, Oaks & Heim (2022) §4.1), bin them, and average the
    inter-interval distance ``max(0, l - y_bar, y_bar - h)`` (eq. 7) of each
    bin, weighted by bin size over the samples in the interval. Error is
    incurred only where a bin's observed frequency leaves the category.

    Parameters
    ----------
    probs, labels
        As in :func:`ece`.
    intervals : sequence of (low, high), default low/medium/high of Kirchenbauer, Oaks & Heim (2022) §5.3
    {lens}
    gamma : float, default 0.1
        k-d tree bin fraction (Kirchenbauer, Oaks & Heim (2022) uses adaptive bins throughout).
    estimator : Binning, optional
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    ndarray of shape (len(intervals),)
        NaN for an interval that holds no sample. A NumPy float64 array also
        for PyTorch input (no gradient; see docs/pytorch.md).

    Examples
    --------
    >>> import numpy as np, calipers as cp
    >>> p = np.array([0.1, 0.2, 0.5, 0.55, 0.9, 0.95])
    >>> y = np.array([0, 1, 1, 1, 1, 1])
    >>> cp.interval_calibration_error(p, y, estimator=cp.EqualWidth(1)).round(4).tolist()
    [0.17, 0.34, 0.0]
    """
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    use = ("binary" if P.binary else "top_label") if lens == "auto" else lens
    est = KDTree(gamma) if estimator is None else estimator
    out = []
    for lo, hi in intervals:
        try:
            v = calibration_error(
                P,
                None,
                lens=use,
                selection=ScoreInterval(lo, hi),
                estimator=est,
                divergence=InterInterval(lo, hi),
            )
            out.append(float(v))
        except ValueError as exc:
            if "no samples" not in str(exc):
                raise
            out.append(float("nan"))
    return np.asarray(out)


@_doc
def tce_p(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    p: float = 2.0,
    n_bins: int = 15,
    estimator: Binning | None = None,
    root: bool = True,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Binned top-label Lp calibration error TCE_p (Gruber & Buettner (2022) Def. C.1).

    ``TCE_p = (E |f_C(X) - P(Y = C | f_C(X))|^p)^{1/p}`` with C the arg-max,
    estimated with ``n_bins`` equal-width bins (Gruber & Buettner's (2022) "100b TCE_2" is
    ``n_bins=100``). ``root=False`` returns the p-th power, the "squared space"
    value Gruber & Buettner's (2022) code reports (docs/how-calipers-computes.md §0.11). TCE_1 is the ECE.

    Parameters
    ----------
    probs, labels
        As in :func:`ece`.
    p : float, default 2
    n_bins : int, default 15
    estimator : Binning, optional
    root : bool, default True
    {lens}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[0.6, 0.4], [0.4, 0.6], [0.9, 0.1]]
    >>> round(cp.tce_p(P, [0, 1, 1], p=2, n_bins=5), 6)   # sqrt((2/3)(.4)^2 + (1/3)(.9)^2)
    0.613732
    """
    return calibration_error(
        probs,
        labels,
        **tce_p_pipeline(lens=lens, p=p, n_bins=n_bins, estimator=estimator, root=root),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def cwce_p(
    probs: Any,
    labels: Any,
    *,
    p: float = 2.0,
    n_bins: int = 15,
    estimator: Binning | None = None,
    root: bool = True,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Binned class-wise Lp calibration error CWCE_p (Gruber & Buettner (2022) Def. C.1).

    ``CWCE_p = (sum_k E |f_k(X) - P(Y = k | f_k(X))|^p)^{1/p}`` — a *sum* over
    classes, as in Gruber & Buettner (2022) (``sCWCE``; docs/how-calipers-computes.md §4.2), with ``n_bins``
    equal-width bins per class.

    Parameters
    ----------
    probs, labels
        As in :func:`ece`.
    p : float, default 2
    n_bins : int, default 15
    estimator : Binning, optional
    root : bool, default True
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]
    >>> round(cp.cwce_p(P, [0, 1, 1], p=1, n_bins=5), 6) == round(cp.classwise_ece(P, [0, 1, 1], n_bins=5, reduction="sum"), 6)
    True
    """
    return calibration_error(
        probs,
        labels,
        **cwce_p_pipeline(p=p, n_bins=n_bins, estimator=estimator, root=root),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )


@_doc
def ce_p(
    probs: Any,
    labels: Any,
    *,
    p: float = 2.0,
    gamma: float = 0.1,
    estimator: Binning | None = None,
    root: bool = True,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Binned canonical Lp calibration error CE_p (Gruber & Buettner (2022) §3, Def. of CE_p).

    ``CE_p = (E ||f(X) - P(Y | f(X))||_p^p)^{1/p}`` with whole probability
    vectors binned by the k-d tree of Kirchenbauer, Oaks & Heim (2022) (``gamma``).

    Parameters
    ----------
    probs, labels
        As in :func:`ece`.
    p : float, default 2
    gamma : float, default 0.1
    estimator : Binning, optional
    root : bool, default True
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Examples
    --------
    >>> import calipers as cp
    >>> P = [[0.9, 0.1], [0.8, 0.2], [0.2, 0.8], [0.1, 0.9]]
    >>> round(cp.ce_p(P, [0, 0, 1, 1], p=1, gamma=0.6), 6)   # ||(.85,.15) - (1,0)||_1
    0.3
    """
    return calibration_error(
        probs,
        labels,
        **ce_p_pipeline(p=p, gamma=gamma, estimator=estimator, root=root),
        sample_weight=sample_weight,
        logits=logits,
        validate=validate,
        classes=classes,
    )
