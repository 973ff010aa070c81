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
from .._docstrings import fill_doc
from ..pipeline.lenses import lens_arrays
from ..validation import check_predictions

__all__ = ["ks_calibration_error"]


@fill_doc
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
    {probs}
    {labels}
    {lens}
    {sample_weight}
        The cumulative sums become weighted and are divided by the total
        weight.
    {logits}
    {validate}
    {classes}

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
