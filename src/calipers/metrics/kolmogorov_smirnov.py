"""Kolmogorov-Smirnov calibration error (Gupta et al. 2021; Gruber & Buettner (2022) Def. C.2).

Binning-free: sort the top-label confidences and take the largest gap between
the cumulative sums of confidences and of correctness,

    KS = max_i | sum_{j <= i} (conf_j - correct_j) | / n        (weights: / sum w)

The order among tied confidences changes the value (docs/how-calipers-computes.md §4.4: 0.1375
with a stable sort, 0.15 with the other order of two tied 0.9's); calipers
sorts stably, so tied rows keep their input order.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .._backend import wrap_scalar
from ..pipeline.lenses import lens_arrays
from ..validation import check_predictions

__all__ = ["ks_calibration_error"]


def ks_calibration_error(
    probs: Any,
    labels: Any,
    *,
    lens: Literal["auto", "top_label", "binary"] = "auto",
    sample_weight: Any = None,
    logits: bool = False,
    validate: bool = True,
    classes: Any = None,
) -> Any:
    """Top-label Kolmogorov-Smirnov calibration error (Gupta et al. 2021).

    Gruber & Buettner (2022) Def. C.2 / App. C; computed as in docs/how-calipers-computes.md §4.4 with a
    stable sort of the confidences. Gruber & Buettner's (2022) code reports the square of this
    value ("squared space"); this function returns the value itself.

    Parameters
    ----------
    probs : array-like of shape (n, k) or (n,)
        Probabilities (binary: P(y = 1)); logits with ``logits=True``.
    labels : array-like of shape (n,)
    lens : {"auto", "top_label", "binary"}, default "auto"
        ``"auto"``: P(y = 1) against y for 1-D input (as relplot,
        scikit-learn, torchmetrics and netcal), the top-label confidence
        against correctness for ``(n, k)`` input. ``"top_label"`` forces the
        confidence reading (``max(p, 1 - p)`` for 1-D input).
    sample_weight : array-like of shape (n,), optional
        The cumulative sums become weighted and are divided by the total weight.
    logits : bool, default False
    validate : bool, default True
    classes : array-like or fitted classifier, optional
        The class of each column of ``probs``, in order (1-D ``probs``:
        ``[negative, positive]``), or a fitted scikit-learn classifier (its
        ``classes_``); ``labels`` are then read as these classes (strings, any
        integers). Default: labels are column indices.

    Returns
    -------
    float in [0, 1]
        For PyTorch input a detached 0-d ``torch.float64`` tensor on the
        input's device (computed in NumPy; no gradient, see docs/pytorch.md).

    Examples
    --------
    >>> import numpy as np, calipers as cp
    >>> conf = np.array([.55, .6, .65, .7, .8, .9, .9, .95])
    >>> correct = np.array([1, 0, 1, 0, 1, 1, 0, 1])
    >>> P = np.stack([conf, 1 - conf], axis=1)          # class 0 is the predicted one
    >>> round(cp.ks_calibration_error(P, np.where(correct == 1, 0, 1)), 6)
    0.1375
    """
    P = check_predictions(
        probs,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        validate=validate,
        classes=classes,
    )
    c, r, w = lens_arrays(P, lens)
    order = np.argsort(c, kind="stable")
    gaps = np.cumsum((w * (c - r))[order])
    return wrap_scalar(float(np.max(np.abs(gaps)) / w.sum()), P.probs)
