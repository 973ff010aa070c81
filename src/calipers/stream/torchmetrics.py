"""Metric objects for training loops: ``torchmetrics.Metric`` subclasses with O(bins) state.

Each class accumulates, batch by batch, the per-bin sufficient statistics of
:mod:`calipers.estimators.binning` (sample count, sum of confidences, sum of targets, in
float64 on the input's device) and :meth:`compute` returns what the calipers
function gives on all the data seen so far:

========================  ============================================================
class                     equals, on the concatenated batches
========================  ============================================================
:class:`ECE`              ``cp.ece`` (``norm="l1"``), ``cp.mce`` (``"max"``), and
                          ``cp.rmsce(..., estimator=EqualWidth(n_bins))`` (``"l2"``)
:class:`ClasswiseECE`     ``cp.classwise_ece``
:class:`BinnedProperCE`   ``cp.calibration_error(..., estimator=EqualWidth(n_bins),
                          divergence="kl")`` (log score) or ``"squared_l2"`` (Brier)
:class:`NLL`              ``cp.nll``
:class:`Brier`            ``cp.brier``
========================  ============================================================

The state is O(n_bins) (O(num_classes * n_bins) for the class-wise ECE),
whatever the number of samples, unlike torchmetrics' own calibration error,
which keeps every confidence. Every state is registered with
``dist_reduce_fx="sum"``, so distributed synchronisation (DDP, Lightning's
``self.log``) adds the per-process totals, and the result equals the
single-process value on all the data. Bins follow calipers' rule exactly
(:class:`calipers.estimators.binning.EqualWidth`: edges ``j / n_bins`` in the input's
dtype, ``(lo, hi]`` by default), computed on the input's device.

This module imports :mod:`torchmetrics` (and PyTorch); ``import calipers``
does not import it.

References: Guo et al. (2017), *On calibration of modern neural networks*
(ECE, MCE); Kull et al. (2019), *Beyond temperature scaling* (class-wise ECE);
Gneiting & Raftery (2007), *Strictly proper scoring rules* (log score);
Brier (1950), *Verification of forecasts expressed in terms of probability*.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torchmetrics import Metric

from ..estimators.binning import BinStatistics, EqualWidth, check_bins_for_samples
from ..metrics._calibration_error import SliceStatistics, error_from_statistics
from ..metrics.scores import brier as _brier
from ..metrics.scores import nll as _nll
from ..pipeline.divergences import get_divergence
from ..pipeline.lenses import binary, classwise, resolve_lens, top_label
from ..validation import CalibrationInputError, Predictions, check_predictions

__all__ = ["ECE", "ClasswiseECE", "BinnedProperCE", "NLL", "Brier"]

_NORMS = ("l1", "l2", "max")

_STREAMED_BINS = (
    "the state is a fixed set of equal-width bins (n_bins=, edge_rule=); other binnings "
    "(equal mass, ...) need all the data"
)
#: The functional's arguments that the metric objects do not take, and why.
_NOT_TAKEN = {
    "sample_weight": (
        "the state holds unweighted per-bin counts and sums; for weighted data call the "
        "function on all the data"
    ),
    "classes": (
        "target must hold column indices 0 .. k-1 (a tensor holds no class names); map "
        "other labels to their column first"
    ),
    "estimator": _STREAMED_BINS,
    "selection": "the objects score the whole batch; select the rows before update()",
    "divergence": "score='log' (KL) or 'brier' (squared difference) chooses it",
    "aggregate": "bins are aggregated by their weight ('weighted')",
    "class_aggregate": "the lens is one slice (top label or binary); see ClasswiseECE",
}


def _refuse(cls: str, functional: str, kwargs: dict[str, Any]) -> None:
    """A clear error for an argument of ``functional`` that ``cls`` does not take."""
    for key in kwargs:
        if key in _NOT_TAKEN:
            raise CalibrationInputError(
                f"{cls} does not take {key}= (calipers.{functional} does): {_NOT_TAKEN[key]}"
            )


def _bin_sums(
    binning: EqualWidth, scores: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-bin count, sum of scores and sum of targets (float64, on the scores' device)."""
    ids, n_bins = binning.assign(scores)
    ids = torch.as_tensor(ids, device=scores.device).reshape(-1)
    count = torch.bincount(ids, minlength=n_bins).to(torch.float64)
    s = torch.bincount(ids, weights=scores.detach().to(torch.float64), minlength=n_bins)
    t = torch.bincount(ids, weights=targets.detach().to(torch.float64), minlength=n_bins)
    return count, s, t


class _Binned(Metric):
    """Shared machinery of the binned metric objects (states: count, sum_score, sum_target)."""

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    count: torch.Tensor
    sum_score: torch.Tensor
    sum_target: torch.Tensor
    binning: EqualWidth
    logits: bool
    validate: bool

    def _init_states(self, shape: tuple[int, ...]) -> None:
        for name in ("count", "sum_score", "sum_target"):
            self.add_state(
                name, default=torch.zeros(shape, dtype=torch.float64), dist_reduce_fx="sum"
            )

    def _check(self, preds: Any, target: Any) -> Predictions | None:
        if not (isinstance(preds, torch.Tensor) and isinstance(target, torch.Tensor)):
            raise CalibrationInputError("preds and target must be torch tensors")
        if preds.ndim and preds.shape[0] == 0:
            return None  # an empty batch adds nothing
        return check_predictions(preds, target, logits=self.logits, validate=self.validate)

    def _error(
        self, divergence: str, aggregate: str, class_aggregate: str = "mean"
    ) -> torch.Tensor:
        """calipers' own end of the pipeline on the accumulated bins (0-d float64; NaN if empty).

        The states become :class:`~calipers.estimators.binning.BinStatistics` (one slice
        per leading row: one, or one per class) and go through
        :func:`calipers.metrics._calibration_error.error_from_statistics`, the function
        every calipers calibration error ends with; it is O(bins).
        """
        count = self.count.detach().cpu().numpy().reshape(-1, self.count.shape[-1])
        if count.sum() == 0:
            return torch.tensor(float("nan"), dtype=torch.float64, device=self.count.device)
        check_bins_for_samples(int(self.binning.n_bins), int(count[0].sum()))
        ssum = self.sum_score.detach().cpu().numpy().reshape(count.shape)
        tsum = self.sum_target.detach().cpu().numpy().reshape(count.shape)
        slices = [  # 0/1 targets: the sum of squared targets is the sum of targets
            SliceStatistics(str(i), BinStatistics(c, c, s, t, t), float(c.sum()))
            for i, (c, s, t) in enumerate(zip(count, ssum, tsum, strict=True))
        ]
        value = error_from_statistics(
            slices, get_divergence(divergence), aggregate, class_aggregate
        )
        return torch.tensor(value, dtype=torch.float64, device=self.count.device)


class ECE(_Binned):
    """Binned calibration error (ECE, MCE or RMSCE) with equal-width bins and O(n_bins) state.

    ``norm="l1"`` is the expected calibration error of Guo et al. (2017, eq. 5),
    ``sum_b (n_b / n) |acc_b - conf_b|`` (:func:`calipers.ece`); ``"max"`` the
    maximum calibration error (Guo et al. 2017, eq. 6; :func:`calipers.mce`);
    ``"l2"`` the root-mean-square error ``sqrt(sum_b (n_b / n) (acc_b -
    conf_b)^2)`` over the same equal-width bins (``cp.rmsce(...,
    estimator=EqualWidth(n_bins))``; calipers' ``rmsce`` defaults to
    equal-mass bins, which need all the data and are not streamed here).

    Parameters
    ----------
    n_bins : int, default 15
        Number of equal-width bins on [0, 1].
    lens : {"auto", "top_label", "binary"}, default "auto"
        ``"auto"``: 1-D ``preds`` (P(y = 1)) are scored against ``y`` (the
        positive-class lens), ``(n, k)`` ``preds`` by their top label
        (confidence against correctness). Fixed by the first batch: every
        batch must have the same form.
    norm : {"l1", "l2", "max"}, default "l1"
    edge_rule : {"right", "left"}, default "right"
        ``(lo, hi]`` (Guo et al.) or ``[lo, hi)`` bins; edges in the input's dtype.
    logits : bool, default False
        ``preds`` are logits (sigmoid for 1-D, softmax for ``(n, k)``).
    validate : bool, default True
        False skips calipers' value checks on every batch.
    **kwargs
        Passed to :class:`torchmetrics.Metric`.

    Examples
    --------
    >>> import torch
    >>> import calipers as cp
    >>> from calipers.stream.torchmetrics import ECE
    >>> p = torch.tensor([0.1, 0.4, 0.6, 0.8, 0.9, 0.35], dtype=torch.float64)
    >>> y = torch.tensor([0, 1, 1, 1, 0, 0])
    >>> m = ECE(n_bins=5)
    >>> m.update(p[:3], y[:3]); m.update(p[3:], y[3:])
    >>> bool(torch.isclose(m.compute(), cp.ece(p, y, n_bins=5), rtol=0, atol=1e-12))
    True
    >>> m.count.numel()          # the state does not grow with the data
    5
    """

    def __init__(
        self,
        n_bins: int = 15,
        lens: Literal["auto", "top_label", "binary"] = "auto",
        norm: Literal["l1", "l2", "max"] = "l1",
        edge_rule: Literal["right", "left"] = "right",
        logits: bool = False,
        validate: bool = True,
        **kwargs: Any,
    ) -> None:
        _refuse(type(self).__name__, "ece", kwargs)
        super().__init__(**kwargs)
        if norm not in _NORMS:
            raise CalibrationInputError(f"norm must be 'l1', 'l2' or 'max'; got {norm!r}")
        if not isinstance(lens, str) or lens not in ("auto", "top_label", "binary"):
            raise CalibrationInputError(
                f"lens must be 'auto', 'top_label' or 'binary'; got {lens!r}"
            )
        self.binning = EqualWidth(n_bins, edge_rule)
        self.lens = lens
        self.norm = norm
        self.logits = logits
        self.validate = validate
        self._init_states((int(n_bins),))

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        """Add a batch: ``preds`` of shape (n,) (P(y = 1)) or (n, k), ``target`` of shape (n,)."""
        P = self._check(preds, target)
        if P is None:
            return
        use = resolve_lens(self.lens, P)
        sl = next(binary(P) if use == "binary" else top_label(P))
        c, s, t = _bin_sums(self.binning, sl.scores, sl.targets)
        self.count += c
        self.sum_score += s
        self.sum_target += t

    def compute(self) -> torch.Tensor:
        """The error over all the batches (a 0-d float64 tensor; NaN before any data)."""
        if self.norm == "max":
            return self._error("l1", "max")
        return self._error(self.norm, "weighted")


class ClasswiseECE(_Binned):
    """Class-wise ECE (Kull et al. 2019) with equal-width bins and O(num_classes * n_bins) state.

    For every class c the binned ``E|p_c - P(Y = c | p_c)|`` (L1, weighted by
    bin counts), then the mean over classes (``reduction="mean"``) or their
    sum (``"sum"``, as Kull et al. 2019 print it); equals
    :func:`calipers.classwise_ece` on all the data.

    Parameters
    ----------
    num_classes : int, optional
        Number of classes ``k`` (``preds`` of shape (n, k); 2 for 1-D binary
        ``preds``). Default ``None``: read from the first batch, as
        :func:`calipers.classwise_ece` reads it from ``probs``; pass it for
        distributed runs (every process then starts with the same state shape).
    n_bins : int, default 15
    reduction : {"mean", "sum"}, default "mean"
    edge_rule : {"right", "left"}, default "right"
    logits : bool, default False
    validate : bool, default True
    **kwargs
        Passed to :class:`torchmetrics.Metric`.

    Examples
    --------
    >>> import torch
    >>> import calipers as cp
    >>> from calipers.stream.torchmetrics import ClasswiseECE
    >>> P = torch.tensor([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], dtype=torch.float64)
    >>> y = torch.tensor([0, 1, 1])
    >>> m = ClasswiseECE(num_classes=2, n_bins=5)
    >>> m.update(P[:1], y[:1]); m.update(P[1:], y[1:])
    >>> round(float(m.compute()), 6), round(float(cp.classwise_ece(P, y, n_bins=5)), 6)
    (0.366667, 0.366667)
    """

    def __init__(
        self,
        num_classes: int | None = None,
        n_bins: int = 15,
        reduction: Literal["mean", "sum"] = "mean",
        edge_rule: Literal["right", "left"] = "right",
        logits: bool = False,
        validate: bool = True,
        **kwargs: Any,
    ) -> None:
        _refuse(type(self).__name__, "classwise_ece", kwargs)
        super().__init__(**kwargs)
        if reduction not in ("mean", "sum"):
            raise CalibrationInputError(f"reduction must be 'mean' or 'sum'; got {reduction!r}")
        if num_classes is not None and (
            isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2
        ):
            raise CalibrationInputError(f"num_classes must be an integer >= 2; got {num_classes!r}")
        self.binning = EqualWidth(n_bins, edge_rule)
        self.num_classes = num_classes
        self.reduction = reduction
        self.logits = logits
        self.validate = validate
        # num_classes=None: no rows until the first batch says how many classes there are
        self._init_states((0 if num_classes is None else num_classes, int(n_bins)))

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        """Add a batch: ``preds`` of shape (n, num_classes) (or (n,) for two classes)."""
        P = self._check(preds, target)
        if P is None:
            return
        rows = int(self.count.shape[0])
        if rows == 0:  # num_classes=None and no batch yet (or since reset): the first one says
            for name in ("count", "sum_score", "sum_target"):
                shape = (P.n_classes, int(self.binning.n_bins))
                setattr(self, name, torch.zeros(shape, dtype=torch.float64, device=self.device))
        elif P.n_classes != rows:
            made = (
                f"num_classes={self.num_classes}"
                if self.num_classes is not None
                else f"{rows} classes read from its first batch"
            )
            raise CalibrationInputError(
                f"preds has {P.n_classes} classes; this metric was made with {made}"
            )
        for c, sl in enumerate(classwise(P)):
            cnt, s, t = _bin_sums(self.binning, sl.scores, sl.targets)
            self.count[c] += cnt
            self.sum_score[c] += s
            self.sum_target[c] += t

    def compute(self) -> torch.Tensor:
        """The class-wise ECE over all the batches (0-d float64 tensor; NaN before any data)."""
        return self._error("l1", "weighted", self.reduction)


class BinnedProperCE(ECE):
    """Binned proper calibration error (log score or Brier) with O(n_bins) state.

    ``sum_b (n_b / n) D(acc_b, conf_b)`` over equal-width bins, with ``D`` the
    Bregman divergence of a proper score (Gneiting & Raftery 2007): the binary
    KL divergence for the log score (``score="log"``, the binned CE_KL of
    Popordanoska et al. 2024, eq. 10) or the squared difference for the Brier
    score (``score="brier"``, binned CE_2^2, eq. 7). Equals
    ``cp.calibration_error(..., lens=lens, estimator=EqualWidth(n_bins,
    edge_rule), divergence="kl")`` (or ``"squared_l2"``) on all the data; the
    divergence is calipers' own, applied to the bin means.

    Parameters
    ----------
    score : {"log", "brier"}, default "log"
    n_bins, lens, edge_rule, logits, validate, **kwargs
        As in :class:`ECE`.

    Examples
    --------
    >>> import torch
    >>> import calipers as cp
    >>> from calipers.estimators.binning import EqualWidth
    >>> from calipers.stream.torchmetrics import BinnedProperCE
    >>> p = torch.tensor([0.1, 0.4, 0.6, 0.8, 0.9, 0.35], dtype=torch.float64)
    >>> y = torch.tensor([0, 1, 1, 1, 0, 0])
    >>> m = BinnedProperCE(score="brier", n_bins=5)
    >>> m.update(p[:2], y[:2]); m.update(p[2:], y[2:])
    >>> ref = cp.calibration_error(p, y, estimator=EqualWidth(5), divergence="squared_l2")
    >>> bool(torch.isclose(m.compute(), ref, rtol=0, atol=1e-12))
    True
    """

    def __init__(
        self,
        score: Literal["log", "brier"] = "log",
        n_bins: int = 15,
        lens: Literal["auto", "top_label", "binary"] = "auto",
        edge_rule: Literal["right", "left"] = "right",
        logits: bool = False,
        validate: bool = True,
        **kwargs: Any,
    ) -> None:
        _refuse(type(self).__name__, "calibration_error", kwargs)
        if score not in ("log", "brier"):
            raise CalibrationInputError(f"score must be 'log' or 'brier'; got {score!r}")
        super().__init__(
            n_bins=n_bins,
            lens=lens,
            edge_rule=edge_rule,
            logits=logits,
            validate=validate,
            **kwargs,
        )
        self.score = score

    def compute(self) -> torch.Tensor:
        """The binned proper calibration error over all the batches (0-d float64 tensor)."""
        return self._error("kl" if self.score == "log" else "squared_l2", "weighted")


class _Mean(Metric):
    """A sample mean of a per-row score, kept as (sum, count) in float64."""

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    total: torch.Tensor
    n: torch.Tensor
    logits: bool
    validate: bool

    def __init__(self, logits: bool = False, validate: bool = True, **kwargs: Any) -> None:
        _refuse(type(self).__name__, type(self).__name__.lower(), kwargs)
        super().__init__(**kwargs)
        self.logits = logits
        self.validate = validate
        self.add_state("total", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("n", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")

    def _batch_mean(self, preds: torch.Tensor, target: torch.Tensor) -> Any:
        raise NotImplementedError

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        """Add a batch: ``preds`` of shape (n,) (P(y = 1)) or (n, k), ``target`` of shape (n,)."""
        if not (isinstance(preds, torch.Tensor) and isinstance(target, torch.Tensor)):
            raise CalibrationInputError("preds and target must be torch tensors")
        n = int(preds.shape[0]) if preds.ndim else 0
        if n == 0:
            return
        mean = torch.as_tensor(self._batch_mean(preds, target)).detach().to(torch.float64)
        self.total += mean.to(self.total.device) * n
        self.n += n

    def compute(self) -> torch.Tensor:
        """The mean over all the batches (0-d float64 tensor; NaN before any data)."""
        return self.total / self.n


class NLL(_Mean):
    """Negative log-likelihood (the log score, Gneiting & Raftery 2007) with O(1) state.

    ``-mean_i log p_{i, y_i}`` in nats over all the batches; equals
    :func:`calipers.nll` on all the data (to rounding: each batch contributes
    its mean times its size). ``+inf`` when a true-class probability is 0.

    Parameters
    ----------
    clip : float, optional
        As in :func:`calipers.nll`: the true-class probability is clipped to
        ``[clip, 1 - clip]`` first (Kull et al. 2019 use 1e-15). Default: no
        clipping.
    logits : bool, default False
        ``preds`` are logits (then computed as ``logsumexp(z) - z_y``).
    validate : bool, default True
    **kwargs
        Passed to :class:`torchmetrics.Metric`.

    Examples
    --------
    >>> import torch
    >>> from calipers.stream.torchmetrics import NLL
    >>> m = NLL()
    >>> m.update(torch.tensor([[0.5, 0.5]]), torch.tensor([0]))
    >>> m.update(torch.tensor([[0.2, 0.8]]), torch.tensor([1]))
    >>> round(float(m.compute()), 6)   # -(log .5 + log .8) / 2
    0.458145
    """

    def __init__(
        self,
        clip: float | None = None,
        logits: bool = False,
        validate: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(logits=logits, validate=validate, **kwargs)
        self.clip = clip

    def _batch_mean(self, preds: torch.Tensor, target: torch.Tensor) -> Any:
        return _nll(preds, target, clip=self.clip, logits=self.logits, validate=self.validate)


class Brier(_Mean):
    """Brier score (Brier 1950) ``mean_i sum_k (p_ik - 1{y_i = k})^2`` with O(1) state.

    For 1-D binary ``preds`` the binary score ``mean (p - y)^2``; equals
    :func:`calipers.brier` on all the data (to rounding).

    Parameters
    ----------
    reduction : {"sum", "mean"}, default "sum"
        Sum over classes, or their mean (Kull et al. 2019's "Brier / K").
    logits : bool, default False
    validate : bool, default True
    **kwargs
        Passed to :class:`torchmetrics.Metric`.

    Examples
    --------
    >>> import torch
    >>> from calipers.stream.torchmetrics import Brier
    >>> m = Brier()
    >>> m.update(torch.tensor([0.2]), torch.tensor([0])); m.update(torch.tensor([0.6]), torch.tensor([1]))
    >>> round(float(m.compute()), 6)   # (.04 + .16) / 2
    0.1
    """

    def __init__(
        self,
        reduction: Literal["sum", "mean"] = "sum",
        logits: bool = False,
        validate: bool = True,
        **kwargs: Any,
    ) -> None:
        _refuse(type(self).__name__, "brier", kwargs)
        if reduction not in ("sum", "mean"):
            raise CalibrationInputError(f"reduction must be 'sum' or 'mean'; got {reduction!r}")
        super().__init__(logits=logits, validate=validate, **kwargs)
        self.reduction = reduction

    def _batch_mean(self, preds: torch.Tensor, target: torch.Tensor) -> Any:
        return _brier(
            preds, target, reduction=self.reduction, logits=self.logits, validate=self.validate
        )
