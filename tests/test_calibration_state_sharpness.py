"""Streamed calibration-sharpness terms against :func:`calipers.calibration_sharpness`.

:class:`calipers.stream.calibration_sharpness_state.CalibrationSharpnessState` keeps the grid
masses of the Nadaraya-Watson binned path: d_TOT and accuracy must be exact to
summation order (1e-12), the curves equal the in-memory binned path's where the state
defines them (1e-6 absolute: the binned path's tolerance against exact sums, which the
in-memory path uses at points near its 1e-9 density threshold), and d_CAL (both forms)
within the documented 1e-4 relative. Real
data from the shared data folder are skipped only when absent.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.stream.calibration_sharpness_state import CalibrationSharpnessState
from calipers.validation import CalibrationInputError
from test_calibration_state_equal_mass import _load

DCAL_REL = 1e-4


def _streamed(
    P: Any, y: Any, w: Any = None, logits: bool = False, **kw: Any
) -> CalibrationSharpnessState:
    cuts = np.sort(np.random.default_rng(8).integers(0, len(y), 3))
    states = []
    for i, p in enumerate([p for p in np.split(np.arange(len(y)), cuts) if p.size]):
        st = CalibrationSharpnessState(**kw)
        st.update(P[p], y[p], None if w is None else w[p], logits=logits)
        states.append(CalibrationSharpnessState.from_json(st.to_json()) if i % 2 else st)
    return reduce(lambda a, b: a + b, states)


def _check(got: Any, want: Any, curves: bool = True) -> None:
    assert abs(got.total_divergence - want.total_divergence) <= 1e-12 * want.total_divergence
    assert abs(got.accuracy - want.accuracy) <= 1e-12
    for f in ("calibration_error", "calibration_error_sharpcal"):
        a, b = getattr(got, f), getattr(want, f)
        assert abs(a - b) <= DCAL_REL * abs(b), (f, a, b)
    if curves:
        ok = ~np.isnan(got.calibration_curve)
        assert ok.mean() > 0.5
        for f in ("calibration_curve", "conditional_divergence"):
            np.testing.assert_allclose(getattr(got, f)[ok], getattr(want, f)[ok], atol=1e-6)
        np.testing.assert_allclose(
            got.density[ok], want.density[ok], rtol=0, atol=1e-6 * want.density.max()
        )


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    ("bandwidth", "kernel"), [(0.05, "gaussian"), (0.02, "gaussian"), (0.1, "epanechnikov")]
)
def test_synthetic(bandwidth: float, kernel: str, weighted: bool) -> None:
    rng = np.random.default_rng(31)
    n = 20_000  # above the exact path's 4e6 pairs: calibration_sharpness bins too
    h = rng.beta(5, 1.5, size=n)
    P = np.stack([h, 1 - h], axis=1)
    y = np.where(rng.uniform(size=n) < h**1.3, 0, 1)
    w = rng.gamma(2.0, size=n) if weighted else None
    want = cp.calibration_sharpness(P, y, bandwidth=bandwidth, kernel=kernel, sample_weight=w)
    got = _streamed(P, y, w, bandwidth=bandwidth, kernel=kernel).compute()
    _check(got, want, curves=kernel == "gaussian")


def test_binary_lens_and_grid() -> None:
    rng = np.random.default_rng(32)
    p = rng.beta(2, 2, size=5000)
    y = (rng.uniform(size=5000) < p).astype(int)
    x = np.linspace(0.1, 0.9, 17)
    want = cp.calibration_sharpness(p, y, grid=x, method="binned")
    _check(_streamed(p, y).compute(grid=x), want)


def test_errors() -> None:
    a = CalibrationSharpnessState()
    a.update(np.eye(3)[[0, 1]], [0, 1])
    with pytest.raises(CalibrationInputError, match="3 classes"):
        a.update([0.2, 0.3], [0, 1])
    with pytest.raises(CalibrationInputError, match="different configurations"):
        a.merge(CalibrationSharpnessState(bandwidth=0.1))
    with pytest.raises(CalibrationInputError, match="no samples"):
        CalibrationSharpnessState().compute()
    with pytest.raises(CalibrationInputError, match="not a calipers"):
        CalibrationSharpnessState.from_json("{}")
    text = a.to_json()
    assert CalibrationSharpnessState.from_json(text).to_json() == text


@pytest.mark.parametrize(
    "name",
    [
        "densenet40_c10_test.npz",
        "labelerrors_cifar10.npz",
        "labelerrors_20news.npz",
        "labelerrors_imdb.npz",
        "niamey2016_EMOS.npz",
    ],
)
def test_real_data(name: str) -> None:
    d = _load(name)
    if "logits" in d:
        P, y, lg = d["logits"], d["labels"], True
    elif "p" in d:
        P, y, lg = d["p"], d["y"].astype(int), False
    else:
        P, y, lg = d["probs"], d["labels"], False
    want = cp.calibration_sharpness(P, y, logits=lg)
    # IMDB probabilities reach 1.00001: the in-memory grid spans [0, 1.00001] (documented)
    _check(_streamed(P, y, logits=lg).compute(), want, curves="imdb" not in name)
