"""Long inputs take the chunked / fast paths; they must give the textbook numbers.

The reference here is written from the definition (Guo et al. 2017, eq. 5) with
plain NumPy: ``np.searchsorted`` on the edges j/B for the (lo, hi] rule and
per-bin sums, independent of calipers' binning code.
"""

import numpy as np
import pytest

import calipers as cp


def _reference_ece(
    conf: np.ndarray, correct: np.ndarray, B: int, w: np.ndarray | None = None
) -> float:
    edges = (np.arange(B + 1) / B).astype(conf.dtype)
    ids = np.searchsorted(edges[1:-1], conf, side="left")
    w = np.ones(conf.shape[0]) if w is None else w
    W = np.bincount(ids, w, B)
    gap = np.abs(np.bincount(ids, w * conf, B) - np.bincount(ids, w * correct, B))
    return float(gap.sum() / W.sum())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_ece_on_long_input_matches_definition(dtype: type, weighted: bool) -> None:
    rng = np.random.default_rng(7)
    n = 300_001  # several chunks and a ragged last one
    p = rng.random(n).astype(dtype)
    p[:1000] = np.round(p[:1000] * 15) / 15  # many values exactly on edges
    p[1000:1010] = 1.0
    p[1010:1020] = 0.0
    y = (rng.random(n) < p).astype(np.int64)
    w = rng.integers(0, 4, n).astype(np.float64) if weighted else None
    conf = np.maximum(p, 1 - p)
    correct = ((p > 0.5) == (y == 1)).astype(np.float64)
    expected = _reference_ece(conf, correct, 15, w)
    got_top = cp.ece(p, y, sample_weight=w, lens="top_label")
    assert got_top == pytest.approx(expected, rel=1e-10, abs=1e-13)
    # the positive-class lens: the default for 1-D input
    expected_pos = _reference_ece(p, y.astype(np.float64), 15, w)
    got = cp.calibration_error(p, y, lens="binary", sample_weight=w)
    assert got == pytest.approx(expected_pos, rel=1e-10, abs=1e-13)
    assert cp.ece(p, y, sample_weight=w) == got


def test_chunked_statistics_equal_one_pass_counts() -> None:
    rng = np.random.default_rng(3)
    p = rng.random(400_000)
    y = (rng.random(400_000) < p).astype(np.int64)
    st = cp.binned_statistics(p, y, lens="binary")[0].stats
    ids = np.searchsorted(np.arange(1, 15) / 15, p, side="left")
    np.testing.assert_array_equal(st.count, np.bincount(ids, minlength=15))
    np.testing.assert_allclose(st.sum_score, np.bincount(ids, p, 15), rtol=1e-12)
    np.testing.assert_array_equal(st.sum_target, np.bincount(ids, y.astype(float), 15))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("edge_rule", ["right", "left"])
@pytest.mark.parametrize("B", [15, 10, 7])
def test_chunked_bins_exact_at_and_beside_every_edge(dtype: type, edge_rule: str, B: int) -> None:
    # every edge j/B in the dtype, and its neighbours one and two ulps away,
    # scattered through a long input: the bin counts must be those of
    # np.searchsorted on the dtype's edges (the definition), chunk by chunk.
    rng = np.random.default_rng(11)
    n = 200_003
    p = rng.random(n).astype(dtype)
    e = (np.arange(B + 1) / B).astype(dtype)
    near = np.concatenate(
        [
            e,
            np.nextafter(e, dtype(2)),
            np.nextafter(e, dtype(-1)),
            np.nextafter(np.nextafter(e, dtype(2)), dtype(2)),
            np.nextafter(np.nextafter(e, dtype(-1)), dtype(-1)),
        ]
    )
    near = near[(near >= 0) & (near <= 1)].astype(dtype)
    pos = rng.choice(n, size=near.size * 20, replace=False)
    p[pos] = np.tile(near, 20)
    y = (rng.random(n) < p).astype(np.int64)
    side = "left" if edge_rule == "right" else "right"
    ids = np.searchsorted(e[1:-1], p, side=side)
    est = cp.EqualWidth(B, edge_rule=edge_rule)
    st = cp.binned_statistics(p, y, lens="binary", estimator=est)[0].stats
    np.testing.assert_array_equal(st.count, np.bincount(ids, minlength=B))
    np.testing.assert_array_equal(st.sum_target, np.bincount(ids, y.astype(float), B))
    np.testing.assert_allclose(st.sum_score, np.bincount(ids, p.astype(np.float64), B), rtol=1e-9)
    # the ECE (l1, bins weighted by size) takes the residual-histogram path
    gap = np.bincount(ids, p.astype(np.float64), B) - np.bincount(ids, y.astype(float), B)
    got = cp.ece(p, y, n_bins=B, edge_rule=edge_rule)
    assert got == pytest.approx(np.abs(gap).sum() / n, rel=1e-12)


@pytest.mark.parametrize("label_dtype", [np.int8, np.uint8, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_residual_path_equals_per_bin_totals(dtype: type, label_dtype: type) -> None:
    # The binary ECE is sum_b |sum (s - t)| / n; residuals of float32 scores and
    # small-integer labels are formed in float64 (1 - 1e-10 is not 1 in float32).
    rng = np.random.default_rng(19)
    n = 131_075
    p = rng.random(n).astype(dtype)
    p[:5000] = rng.random(5000).astype(dtype) * dtype(1e-9)  # where float32 s - 1 rounds
    y = (rng.random(n) < 0.3).astype(label_dtype)
    ids = np.searchsorted((np.arange(1, 15) / 15).astype(dtype), p, side="left")
    res = np.bincount(ids, p.astype(np.float64) - y.astype(np.float64), 15)
    expected = np.abs(res).sum() / n
    assert cp.ece(p, y) == pytest.approx(expected, rel=1e-13)
    # the general path (per-bin totals of scores and targets) gives the same number
    st = cp.binned_statistics(p, y, lens="binary")[0].stats
    assert cp.ece(p, y) == pytest.approx(np.abs(st.sum_target - st.sum_score).sum() / n, rel=1e-12)


def test_chunked_path_unvalidated_scores_outside_unit_interval_are_clipped() -> None:
    # validate=False promises nothing about the range; scores outside [0, 1]
    # go to the end bins, as np.clip of searchsorted ids does, in every chunk.
    rng = np.random.default_rng(5)
    n = 150_000
    p = rng.random(n)
    p[::997] = -0.7
    p[5::1009] = 1.6
    p[7::1013] = -0.01
    y = (rng.random(n) < 0.5).astype(np.int64)
    ids = np.clip(np.searchsorted(np.arange(1, 15) / 15, p, side="left"), 0, 14)
    W = np.bincount(ids, minlength=15)
    expected = np.abs(np.bincount(ids, p, 15) - np.bincount(ids, y.astype(float), 15)).sum() / n
    got = cp.calibration_error(p, y, lens="binary", validate=False)
    assert got == pytest.approx(expected, rel=1e-12)
    assert W.sum() == n


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.nan, r"probs contains a non-finite value \(nan\) at row 70001"),
        (np.inf, r"probs contains a non-finite value \(inf\) at row 70001"),
        (-np.inf, r"probs contains a non-finite value \(-inf\) at row 70001"),
        (1.5, r"probs must lie in \[0, 1\]; found 1.5 at row 70001"),
        (-0.25, r"probs must lie in \[0, 1\]; found -0.25 at row 70001"),
    ],
)
def test_long_binary_input_is_validated_by_its_binning(bad: float, message: str) -> None:
    # the range check of long 1-D scores is left to the residual histogram, which
    # runs the full validation as soon as a score leaves the bins or a total is not
    # finite: the same error, naming the row, and no warning from the cast of a NaN
    import warnings

    rng = np.random.default_rng(23)
    p = rng.random(100_000)
    y = (rng.random(100_000) < p).astype(np.int64)
    p[70_001] = bad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(cp.CalibrationInputError, match=message):
            cp.ece(p, y)
        with pytest.raises(cp.CalibrationInputError, match=message):
            cp.calibration_error(p, y, lens="binary")


def test_long_binary_input_within_the_tolerance_is_binned_with_clipping() -> None:
    # rounding noise just outside [0, 1] passes the validation (as for short input)
    # and lands in the end bins, as np.clip of the searchsorted ids does
    rng = np.random.default_rng(29)
    p = rng.random(100_000)
    y = (rng.random(100_000) < p).astype(np.int64)
    p[5] = 1 + 1e-12
    p[90_000] = -1e-12
    ids = np.clip(np.searchsorted(np.arange(1, 15) / 15, p, side="left"), 0, 14)
    expected = np.abs(np.bincount(ids, p - y, 15)).sum() / p.shape[0]
    assert cp.ece(p, y) == pytest.approx(expected, rel=1e-12)
    short = cp.ece(p[:1000], y[:1000])  # the short path accepts the same values
    assert short == pytest.approx(cp.ece(np.clip(p[:1000], 0, 1), y[:1000]), rel=1e-12)
