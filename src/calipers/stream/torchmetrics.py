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
which keeps every confidence. Every total is registered with
``dist_reduce_fx="sum"``, so distributed synchronisation (DDP, Lightning's
``self.log``) adds the per-process totals, and the result equals the
single-process value on all the data. Bins follow calipers' rule exactly
(:class:`calipers.estimators.binning.EqualWidth`: edges ``j / n_bins`` in the input's
dtype, ``(lo, hi]`` by default), computed on the input's device.

One reading per state. Besides its totals, a state holds a small ``config``
tensor: the settings its totals depend on (``n_bins``, ``edge_rule``, ``logits``,
``clip``, ``reduction``) and the reading its first batch fixed (1-D scores
P(y = 1) or ``(n, k)`` rows, the number of classes, the lens ``"auto"`` resolved
to, and for the binned objects the dtype the bin edges are in). A later batch
read differently is refused with an error that names the update, since a state
mixing two readings equals no calipers function on the data; ``reset()`` frees
the reading. The ``config`` travels with the totals: ``merge_state``,
``forward``, ``load_state_dict`` and the distributed synchronisation refuse a
state whose settings or reading differ, and say which (self against the other).
A 0-d batch is refused, as the functions refuse it.

This module imports :mod:`torchmetrics` (and PyTorch); ``import calipers``
does not import it.

References: Guo et al. (2017), *On calibration of modern neural networks*
(ECE, MCE); Kull et al. (2019), *Beyond temperature scaling* (class-wise ECE);
Gneiting & Raftery (2007), *Strictly proper scoring rules* (log score);
Brier (1950), *Verification of forecasts expressed in terms of probability*.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

import torch
from torchmetrics import Metric

from ..estimators.binning import BinStatistics, EqualWidth, check_bins_for_samples
from ..metrics._calibration_error import SliceStatistics, error_from_statistics
from ..metrics.scores import brier as _brier
from ..metrics.scores import nll as _nll
from ..pipeline.divergences import get_divergence
from ..pipeline.lenses import binary, classwise, resolve_lens, top_label
from ..validation import (
    MAX_BINS,
    CalibrationInputError,
    Predictions,
    check_integer,
    check_predictions,
)

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


_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_EDGE_RULES = ("right", "left")
_LENSES = ("binary", "top_label")
_REDUCTIONS = ("sum", "mean")
_FORMS = ("1-D scores P(y = 1)", "(n, k) rows")


def _choice(choices: tuple[str, ...], value: float) -> str:
    return repr(choices[int(value) - 1])


#: What a state's ``config`` tensor may hold: name -> (fixed by the first batch, how a
#: value reads). Codes are small exact floats; a first-batch field is 0 until a batch
#: (or a merged or loaded state) fixes it, and 0 agrees with any value.
_FIELDS: dict[str, tuple[bool, Callable[[float], str]]] = {
    "n_bins": (False, lambda v: str(int(v))),
    "edge_rule": (False, lambda v: _choice(_EDGE_RULES, v)),
    "logits": (False, lambda v: str(bool(v))),
    "clip": (False, lambda v: "None" if v < 0 else repr(float(v))),
    "reduction": (False, lambda v: _choice(_REDUCTIONS, v)),
    "lens": (True, lambda v: _choice(_LENSES, v)),
    "form": (True, lambda v: _FORMS[int(v) - 1]),
    "classes": (True, lambda v: str(int(v))),
    "dtype": (True, lambda v: str(_DTYPES[int(v) - 1])),
}


def _show(field: str, value: float) -> str:
    first_batch, show = _FIELDS[field]
    return "not fixed yet" if first_batch and value == 0 else show(value)


def _differences(
    fields: tuple[str, ...], a: list[float], b: list[float]
) -> list[tuple[str, float, float]]:
    """The fields on which two configurations disagree (an unfixed reading agrees with all)."""
    return [
        (f, x, y)
        for f, x, y in zip(fields, a, b, strict=True)
        if x != y and not (_FIELDS[f][0] and (x == 0 or y == 0))
    ]


def _describe(diffs: list[tuple[str, float, float]], left: str, right: str) -> str:
    return "; ".join(
        f"{f} differs ({left}: {_show(f, x)}, {right}: {_show(f, y)})" for f, x, y in diffs
    )


def _agree(stacked: torch.Tensor, *, cls: str, fields: tuple[str, ...]) -> torch.Tensor:
    """``dist_reduce_fx`` of the ``config`` state: the processes' common configuration.

    ``stacked`` holds one configuration per process (rank order); they must agree
    (an unfixed reading agrees with any), else the totals mean different things and
    summing them would give a number no calipers function gives: a clear error.
    """
    rows = stacked.detach().reshape(-1, len(fields)).tolist()
    for i, row in enumerate(rows):
        for j in range(i):
            diffs = _differences(fields, rows[j], row)
            if diffs:
                raise CalibrationInputError(
                    f"cannot synchronise the {cls} states of processes {j} and {i}: "
                    + _describe(diffs, f"process {j}", f"process {i}")
                )
    merged = [next((v for v in column if v != 0), column[0]) for column in zip(*rows, strict=True)]
    return torch.tensor(merged, dtype=stacked.dtype, device=stacked.device)


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


class _Configured(Metric):
    """A metric whose state carries its configuration (the ``config`` state, registered first).

    ``config`` holds the settings the totals depend on and the reading the first
    batch fixed (see :data:`_FIELDS`); ``update`` refuses a batch read differently,
    and ``merge_state``, ``forward``, ``load_state_dict`` and the distributed
    synchronisation (:func:`_agree`) refuse a state whose configuration differs.
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    config: torch.Tensor
    logits: bool
    validate: bool
    _config_fields: tuple[str, ...]
    _forward_from: int | None = None

    def _add_config(self, **values: float) -> None:
        """Register the ``config`` state (before any other, so that it is checked first)."""
        fields = tuple(values)
        self._config_fields = fields
        self.add_state(
            "config",
            default=torch.tensor([float(v) for v in values.values()], dtype=torch.float64),
            dist_reduce_fx=functools.partial(_agree, cls=type(self).__name__, fields=fields),
        )

    def _state_shape(self, config: dict[str, float]) -> tuple[int, ...]:
        """The shape of the totals under ``config``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ one batch

    def _update_number(self) -> int:
        """The number of this ``update`` call since the last reset (as ``forward`` counts too)."""
        if self._forward_from is not None:  # forward() runs update on an emptied copy
            return self._forward_from + 1
        return int(self._update_count)

    @contextlib.contextmanager
    def _updating(self) -> Iterator[None]:
        """Name the metric and the update in every input error raised inside."""
        try:
            yield
        except CalibrationInputError as err:
            where = f"{type(self).__name__} update #{self._update_number()}"
            raise CalibrationInputError(f"{where}: {err}") from err

    #: What :meth:`torchmetrics.Metric.forward` changes on the way (besides the states).
    _FORWARD_CONTEXT = (
        "_update_count",
        "_computed",
        "_forward_cache",
        "_to_sync",
        "_should_unsync",
        "_is_synced",
        "compute_on_cpu",
        "_enable_grad",
    )

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """As :meth:`torchmetrics.Metric.forward`, but a refused batch leaves the state as it was.

        torchmetrics' ``forward`` empties the state, adds the batch and merges the
        state back; an error on the way (a batch read differently, a bad value)
        would lose every earlier batch. Here the state and its context are put
        back, and the error names the update as ``update`` does.
        """
        states = self._copy_state_dict()
        context = {k: getattr(self, k) for k in self._FORWARD_CONTEXT if hasattr(self, k)}
        self._forward_from = int(self._update_count)
        try:
            return super().forward(*args, **kwargs)
        except BaseException:
            for name, value in states.items():
                setattr(self, name, value)
            for name, value in context.items():
                setattr(self, name, value)
            self._update_count = int(context.get("_update_count", 0)) + 1  # as update counts
            raise
        finally:
            self._forward_from = None

    def _read(self, preds: Any, target: Any, validate: bool) -> Predictions | None:
        """The batch in calipers' form (None for an empty batch, which adds nothing)."""
        if not (isinstance(preds, torch.Tensor) and isinstance(target, torch.Tensor)):
            raise CalibrationInputError("preds and target must be torch tensors")
        if preds.ndim and preds.shape[0] == 0:
            return None  # an empty batch adds nothing
        # a 0-d batch is refused here, as the functions refuse it
        return check_predictions(preds, target, logits=self.logits, validate=validate)

    def _reading(self, P: Predictions, **more: float) -> dict[str, float]:
        """What a batch fixes: its form and number of classes (and ``more``)."""
        return {"form": 1.0 if P.binary else 2.0, "classes": float(P.n_classes), **more}

    def _reading_error(self, diffs: list[tuple[str, float, float]], state: dict[str, float]) -> str:
        """The message for a batch (``diffs``: field, batch value, state value)."""
        origin = "fixed by the first batch" if state["form"] else "set when the object was made"
        what = "; ".join(
            f"{f} {_show(f, b)} in this batch, {_show(f, a)} {origin}" for f, b, a in diffs
        )
        return (
            f"this batch is read differently from the state: {what}. A state reads every "
            "batch as its first batch fixed (totals of two readings would equal no calipers "
            "function on the data); call reset() to start a new state, or keep one object "
            "per reading"
        )

    def _check_reading(self, reading: dict[str, float]) -> dict[str, float]:
        """Refuse a batch whose reading differs from the one the state fixed; the state's."""
        state = dict(zip(self._config_fields, self.config.tolist(), strict=True))
        diffs = [(f, v, state[f]) for f, v in reading.items() if state[f] not in (0.0, v)]
        if diffs:
            raise CalibrationInputError(self._reading_error(diffs, state))
        return state

    def _fix_reading(self, reading: dict[str, float], state: dict[str, float]) -> None:
        """Record the reading (after the batch was added; ``state`` as checked before)."""
        if all(state[f] == v for f, v in reading.items()):
            return  # already fixed
        values = {**state, **reading}
        self.config = self.config.new_tensor([values[f] for f in self._config_fields])

    # ------------------------------------------------------------------ other states

    def _check_other(
        self, state: Mapping[str, Any], mine: list[float], left: str, right: str, action: str
    ) -> None:
        """Refuse another state (merged or loaded) whose configuration differs from ``mine``."""
        cls, fields = type(self).__name__, self._config_fields
        missing = [name for name in self._defaults if name not in state]
        if missing:
            raise CalibrationInputError(
                f"cannot {action} this {cls} state: the {right} state has no "
                f"{', '.join(repr(m) for m in missing)} {'entry' if len(missing) == 1 else 'entries'}"
                f" (the state of {cls} is {', '.join(self._defaults)}; 'config' holds its "
                f"settings and reading: {', '.join(fields)})"
            )
        theirs = torch.as_tensor(state["config"]).detach().reshape(-1).tolist()
        if len(theirs) != len(fields):
            raise CalibrationInputError(
                f"cannot {action} this {cls} state: the {right} state's 'config' has "
                f"{len(theirs)} values, a {cls} config {len(fields)} ({', '.join(fields)})"
            )
        diffs = _differences(fields, mine, theirs)
        if diffs:
            raise CalibrationInputError(
                f"cannot {action} this {cls} state: " + _describe(diffs, left, right)
            )
        shape = self._state_shape(dict(zip(fields, theirs, strict=True)))
        for name in self._defaults:
            got = tuple(torch.as_tensor(state[name]).shape)
            if name != "config" and got != shape:
                raise CalibrationInputError(
                    f"cannot {action} this {cls} state: the {right} state's {name!r} has shape "
                    f"{got}, its config says {shape}"
                )

    def _align(self, incoming: dict[str, Any]) -> dict[str, Any]:
        """Make the totals of two agreeing states the same shape (only the class-wise ECE needs it)."""
        return incoming

    def merge_state(self, incoming_state: dict[str, Any] | Metric) -> None:
        """Add another state of the same settings and reading (:meth:`torchmetrics.Metric.merge_state`).

        Raises :class:`~calipers.CalibrationInputError` naming each setting that
        differs (self against the other) or each missing entry.
        """
        if isinstance(incoming_state, type(self)):
            self._check_other(
                incoming_state.metric_state, self.config.tolist(), "self", "other", "merge"
            )
        elif isinstance(incoming_state, Mapping):
            self._check_other(incoming_state, self.config.tolist(), "self", "other", "merge")
        super().merge_state(incoming_state)  # (torchmetrics' own errors for other classes)

    def _reduce_states(self, incoming_state: dict[str, Any]) -> None:
        # merge_state (checked above) and forward (the state so far, then this batch)
        theirs = torch.as_tensor(incoming_state["config"]).reshape(-1).tolist()
        diffs = _differences(self._config_fields, self.config.tolist(), theirs)
        if diffs:  # forward(): a batch read differently from the state
            state = dict(zip(self._config_fields, theirs, strict=True))
            where = f"{type(self).__name__} update #{self._update_number()}"
            raise CalibrationInputError(f"{where}: {self._reading_error(diffs, state)}")
        super()._reduce_states(self._align(dict(incoming_state)))

    def _load_from_state_dict(
        self,
        state_dict: dict[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        present = {k: state_dict[prefix + k] for k in self._defaults if prefix + k in state_dict}
        # the loaded state replaces this one: compare it with the settings this one was made with
        if present:
            default = self._defaults["config"]
            assert isinstance(default, torch.Tensor)
            self._check_other(present, default.tolist(), "self", "state_dict", "load")
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


class _Binned(_Configured):
    """Shared machinery of the binned metric objects (states: config, count, sum_score, sum_target)."""

    count: torch.Tensor
    sum_score: torch.Tensor
    sum_target: torch.Tensor
    binning: EqualWidth

    def _init_states(self, shape: tuple[int, ...]) -> None:
        for name in ("count", "sum_score", "sum_target"):
            self.add_state(
                name, default=torch.zeros(shape, dtype=torch.float64), dist_reduce_fx="sum"
            )

    def _state_shape(self, config: dict[str, float]) -> tuple[int, ...]:
        return (int(config["n_bins"]),)

    def _binned_reading(self, P: Predictions, **more: float) -> dict[str, float]:
        """A batch's reading, with the dtype its bin edges are in."""
        dtype = P.probs.dtype
        if dtype not in _DTYPES:  # pragma: no cover - check_predictions gives floats
            raise CalibrationInputError(f"preds of dtype {dtype} are not supported")
        return self._reading(P, dtype=float(_DTYPES.index(dtype) + 1), **more)

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
        self._add_config(
            n_bins=int(n_bins),
            edge_rule=_EDGE_RULES.index(edge_rule) + 1,
            logits=bool(logits),
            lens=0 if lens == "auto" else _LENSES.index(lens) + 1,  # "auto": the first batch says
            form=0,
            classes=0,
            dtype=0,
        )
        self._init_states((int(n_bins),))

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        """Add a batch: ``preds`` of shape (n,) (P(y = 1)) or (n, k), ``target`` of shape (n,).

        The first batch fixes the reading (form, classes, lens, dtype); a batch read
        differently raises :class:`~calipers.CalibrationInputError`.
        """
        with self._updating():
            P = self._read(preds, target, self.validate)
            if P is None:
                return
            use = resolve_lens(self.lens, P)
            reading = self._binned_reading(P, lens=_LENSES.index(use) + 1)
            state = self._check_reading(reading)
            sl = next(binary(P) if use == "binary" else top_label(P))
            c, s, t = _bin_sums(self.binning, sl.scores, sl.targets)
            self.count += c
            self.sum_score += s
            self.sum_target += t
            self._fix_reading(reading, state)

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
        The state holds ``num_classes * n_bins`` totals per array, at most
        :data:`calipers.validation.MAX_BINS` (2**20), as any binning of calipers.
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
        self.binning = EqualWidth(n_bins, edge_rule)
        if num_classes is not None:
            num_classes = check_integer(num_classes, "num_classes", minimum=2)
            self._check_cells(num_classes)
        self.num_classes = num_classes
        self.reduction = reduction
        self.logits = logits
        self.validate = validate
        self._add_config(
            n_bins=int(n_bins),
            edge_rule=_EDGE_RULES.index(edge_rule) + 1,
            logits=bool(logits),
            form=0,
            classes=0 if num_classes is None else num_classes,
            dtype=0,
        )
        # num_classes=None: no rows until the first batch says how many classes there are
        self._init_states((0 if num_classes is None else num_classes, int(n_bins)))

    def _state_shape(self, config: dict[str, float]) -> tuple[int, ...]:
        return (int(config["classes"]), int(config["n_bins"]))

    def _check_cells(self, k: int) -> None:
        """The cost guard of the state: ``k x n_bins`` totals, at most MAX_BINS, as any binning's."""
        b = int(self.binning.n_bins)
        if k * b > MAX_BINS:
            raise CalibrationInputError(
                f"num_classes = {k} and n_bins = {b} make a state of {k} x {b} = {k * b} "
                f"per-bin totals, more than the maximum {MAX_BINS} (calipers.validation."
                "MAX_BINS: no binning or grid of calipers takes more); use fewer bins, or "
                "calipers.classwise_ece on the data"
            )

    def _align(self, incoming: dict[str, Any]) -> dict[str, Any]:
        # a state made with num_classes=None that has seen no batch has no rows yet
        names = ("count", "sum_score", "sum_target")
        mine, theirs = int(self.count.shape[0]), int(torch.as_tensor(incoming["count"]).shape[0])
        if mine == 0 and theirs:
            for name in names:
                setattr(self, name, torch.zeros_like(torch.as_tensor(incoming[name])))
        elif theirs == 0 and mine:
            for name in names:
                incoming[name] = torch.zeros_like(getattr(self, name))
        return incoming

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        """Add a batch: ``preds`` of shape (n, num_classes) (or (n,) for two classes).

        The first batch fixes the reading (form, classes, dtype); a batch read
        differently raises :class:`~calipers.CalibrationInputError`.
        """
        with self._updating():
            P = self._read(preds, target, self.validate)
            if P is None:
                return
            reading = self._binned_reading(P)
            state = self._check_reading(reading)
            if int(self.count.shape[0]) == 0:  # num_classes=None, no batch yet: this one says
                self._check_cells(P.n_classes)
                for name in ("count", "sum_score", "sum_target"):
                    shape = (P.n_classes, int(self.binning.n_bins))
                    setattr(self, name, torch.zeros(shape, dtype=torch.float64, device=self.device))
            for c, sl in enumerate(classwise(P)):
                cnt, s, t = _bin_sums(self.binning, sl.scores, sl.targets)
                self.count[c] += cnt
                self.sum_score[c] += s
                self.sum_target[c] += t
            self._fix_reading(reading, state)

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


class _Mean(_Configured):
    """A sample mean of a per-row score, kept as (sum, count) in float64."""

    total: torch.Tensor
    n: torch.Tensor

    def __init__(
        self,
        settings: dict[str, float],
        logits: bool = False,
        validate: bool = True,
        **kwargs: Any,
    ) -> None:
        _refuse(type(self).__name__, type(self).__name__.lower(), kwargs)
        super().__init__(**kwargs)
        self.logits = logits
        self.validate = validate
        self._add_config(logits=bool(logits), **settings, form=0, classes=0)
        self.add_state("total", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("n", default=torch.zeros((), dtype=torch.float64), dist_reduce_fx="sum")

    def _state_shape(self, config: dict[str, float]) -> tuple[int, ...]:
        return ()

    def _batch_mean(self, preds: torch.Tensor, target: torch.Tensor) -> Any:
        raise NotImplementedError

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        """Add a batch: ``preds`` of shape (n,) (P(y = 1)) or (n, k), ``target`` of shape (n,).

        The first batch fixes the reading (form, classes); a batch read differently
        raises :class:`~calipers.CalibrationInputError`.
        """
        with self._updating():
            P = self._read(preds, target, validate=False)  # the score validates the values
            if P is None:
                return
            reading = self._reading(P)
            state = self._check_reading(reading)
            n = P.n_samples
            mean = torch.as_tensor(self._batch_mean(preds, target)).detach().to(torch.float64)
            self.total += mean.to(self.total.device) * n
            self.n += n
            self._fix_reading(reading, state)

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
        _refuse(type(self).__name__, "nll", kwargs)
        if clip is not None and (
            isinstance(clip, bool) or not isinstance(clip, int | float) or not 0 <= clip < 0.5
        ):
            raise CalibrationInputError(f"clip must be in [0, 0.5); got {clip!r}")
        super().__init__(
            {"clip": -1.0 if clip is None else float(clip)},
            logits=logits,
            validate=validate,
            **kwargs,
        )
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
        super().__init__(
            {"reduction": _REDUCTIONS.index(reduction) + 1},
            logits=logits,
            validate=validate,
            **kwargs,
        )
        self.reduction = reduction

    def _batch_mean(self, preds: torch.Tensor, target: torch.Tensor) -> Any:
        return _brier(
            preds, target, reduction=self.reduction, logits=self.logits, validate=self.validate
        )
