"""Lenses: which calibration condition is measured (Kirchenbauer, Oaks & Heim (2022) §3.2, §4.2).

A lens maps validated predictions to one or more *slices* of (score, target)
pairs. A slice whose scores are 1-D is a Bernoulli problem (score = a
probability, target in {0, 1}); a slice with ``d`` columns compares vectors on
the simplex. Lenses that look at several classes one at a time (class-wise)
yield one slice per class; the pipeline aggregates the per-slice errors.

=======================  ========================================================
lens                     scores -> targets
=======================  ========================================================
``top_label``            max_k p_k -> 1{argmax = y} (Guo et al. 2017; Kirchenbauer, Oaks & Heim (2022) eq. 2)
``top_k(k)``             (p_(1), ..., p_(k), 1 - sum) -> (y at those classes, rest)
                         (Kirchenbauer, Oaks & Heim (2022) eq. 4, with the remainder column)
``classwise``            for every class c: p_c -> 1{y = c} (one slice per class)
``single_class(c)``      p_c -> 1{y = c} (Kirchenbauer, Oaks & Heim (2022) App. A.1)
``canonical``            the whole vector p -> one-hot(y) (the "full" condition)
``grouping(G)``          group sums of p -> group one-hot (Kirchenbauer, Oaks & Heim (2022) eq. 5-6)
``binary``               P(y = 1) -> 1{y = 1} (positive-class reliability)
``top_label_per_class``  for every predicted class c: max_k p_k -> 1{y = c} on the
                         rows predicted as c (Gupta & Ramdas 2022, one slice per
                         predicted class)
``auto``                 ``binary`` for 1-D input (P(y = 1)), ``top_label`` for
                         ``(n, k)`` input: the default of every preset
=======================  ========================================================

Binary input
------------
A 1-D ``probs`` vector holds P(y = 1). Every calipers metric reads it with the
positive-class (``binary``) lens by default, P(y = 1) against y, as
scikit-learn's ``calibration_curve``, torchmetrics' ``binary_calibration_error``,
relplot's ``smECE`` and netcal (for two classes) do, and as the published
numbers for binary data are computed. The top-label reading, ``max(p, 1 - p)``
against correctness, is one argument away (``lens="top_label"``). The two are
different quantities: over-confidence above 0.5 and under-confidence below it
cancel in the top-label form. Two-column ``(n, 2)`` input stays top-label
(Guo et al. 2017), as for any ``(n, k)``.

Examples
--------
>>> import numpy as np
>>> from calipers.validation import check_predictions
>>> from calipers.pipeline.lenses import get_lens
>>> P = check_predictions(np.array([[0.7, 0.2, 0.1], [0.3, 0.3, 0.4]]), [0, 1])
>>> [s.scores.tolist() for s in get_lens("top_label")(P)]
[[0.7, 0.4]]
>>> [s.targets.tolist() for s in get_lens("top_label")(P)]
[[1.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._backend import Array, is_torch, to_numpy
from ..validation import CalibrationInputError, Predictions, check_integer

__all__ = [
    "LensSlice",
    "Lens",
    "top_label",
    "top_label_arrays",
    "top_label_per_class",
    "top_k",
    "classwise",
    "single_class",
    "canonical",
    "grouping",
    "binary",
    "auto",
    "lens_arrays",
    "resolve_lens",
    "get_lens",
]


@dataclass(frozen=True)
class LensSlice:
    """One (score, target) problem produced by a lens.

    Attributes
    ----------
    scores : array, shape (m,) or (m, d)
    targets : array, same shape as ``scores``
        0/1 indicators for the built-in lenses: floats in the scores' dtype,
        or the int64 labels themselves for the NumPy positive-class lens.
    labels : array, shape (m,)
        The original class labels of the rows (for label selection).
    weights : array, shape (m,), or None
    name : str
        What the slice is (e.g. ``"class 3"``).
    binary_targets : bool, default True
        Targets are 0/1 indicators (true for every built-in lens).
    """

    scores: Array
    targets: Array
    labels: Array
    weights: Array | None
    name: str = ""
    binary_targets: bool = True

    def subset(self, mask: Array) -> LensSlice:
        """The rows where ``mask`` is True."""
        return LensSlice(
            self.scores[mask],
            self.targets[mask],
            self.labels[mask],
            None if self.weights is None else self.weights[mask],
            self.name,
            self.binary_targets,
        )

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.scores.shape[0])


Lens = Callable[[Predictions], Iterator[LensSlice]]


def _float_like(mask: Array, like: Array) -> Array:
    if is_torch(mask):
        return mask.to(like.dtype)
    return mask.astype(like.dtype)


def _onehot(labels: Array, k: int, like: Array) -> Array:
    if is_torch(labels):
        import torch

        return torch.nn.functional.one_hot(labels, k).to(like.dtype)
    out = np.zeros((labels.shape[0], k), dtype=like.dtype)
    out[np.arange(labels.shape[0]), labels] = 1
    return out


def top_label(P: Predictions) -> Iterator[LensSlice]:
    """Top-label (confidence) lens: max probability vs correctness.

    Kirchenbauer, Oaks & Heim (2022) eq. 2 / Guo et al. (2017). Ties in the arg-max go to the lowest
    class index; a binary ``p`` is read as ``[1 - p, p]``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions, top_label
    >>> sl = next(top_label(check_predictions(np.array([[0.4, 0.4, 0.2]]), [1])))
    >>> sl.scores.tolist(), sl.targets.tolist()      # tie -> class 0 predicted
    ([0.4], [0.0])
    """
    pred, conf = P.top_label()
    correct = _float_like(pred == P.labels, conf)
    yield LensSlice(conf, correct, P.labels, P.sample_weight, "top-label")


def top_label_per_class(P: Predictions) -> Iterator[LensSlice]:
    """Top-label lens conditioned on the predicted class (Gupta & Ramdas 2022).

    One slice per class that is predicted at least once: the confidences of
    the rows whose arg-max is ``c`` against ``1{y = c}``. Gupta & Ramdas's
    top-label calibration asks ``P(Y = c | C = c, max p = s) = s`` for every
    predicted class ``c`` and confidence ``s`` (their Def. 2), which the
    plain top-label lens only asks on average over classes. Slices come in
    class order; never-predicted classes have no slice.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions
    >>> from calipers.pipeline.lenses import top_label_per_class
    >>> P = check_predictions(np.array([[.7, .2, .1], [.3, .6, .1], [.8, .1, .1]]), [0, 0, 2])
    >>> [(s.name, s.scores.tolist(), s.targets.tolist()) for s in top_label_per_class(P)]
    [('predicted class 0', [0.7, 0.8], [1.0, 0.0]), ('predicted class 1', [0.6], [0.0])]
    """
    whole = next(top_label(P))
    pred_np = np.asarray(to_numpy(P.top_label()[0])).astype(np.int64, copy=False)
    for c in np.unique(pred_np):
        mask: Any = pred_np == c
        if is_torch(whole.scores):
            import torch

            mask = torch.as_tensor(mask, device=whole.scores.device)
        yield replace(whole.subset(mask), name=f"predicted class {int(c)}")


def top_label_arrays(P: Predictions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Float64 NumPy (confidence, correctness, weight) of the top-label lens.

    For estimators that work on the whole sample rather than on bins (KS,
    MMCE); unit weights when none were given.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions
    >>> from calipers.pipeline.lenses import top_label_arrays
    >>> [a.tolist() for a in top_label_arrays(check_predictions(np.array([[0.3, 0.7]]), [1]))]
    [[0.7], [1.0], [1.0]]
    """
    return lens_arrays(P, "top_label")


def top_k(k: int) -> Lens:
    """Top-k lens of Kirchenbauer, Oaks & Heim (2022) eq. 4, with the remainder column.

    Scores are the ``k`` largest probabilities in decreasing order (ties: lower
    class index first) followed by ``1 - sum``; targets are the one-hot label at
    those classes followed by ``1 - sum`` (1 when the label is not among them).
    ``top_k(1)`` with the TVD divergence equals the usual ECE.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions, top_k
    >>> sl = next(top_k(2)(check_predictions(np.array([[0.5, 0.2, 0.3]]), [2])))
    >>> sl.scores.round(2).tolist(), sl.targets.tolist()
    ([[0.5, 0.3, 0.2]], [[0.0, 1.0, 0.0]])
    """
    k = check_integer(k, "k", minimum=1)

    def lens(P: Predictions) -> Iterator[LensSlice]:
        p: Any = P.full_probs()
        s: Any
        t: Any
        idx: Any
        if k >= P.n_classes:
            raise CalibrationInputError(
                f"top_k needs k < number of classes ({P.n_classes}); got k={k}"
            )
        if is_torch(p):
            import torch

            idx = torch.argsort(-p, dim=1, stable=True)[:, :k]
            s = torch.gather(p, 1, idx)
            t = (idx == P.labels[:, None]).to(p.dtype)
            # the rest's mass, >= 0 (rows summing to 1 + ulps leave -2e-16)
            s = torch.cat([s, (1 - s.sum(1, keepdim=True)).clamp_min(0)], dim=1)
            t = torch.cat([t, (1 - t.sum(1, keepdim=True))], dim=1)
        else:
            idx = np.argsort(-p, axis=1, kind="stable")[:, :k]
            s = np.take_along_axis(p, idx, axis=1)
            t = (idx == P.labels[:, None]).astype(p.dtype)
            # the rest's mass, >= 0 (rows summing to 1 + ulps leave -2e-16)
            s = np.concatenate([s, np.maximum(1 - s.sum(1, keepdims=True), 0)], axis=1)
            t = np.concatenate([t, 1 - t.sum(1, keepdims=True)], axis=1)
        yield LensSlice(s, t, P.labels, P.sample_weight, f"top-{k}")

    lens.__name__ = f"top_{k}"
    return lens


def classwise(P: Predictions) -> Iterator[LensSlice]:
    """Class-wise lens: for every class c, p_c vs 1{y = c} (one slice per class).

    The per-class errors are then averaged or summed by the pipeline's
    ``class_aggregate`` (Nixon et al.'s SCE averages, Kull et al. sum).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions, classwise
    >>> [s.targets.tolist() for s in classwise(check_predictions(np.array([[0.7, 0.3]]), [1]))]
    [[0.0], [1.0]]
    """
    p = P.full_probs()
    # at most 64 columns and about 2**21 entries per block (16 MB in float64), so the
    # copies stay small beside the input however many rows there are
    step = max(1, min(64, (1 << 21) // max(1, P.n_samples)))
    for c0 in range(0, P.n_classes, step):
        # contiguous copies of the columns, 64 at a time (a block transpose reads
        # whole cache lines): every later pass over a column (selection, binning,
        # sums) then reads memory in order instead of with a stride of k
        cols = p[:, c0 : c0 + step]
        block = cols.T.contiguous() if is_torch(p) else np.ascontiguousarray(cols.T)
        for j in range(block.shape[0]):
            c = c0 + j
            yield LensSlice(
                block[j], _float_like(P.labels == c, p), P.labels, P.sample_weight, f"class {c}"
            )


def single_class(c: int) -> Lens:
    """Lens on one class c: p_c vs 1{y = c} (Kirchenbauer, Oaks & Heim (2022) App. A.1).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions, single_class
    >>> sl = next(single_class(2)(check_predictions(np.array([[0.5, 0.2, 0.3]]), [2])))
    >>> sl.scores.tolist(), sl.targets.tolist()
    ([0.3], [1.0])
    """

    def lens(P: Predictions) -> Iterator[LensSlice]:
        if not (0 <= c < P.n_classes):
            raise CalibrationInputError(f"class {c} is out of range for {P.n_classes} classes")
        p = P.full_probs()
        yield LensSlice(
            p[:, c], _float_like(P.labels == c, p), P.labels, P.sample_weight, f"class {c}"
        )

    lens.__name__ = f"class_{c}"
    return lens


def canonical(P: Predictions) -> Iterator[LensSlice]:
    """Canonical (full) lens: the whole probability vector vs one-hot(y).

    The "full" calibration condition P(Y | g(X)) = g(X) (Kirchenbauer, Oaks & Heim (2022) eq. 1).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions, canonical
    >>> next(canonical(check_predictions(np.array([[0.5, 0.2, 0.3]]), [1]))).targets.tolist()
    [[0.0, 1.0, 0.0]]
    """
    p = P.full_probs()
    yield LensSlice(p, _onehot(P.labels, P.n_classes, p), P.labels, P.sample_weight, "canonical")


def grouping(groups: Sequence[Sequence[int]]) -> Lens:
    """Grouping lens of Kirchenbauer, Oaks & Heim (2022) eq. 5-6: probabilities and labels summed per group.

    ``groups`` must partition the classes ``0..k-1`` (checked).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions, grouping
    >>> sl = next(grouping([[0, 1], [2]])(check_predictions(np.array([[0.5, 0.2, 0.3]]), [1])))
    >>> sl.scores.round(2).tolist(), sl.targets.tolist()
    ([[0.7, 0.3]], [[1.0, 0.0]])
    """
    gs = [list(map(int, g)) for g in groups]

    def lens(P: Predictions) -> Iterator[LensSlice]:
        flat = sorted(c for g in gs for c in g)
        if flat != list(range(P.n_classes)):
            raise CalibrationInputError(
                f"groups must partition the classes 0..{P.n_classes - 1} (each class exactly once); got {gs}"
            )
        p: Any = P.full_probs()
        onehot = _onehot(P.labels, P.n_classes, p)
        s: Any
        t: Any
        if is_torch(p):
            import torch

            s = torch.stack([p[:, g].sum(1) for g in gs], dim=1)
            t = torch.stack([onehot[:, g].sum(1) for g in gs], dim=1)
        else:
            s = np.stack([p[:, g].sum(1) for g in gs], axis=1)
            t = np.stack([onehot[:, g].sum(1) for g in gs], axis=1)
        yield LensSlice(s, t, P.labels, P.sample_weight, "groups")

    lens.__name__ = "grouping"
    return lens


def binary(P: Predictions) -> Iterator[LensSlice]:
    """Positive-class lens for binary problems: P(y = 1) vs 1{y = 1}.

    The reliability of the positive class (what scikit-learn's
    ``calibration_curve`` and torchmetrics' ``binary_*`` metrics measure),
    as opposed to the top-label lens, which looks at ``max(p, 1 - p)``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions
    >>> from calipers.pipeline.lenses import binary
    >>> next(binary(check_predictions(np.array([0.2, 0.9]), [0, 1]))).scores.tolist()
    [0.2, 0.9]
    """
    if P.n_classes != 2:
        raise CalibrationInputError(f"the binary lens needs 2 classes; got {P.n_classes}")
    p = P.probs if P.binary else P.probs[:, 1]
    if is_torch(p):
        target = _float_like(P.labels == 1, p)
    else:
        # the labels of a two-class problem are validated to be 0 or 1: they are the
        # targets already (int64, no copy; every consumer sums or casts them)
        target = P.labels
    yield LensSlice(p, target, P.labels, P.sample_weight, "positive class")


def auto(P: Predictions) -> Iterator[LensSlice]:
    """The default lens: :func:`binary` for 1-D input, :func:`top_label` otherwise.

    A 1-D ``probs`` vector is P(y = 1) and is scored against y, as every peer
    library does (scikit-learn, torchmetrics, relplot, netcal); ``(n, k)``
    input (``k >= 2``, two columns included) is scored top-label (Guo et al.
    2017).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions
    >>> from calipers.pipeline.lenses import auto
    >>> sl = next(auto(check_predictions(np.array([0.2, 0.9]), [1, 1])))
    >>> sl.name, sl.scores.tolist(), sl.targets.tolist()
    ('positive class', [0.2, 0.9], [1, 1])
    >>> next(auto(check_predictions(np.array([[0.8, 0.2], [0.1, 0.9]]), [1, 1]))).name
    'top-label'
    """
    return binary(P) if P.binary else top_label(P)


def resolve_lens(
    lens: str, P: Predictions, allowed: Sequence[str] = ("top_label", "binary")
) -> str:
    """Name of the lens a call uses: ``"auto"`` resolved against ``P``, others checked.

    ``"auto"`` becomes ``"binary"`` for 1-D input and ``"top_label"``
    otherwise; any other name must be in ``allowed`` (plus ``"auto"``), else a
    :class:`CalibrationInputError` lists the choices.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions
    >>> resolve_lens("auto", check_predictions(np.array([0.3]), [0]))
    'binary'
    >>> resolve_lens("top_label", check_predictions(np.array([0.3]), [0]))
    'top_label'
    """
    if isinstance(lens, str) and lens == "auto":
        return "binary" if P.binary else "top_label"
    if not isinstance(lens, str) or lens not in allowed:
        choices = ", ".join(repr(a) for a in ("auto", *allowed))
        raise CalibrationInputError(f"lens must be one of {choices}; got {lens!r}")
    if lens == "binary" and P.n_classes != 2:
        raise CalibrationInputError(
            f"lens='binary' needs a binary problem (1-D P(y = 1) or two columns); probs has "
            f"{P.n_classes} classes"
        )
    return lens


def lens_arrays(P: Predictions, lens: str = "auto") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Float64 NumPy (score, target, weight) of a one-slice Bernoulli lens.

    ``lens`` is ``"auto"`` (default), ``"binary"`` or ``"top_label"``; for
    estimators that work on the whole sample rather than on bins (KS, MMCE,
    SmoothECE, kernel regressions). Unit weights when none were given.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import check_predictions
    >>> from calipers.pipeline.lenses import lens_arrays
    >>> P = check_predictions(np.array([0.3, 0.8]), [1, 0])
    >>> [a.tolist() for a in lens_arrays(P)]                     # P(y = 1) vs y
    [[0.3, 0.8], [1.0, 0.0], [1.0, 1.0]]
    >>> [a.tolist() for a in lens_arrays(P, "top_label")]        # max(p, 1 - p) vs correct
    [[0.7, 0.8], [0.0, 0.0], [1.0, 1.0]]
    """
    use = resolve_lens(lens, P)
    sl = next(binary(P) if use == "binary" else top_label(P))
    s = np.asarray(to_numpy(sl.scores), dtype=np.float64)
    t = np.asarray(to_numpy(sl.targets), dtype=np.float64)
    w = (
        np.ones_like(s)
        if sl.weights is None
        else np.asarray(to_numpy(sl.weights), dtype=np.float64)
    )
    return s, t, w


_NAMED: dict[str, Lens] = {
    "auto": auto,
    "top_label": top_label,
    "top_label_per_class": top_label_per_class,
    "classwise": classwise,
    "canonical": canonical,
    "binary": binary,
}


def get_lens(lens: str | Lens | Any) -> Lens:
    """Resolve a lens given by name (``"auto"``, ``"top_label"``, ``"classwise"``,
    ``"canonical"``, ``"binary"``) or as a callable.

    Examples
    --------
    >>> from calipers.pipeline.lenses import get_lens, top_label
    >>> get_lens("top_label") is top_label
    True
    """
    if callable(lens):
        return lens  # type: ignore[no-any-return]
    if lens in _NAMED:
        return _NAMED[lens]
    raise CalibrationInputError(
        f"unknown lens {lens!r}; use one of {sorted(_NAMED)} or top_k(k), single_class(c), grouping(groups)"
    )
