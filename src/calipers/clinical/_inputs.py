"""Binary risks and outcomes as the clinical functions read them (private).

Predicted risks are ``P(y = 1)`` as a 1-D array (or the positive column of an
``(n, 2)`` array), outcomes 0/1 (or class names through ``classes=``), optional
non-negative weights; :func:`calipers.validation.check_predictions` checks them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..validation import CalibrationInputError, check_predictions

__all__ = ["binary_risks", "refuse_certain", "check_confidence"]


def _numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def binary_risks(
    probs: Any, labels: Any, sample_weight: Any = None, classes: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(p, y, w)``: float64 risks of the event, 0/1 outcomes, weights or None."""
    P = check_predictions(probs, labels, sample_weight=sample_weight, classes=classes)
    p = _numpy(P.probs).astype(np.float64, copy=False)
    if p.ndim == 2:
        if p.shape[1] != 2:
            raise CalibrationInputError(
                f"probs has {p.shape[1]} columns; the calibration hierarchy is for binary "
                "risks (shape (n,) or (n, 2)). For several classes use "
                "calipers.clinical.calibration_hierarchy_by_class (one class against the rest)"
            )
        p = p[:, 1]
    p = np.clip(p, 0.0, 1.0)  # check_predictions accepted it within its tolerance
    y = _numpy(P.labels)
    if y.ndim == 2:
        y = np.argmax(y, axis=1)
    y = y.astype(np.float64)
    w = None if P.sample_weight is None else _numpy(P.sample_weight).astype(np.float64)
    return p, y, w


def refuse_certain(p: np.ndarray, what: str) -> None:
    """Refuse risks of exactly 0 or 1, whose logit is infinite, naming the first row.

    ``what`` names the computation (the subject of "cannot use").
    """
    bad = (p <= 0.0) | (p >= 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibrationInputError(
            f"row {i} of probs is {float(p[i])!r}: {what} cannot use a risk of exactly "
            f"0 or 1, whose logit is infinite ({int(bad.sum())} such rows). "
            "A risk model should not predict certainty; if these rows are rounded output, "
            "pass the unrounded risks (or decide how to treat them and say so in the report)"
        )


def check_confidence(confidence: Any) -> float:
    """``confidence`` as a float in (0, 1)."""
    try:
        c = float(confidence)
    except (TypeError, ValueError):
        raise CalibrationInputError(
            f"confidence must be a number in (0, 1), like 0.95; got {confidence!r}"
        ) from None
    if not 0.0 < c < 1.0:
        raise CalibrationInputError(
            f"confidence must be in (0, 1), like 0.95 for 95 % intervals; got {confidence!r}"
        )
    return c
