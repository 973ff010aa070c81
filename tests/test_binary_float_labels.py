"""Float 0/1 labels on the binary fast path: the same ECE as integer labels, as cheaply.

pandas and torch targets are often float 0.0/1.0. ``cp.ece(p, y)`` on long 1-D
input checks such labels inside its chunked residual loop (in cache), and
:func:`calipers.check_predictions` checks them in one blocked pass, instead of
rounding every label into fresh arrays. The oracle is the integer-label call
(the same labels, cast by NumPy) and scikit-learn-free closed forms; the
messages for labels that are not 0/1 are the general ones, unchanged.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import calipers as cp
from calipers.validation import CalibrationInputError, check_predictions

#: longer than two chunks of the residual loop (2 * 2**16 rows): the fast path's size
N_LONG = 300_000


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return p, (rng.uniform(size=n) < p).astype(np.int64)


@pytest.mark.parametrize("n", [1_000, N_LONG])
def test_float_labels_give_the_integer_labels_value(n: int) -> None:
    p, y = _data(n, seed=1)
    yf = y.astype(np.float64)
    assert cp.ece(p, yf) == cp.ece(p, y)
    assert cp.ece(p.astype(np.float32), yf) == cp.ece(p.astype(np.float32), y)
    assert cp.mce(p, yf) == cp.mce(p, y)
    negative_zero = np.where(y == 0, -0.0, 1.0)  # -0.0 is the label 0, as before
    assert cp.ece(p, negative_zero) == cp.ece(p, y)
    # the ECE by hand (Guo et al. 2017, eq. 5): 15 bins (lo, hi], |sum(p - y)| per bin
    ids = np.clip(np.ceil(p * 15).astype(int) - 1, 0, 14)
    by_hand = sum(abs(np.sum(p[ids == b] - y[ids == b])) for b in range(15)) / n
    assert cp.ece(p, yf) == pytest.approx(by_hand, rel=1e-12)
    np.testing.assert_array_equal(check_predictions(p, yf).labels, y)


@pytest.mark.parametrize("n", [1_000, N_LONG])
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0.5, "labels must be integers; found 0.5 at row {i}"),
        (np.nan, "labels must be integers; found nan at row {i}"),
        (1.0 - 2.0**-53, "labels must be integers; found 0.9999999999999999 at row {i}"),
        (5e-324, "labels must be integers; found 5e-324 at row {i}"),
        (2.0, "labels must be in [0, 2); found 2 at row {i}"),
        (-1.0, "labels must be in [0, 2); found -1 at row {i}"),
    ],
)
def test_labels_other_than_0_and_1_are_refused_as_before(
    n: int, value: float, message: str
) -> None:
    p, y = _data(n, seed=2)
    yf = y.astype(np.float64)
    i = n - 7  # in the last chunk: every earlier chunk passes the fast check
    yf[i] = value
    for call in (lambda: cp.ece(p, yf), lambda: check_predictions(p, yf)):
        with pytest.raises(CalibrationInputError) as e:
            call()
        assert str(e.value) == message.format(i=i)


def test_the_label_check_makes_no_rounded_copies() -> None:
    # the old check built isfinite, round and != arrays of the labels (three n-sized
    # temporaries beside the int64 result); the blocked one allocates only the result
    n = 1 << 20
    p, y = _data(n, seed=3)
    yf = y.astype(np.float64)
    check_predictions(p, yf)  # warm-up
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        P = check_predictions(p, yf)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert P.labels.dtype == np.int64
    assert peak < 1.25 * 8 * n, peak  # the int64 labels (8 bytes a row) and small blocks
