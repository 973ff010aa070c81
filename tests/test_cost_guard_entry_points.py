"""Resample counts of the report, the debiased ECE and the diagrams' bootstrap bands
go through the one cost guard (calipers.validation.check_size, MAX_RESAMPLES).

Before, ``report(n_bootstrap=10**9)`` started a run of days, ``n_bootstrap=5.0``
was read as 5 and ``seed=-1`` ended in NumPy's error.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.validation import MAX_RESAMPLES, CalibrationInputError

rng = np.random.default_rng(0)
P = rng.uniform(0.02, 0.98, 200)
Y = (rng.uniform(size=200) < P).astype(np.int64)
HUGE = 10**9


def _diagram(name: str) -> Callable[..., Any]:
    pytest.importorskip("matplotlib")
    from calipers import diagrams

    return getattr(diagrams, name)  # type: ignore[no-any-return]


CASES: dict[str, tuple[Callable[[], Any], str]] = {
    "report n_bootstrap": (lambda: cp.report({"m": (P, Y)}, n_bootstrap=HUGE), "n_bootstrap"),
    "report null_resamples": (
        lambda: cp.report({"m": (P, Y)}, null_resamples=HUGE),
        "null_resamples",
    ),
    "debiased n_resamples": (
        lambda: cp.debiased_calibration_error(P, Y, n_resamples=HUGE),
        "n_resamples",
    ),
    "reliability diagram": (
        lambda: _diagram("reliability_diagram")(P, Y, intervals="bootstrap", n_bootstrap=HUGE),
        "n_bootstrap",
    ),
    "smooth diagram": (
        lambda: _diagram("smooth_reliability_diagram")(
            P, Y, intervals="bootstrap", n_bootstrap=HUGE
        ),
        "n_bootstrap",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_too_many_resamples_are_refused_at_once_naming_the_argument(case: str) -> None:
    call, name = CASES[case]
    t0 = time.perf_counter()
    with pytest.raises(CalibrationInputError, match=f"{name} = {HUGE} is more than the maximum"):
        call()
    assert time.perf_counter() - t0 < 5.0
    assert MAX_RESAMPLES < HUGE


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_bootstrap": 5.0}, "n_bootstrap must be an integer >= 0; got 5.0 (a float)"),
        ({"null_resamples": "200"}, "null_resamples must be an integer >= 0"),
        ({"n_bootstrap": -1}, "n_bootstrap must be an integer >= 0; got -1"),
        ({"seed": -1}, "seed must be an integer >= 0; got -1"),
        ({"kernel_max_n": 1}, "kernel_max_n must be an integer >= 2; got 1"),
    ],
)
def test_report_settings_are_integers_in_range(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(
        CalibrationInputError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        cp.report({"m": (P, Y)}, **kwargs)
