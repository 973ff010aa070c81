"""Proper scores and accuracy (Chidambaram & Ge (2024) §2, Popordanoska et al. (2024) §3, Gruber & Buettner (2022) §2.3).

The seeds insist that a calibration error is never reported alone: accuracy
and a proper score go with it. Scores are averaged over samples (weighted by
``sample_weight``) and accumulated in float64. With PyTorch input the
computation stays in torch, so NLL and Brier are differentiable.

* :func:`accuracy` — fraction of rows whose arg-max (lowest index on ties)
  equals the label.
* :func:`nll` — negative log-likelihood ``-mean log p_y`` (the log score).
  Exact: from logits as ``logsumexp(z) - z_y`` when logits are given; ``+inf``
  when a true-class probability is exactly 0 (as Chidambaram & Ge (2024) Table 1 reports for
  histogram binning and isotonic regression). Clipping only on request.
* :func:`brier` — ``mean_i sum_k (p_ik - 1{y_i = k})^2`` (the multi-class
  Brier score of Chidambaram & Ge 2024 / Popordanoska et al. 2024 / Gruber & Buettner 2022), or divided by K (``reduction="mean"``,
  as Kull et al. 2019 print it); for 1-D binary input ``mean (p - y)^2``.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .._backend import is_torch, row_logsumexp, row_sum_of_squares, take_rows, wrap_scalar
from .._docstrings import fill_doc
from ..validation import CalibrationInputError, Predictions, check_predictions

__all__ = ["accuracy", "nll", "brier"]


def _wmean(v: Any, P: Predictions) -> Any:
    """Weighted mean in float64 in the namespace of ``v`` (a tensor stays a tensor)."""
    w = P.sample_weight
    if is_torch(v):
        import torch

        v64 = v.to(torch.float64)
        if w is None:
            return v64.mean()
        # a zero weight means the row is absent, even where its loss is inf
        return torch.where(w > 0, v64 * w, torch.zeros_like(v64)).sum() / w.sum()
    v64 = np.asarray(v, dtype=np.float64)
    if w is None:
        return float(v64.mean())
    keep = w > 0
    return float(np.dot(v64[keep], w[keep]) / w.sum())


def _ret(value: Any, P: Predictions) -> Any:
    if is_torch(value):
        return value
    return wrap_scalar(float(value), P.probs)


@fill_doc
def accuracy(
    probs: Any,
    labels: Any,
    *,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Top-1 accuracy: the (weighted) fraction of rows with ``argmax p = y``.

    Ties in the arg-max go to the lowest class index; binary input predicts
    class 1 when ``p > 0.5``.

    Parameters
    ----------
    {probs}
    {labels}
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float in [0, 1]
        For PyTorch input a detached 0-d ``torch.float64`` tensor on the
        input's device (accuracy is piecewise constant in the scores: its
        derivative is 0 wherever it exists).

    Examples
    --------
    >>> import calipers as cp
    >>> cp.accuracy([[0.5, 0.5], [0.2, 0.8], [0.9, 0.1]], [0, 1, 1])
    0.6666666666666666
    """
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    pred, _ = P.top_label()
    correct = pred == P.labels
    if is_torch(correct):
        acc = _wmean(correct.double(), P)
        return acc.detach()
    return _ret(_wmean(correct, P), P)


@fill_doc
def nll(
    probs: Any,
    labels: Any,
    *,
    clip: float | None = None,
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Negative log-likelihood (log score) ``-mean_i log p_{i, y_i}`` in nats.

    Parameters
    ----------
    {probs}
        Logits give the NLL exactly as ``logsumexp(z) - z_y``, without
        forming probabilities.
    {labels}
    clip : float, optional
        When given, the true-class probability is clipped to
        ``[clip, 1 - clip]`` first, reproducing published conventions (Kull et
        al. 2019 use 1e-15). By default nothing is clipped and a true-class
        probability of exactly 0 gives ``+inf`` — never a silent clip.
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float (``inf`` possible), or a differentiable 0-d ``torch.float64`` tensor on the
    input's device for PyTorch input (gradients reach the input in its own dtype)

    Examples
    --------
    >>> import calipers as cp
    >>> round(cp.nll([[0.5, 0.5], [0.2, 0.8]], [0, 1]), 6)   # -(log .5 + log .8)/2
    0.458145
    >>> cp.nll([[1.0, 0.0]], [1])
    inf
    >>> round(cp.nll([[1.0, 0.0]], [1], clip=1e-15), 4)
    34.5388
    """
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    if clip is not None and not (0 <= clip < 0.5):
        raise CalibrationInputError(f"clip must be in [0, 0.5); got {clip!r}")
    if P.logits is not None and clip is None:
        z = P.logits
        if P.binary:
            # -log sigmoid(z) for y = 1, -log sigmoid(-z) for y = 0: softplus(-+z)
            s = 2 * P.labels - 1
            if is_torch(z):
                import torch

                loss = torch.nn.functional.softplus(-(s.to(z.dtype)) * z)
            else:
                loss = np.logaddexp(0.0, -s * np.asarray(z, dtype=np.float64))
        elif is_torch(z):
            import torch

            loss = torch.logsumexp(z, dim=1) - take_rows(z, P.labels)
        else:
            # blockwise: no float64 copy of a float32 matrix (was 1 GB at 200 000 x 100)
            zy = np.asarray(take_rows(z, P.labels), dtype=np.float64)
            loss = row_logsumexp(np.asarray(z)) - zy  # type: ignore[assignment]
        return _ret(_wmean(loss, P), P)
    if P.binary:
        p = P.probs
        py = p.where(P.labels == 1, 1 - p) if is_torch(p) else np.where(P.labels == 1, p, 1 - p)
    else:
        py = take_rows(P.probs, P.labels)
    if is_torch(py):
        import torch

        py = py.to(torch.float64)
        if clip is not None:
            py = py.clamp(clip, 1 - clip)
        with np.errstate(divide="ignore"):
            return _wmean(-torch.log(py), P)
    py = np.asarray(py, dtype=np.float64)
    if clip is not None:
        py = np.clip(py, clip, 1 - clip)
    with np.errstate(divide="ignore"):
        loss = -np.log(py)
    return _ret(_wmean(loss, P), P)


@fill_doc
def brier(
    probs: Any,
    labels: Any,
    *,
    reduction: Literal["sum", "mean"] = "sum",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Brier score ``mean_i sum_k (p_ik - 1{y_i = k})^2`` (Brier 1950).

    Parameters
    ----------
    {probs}
        For 1-D binary input the usual binary score ``mean (p - y)^2`` is
        returned (half the two-class sum); pass ``[1 - p, p]`` columns for the
        two-class sum.
    {labels}
    reduction : {"sum", "mean"}, default "sum"
        ``"sum"`` over classes (Chidambaram & Ge 2024, Popordanoska et al. 2024, Gruber & Buettner 2022; range [0, 2]) or ``"mean"``
        over classes (the "Brier / K" that Kull et al. 2019 print).
    {sample_weight}
    {logits}
    {validate}
    {classes}

    Returns
    -------
    float (or a differentiable 0-d ``torch.float64`` tensor on the input's device for
    PyTorch input; gradients reach the input in its own dtype)

    Examples
    --------
    >>> import calipers as cp
    >>> round(cp.brier([[0.8, 0.2], [0.4, 0.6]], [0, 0]), 6)   # (.04+.04 + .36+.36)/2
    0.4
    >>> round(cp.brier([0.2, 0.6], [0, 1]), 6)                 # (.04 + .16)/2
    0.1
    """
    if reduction not in ("sum", "mean"):
        raise CalibrationInputError(f"reduction must be 'sum' or 'mean'; got {reduction!r}")
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    p = P.probs
    if is_torch(p):
        import torch

        p64 = p.to(torch.float64)
        if P.binary:
            per = (p64 - P.labels.to(torch.float64)) ** 2
        else:
            onehot = torch.nn.functional.one_hot(P.labels, P.n_classes).to(torch.float64)
            per = ((p64 - onehot) ** 2).sum(dim=1)
            if reduction == "mean":
                per = per / P.n_classes
        return _wmean(per, P)
    if P.binary:
        per = (np.asarray(p, dtype=np.float64) - P.labels) ** 2
    else:
        # sum_k (p_k - y_k)^2 = sum_k p_k^2 - 2 p_y + 1, without a one-hot matrix and
        # without a float64 copy of a float32 matrix (rows squared in float64 blocks)
        py = np.asarray(take_rows(p, P.labels), dtype=np.float64)
        per = row_sum_of_squares(p) - 2 * py + 1
        if reduction == "mean":
            per = per / P.n_classes
    return _ret(_wmean(per, P), P)
