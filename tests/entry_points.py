"""The public entry points that take ``(probs, labels)``, and how to call each one.

Shared by the tests that go through every entry point (the bad-input catalogue, the
``classes=`` tests): an entry point is a function of ``calipers.__all__`` whose first
two parameters are ``probs`` (or ``scores``) and ``labels``.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import calipers as cp

#: extra arguments some entry points need to run at all
EXTRA: dict[str, dict[str, Any]] = {
    "group_ece": {"groups": [[0], [1, 2]]},
    "group_bar_chart": {"groups": [[0], [1, 2]]},
    "proper_calibration_error": {"bandwidth": 0.5},
    "ce_kl": {"bandwidth": 0.5},
    "ce_squared_l2": {"bandwidth": 0.5},
    "consistency_test": {"n_resamples": 9},
    "skce_test": {"n_resamples": 9},
    "debiased_calibration_error": {"n_resamples": 9},
    "top_k_ece": {"k": 2},
    "top_k_bar_chart": {"ks": (1, 2)},
}

#: functions of the right shape that are not entry points of this kind
SKIP = {
    "check_predictions",  # the validator itself: its own tests
    "calibration_split",  # splits rows of anything indexable; reads no values (its own tests)
}


def entry_points() -> list[tuple[str, Any]]:
    """``(name, function)`` of every public function taking ``(probs, labels, ...)``."""
    out = []
    for name in cp.__all__:
        f = getattr(cp, name)
        if name in SKIP or not inspect.isfunction(f):
            continue
        ps = list(inspect.signature(f).parameters)
        if len(ps) >= 2 and ps[0] in ("probs", "scores") and ps[1] == "labels":
            out.append((name, f))
    return out


def call(name: str, f: Any, probs: Any, labels: Any, kw: dict[str, Any]) -> Any:
    """``f(probs, labels, **EXTRA[name], **kw)``, warnings silenced, figures closed after."""
    import matplotlib.pyplot as plt

    kw = {**EXTRA.get(name, {}), **kw}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(probs, labels, **kw)
    finally:
        plt.close("all")
