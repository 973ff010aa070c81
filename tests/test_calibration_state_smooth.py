"""Streamed SmoothECE (:class:`calipers.stream.smooth_ece_state.SmoothECEState`) against :func:`calipers.smece`.

The state keeps the kernel-grid masses of every grid size the fixed-point search can
use (1001 nodes for bandwidths >= 0.01, and those of k/1024, k = 2..10), so for every
fixed point and every stored bandwidth it must give the in-memory value up to the
summation order of the masses (relative 1e-12), and it must refuse bandwidths whose
grid is not stored. Real data from the shared data folder are skipped only when absent.
"""

from __future__ import annotations

import json
from functools import reduce
from typing import Literal

import numpy as np
import pytest

import calipers as cp
from calipers.metrics.smooth_ece import _bin_masses, _grid_size
from calipers.stream.smooth_ece_state import GRID_SIZES, SmoothECEState
from calipers.validation import CalibrationInputError
from test_calibration_state_equal_mass import _load, _real

REL = 1e-12


def _streamed(
    P: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, **kw: str
) -> SmoothECEState:
    cuts = np.sort(np.random.default_rng(5).integers(0, len(y), 4))
    states = []
    parts = [p for p in np.split(np.arange(len(y)), cuts) if p.size]
    for i, p in enumerate(parts):
        st = SmoothECEState(**kw)  # type: ignore[arg-type]
        st.update(P[p], y[p], None if w is None else w[p])
        states.append(SmoothECEState.from_json(st.to_json()) if i % 2 else st)
    return reduce(lambda a, b: a + b, states)


def _close(a: float, b: float) -> bool:
    return bool(abs(a - b) <= REL * max(abs(a), abs(b)))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("bandwidth", [None, 0.01, 0.05, 0.3])
def test_synthetic(bandwidth: float | None, weighted: bool) -> None:
    rng = np.random.default_rng(11)
    P = rng.dirichlet(np.ones(5) * 0.7, size=4000)
    y = rng.integers(0, 5, 4000)
    w = rng.gamma(2.0, size=4000) if weighted else None
    want = float(cp.smece(P, y, bandwidth=bandwidth, sample_weight=w))
    assert cp.smece_bandwidth(P, y, sample_weight=w) >= 0.01
    assert _close(_streamed(P, y, w).compute(bandwidth), want)


@pytest.mark.parametrize("lens", ["auto", "top_label"])
def test_binary_lenses(lens: Literal["auto", "top_label"]) -> None:
    rng = np.random.default_rng(12)
    p = rng.beta(2, 2, size=3000)
    y = (rng.uniform(size=3000) < p**1.5).astype(int)
    assert _close(_streamed(p, y, lens=lens).compute(), float(cp.smece(p, y, lens=lens)))


def test_fixed_point_below_the_coarse_grid() -> None:
    # a well-calibrated large sample: labels drawn from the predictions, so s* is small and
    # the bisection evaluates bandwidths below 0.01 (finer grids than the 1001-node one)
    n = 200_000
    rng = np.random.default_rng(13)
    p = rng.beta(2.0, 2.0, size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    assert cp.smece_bandwidth(p, y) <= 2**-7
    cuts = [0, 1, 37_000, 37_001, 150_000, n]  # uneven batches, two of a single row
    states = []
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
        st = SmoothECEState()
        st.update(p[a:b], y[a:b])
        states.append(SmoothECEState.from_json(st.to_json()) if i % 2 else st)
    st = reduce(lambda u, v: u + v, states[::-1])
    assert _close(st.compute(), float(cp.smece(p, y)))
    # every stored grid below 0.01, at the bandwidths the search uses there
    for k in range(2, 11):
        want = float(cp.smece(p, y, bandwidth=k / 1024))
        assert _close(st.compute(bandwidth=k / 1024), want), k
    # and the weighted form (another summation order per grid)
    w = rng.gamma(2.0, size=n)
    sw = _streamed(p, y, w)
    assert _close(sw.compute(), float(cp.smece(p, y, sample_weight=w)))
    assert _close(sw.compute(3 / 1024), float(cp.smece(p, y, bandwidth=3 / 1024, sample_weight=w)))


def test_grids_cover_the_search() -> None:
    # every bandwidth the 10-step bisection can evaluate (k/1024 >= 1e-3, i.e. k >= 2)
    # and every bandwidth >= 0.01 has a stored grid
    assert 1 / 1024 < 1e-3 <= 2 / 1024
    assert {_grid_size(k / 1024) for k in range(2, 1025)} <= set(GRID_SIZES)
    assert all(_grid_size(s) in GRID_SIZES for s in np.linspace(0.01, 5.0, 997))
    assert len(GRID_SIZES) == 10 and sum(GRID_SIZES) == 20762  # 41 524 floats


def test_masses_equal_bin_masses() -> None:
    # the chunked multi-grid split against smooth_ece's own binning, grid by grid,
    # with scores at 0, at 1 and just outside [0, 1] (within the validation tolerance)
    rng = np.random.default_rng(17)
    p = np.concatenate([rng.uniform(size=150_000), [0.0, 1.0, 1.0, 0.5]])
    y = (rng.uniform(size=p.size) < p).astype(int)
    st = SmoothECEState()
    st.update(p, y)
    r = p - y
    for E in GRID_SIZES:
        want = _bin_masses(p, [None, r], E)
        assert np.allclose(st.masses[E], want, rtol=1e-12, atol=1e-9), E


def test_unstored_bandwidth_is_refused() -> None:
    rng = np.random.default_rng(14)
    p = rng.uniform(size=5000)
    y = (rng.uniform(size=5000) < p).astype(int)
    st = _streamed(p, y)
    assert _grid_size(0.003) == 3334 and _grid_size(1 / 1024) == 10241
    for bad in (0.003, 1 / 1024, 1e-4):
        with pytest.raises(CalibrationInputError, match=r"k/1024 for k = 2\.\.10") as e:
            st.compute(bandwidth=bad)
        assert f"{_grid_size(bad)} nodes" in str(e.value)
    # a bandwidth sharing a stored grid size is exact
    assert _grid_size(0.003906) == _grid_size(4 / 1024)
    assert _close(st.compute(bandwidth=0.003906), float(cp.smece(p, y, bandwidth=0.003906)))
    assert _close(st.compute(bandwidth=0.01), float(cp.smece(p, y, bandwidth=0.01)))


def test_errors() -> None:
    a = SmoothECEState()
    a.update(np.eye(3)[[0, 1]], [0, 1])
    with pytest.raises(CalibrationInputError, match="3 classes"):
        a.update([0.2, 0.3], [0, 1])
    with pytest.raises(CalibrationInputError, match="different lenses"):
        a.merge(SmoothECEState(lens="top_label"))
    with pytest.raises(CalibrationInputError, match="no samples"):
        SmoothECEState().compute()
    with pytest.raises(CalibrationInputError, match="not a calipers"):
        SmoothECEState.from_json("{}")
    old = '{"format": "calipers.SmoothECEState/1", "lens": "auto", "shape": null, "masses": []}'
    with pytest.raises(CalibrationInputError, match="cannot be read"):
        SmoothECEState.from_json(old)
    doc = json.loads(a.to_json())
    del doc["masses"]["3414"]
    with pytest.raises(CalibrationInputError, match="grid sizes"):
        SmoothECEState.from_json(json.dumps(doc))
    doc = json.loads(a.to_json())
    doc["masses"]["1025"][0].pop()
    with pytest.raises(CalibrationInputError, match=r"shape \(2, 1025\)"):
        SmoothECEState.from_json(json.dumps(doc))
    text = a.to_json()
    assert SmoothECEState.from_json(text).to_json() == text


@pytest.mark.parametrize(
    "name", ["densenet40_c10_test.npz", "labelerrors_20news.npz", "labelerrors_imdb.npz"]
)
def test_real_data(name: str) -> None:
    P, y = _real(name)
    assert _close(_streamed(P, y).compute(), float(cp.smece(P, y)))


@pytest.mark.parametrize("name", ["niamey2016_EMOS.npz", "niamey2016_Logistic.npz"])
def test_real_binary(name: str) -> None:
    d = _load(name)
    p, y = d["p"], d["y"].astype(int)
    assert _close(_streamed(p, y).compute(), float(cp.smece(p, y)))
