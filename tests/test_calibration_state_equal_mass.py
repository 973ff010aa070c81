"""Streamed equal-mass bins (ACE, TACE, equal-mass RMSCE) against the in-memory values.

Oracles: :class:`calipers.estimators.binning.EqualMass` with :func:`calipers.estimators.binning.bin_statistics`
on all rows, and :func:`calipers.ace` / :func:`calipers.tace` / :func:`calipers.rmsce`.
One pass must be within the state's own :meth:`error_bound`; two passes (``refine``)
must equal the in-memory value to summation order (relative 1e-12). The real data sets
of the shared data folder (``$CALIPERS_SHARED_DATA`` or ``<repo>/../shared/data``) are
skipped only when absent.
"""

from __future__ import annotations

import json
from functools import reduce
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.estimators.binning import EqualMass, bin_statistics
from calipers.stream.calibration_state import CalibrationState
from calipers.stream.score_grid import ScoreGrid, score_cells
from calipers.validation import CalibrationInputError
from shared_data import load as _load

REL = 1e-12


def _parts(n: int, seed: int) -> list[np.ndarray]:
    cuts = np.sort(np.random.default_rng(seed).integers(0, n, 3))
    return [p for p in np.split(np.arange(n), cuts) if p.size]


def _two_pass(
    make: Any, P: Any, y: Any, w: Any = None
) -> tuple[CalibrationState, CalibrationState]:
    parts = _parts(len(y), 7)
    states = []
    for i, p in enumerate(parts):
        st = make()
        st.update(P[p], y[p], None if w is None else w[p])
        states.append(CalibrationState.from_json(st.to_json()) if i % 2 else st)
    first = reduce(lambda a, b: a + b, states)
    second = [first.refine(P[p], y[p], None if w is None else w[p]) for p in parts]
    second[1] = CalibrationState.from_json(second[1].to_json())
    return first, reduce(lambda a, b: b + a, second)


def _close(a: float, b: float) -> bool:
    return bool(a == b or abs(a - b) <= REL * max(abs(a), abs(b)))


# ----------------------------------------------------------------------------- the grid


def test_cells_are_monotone_and_fine_near_the_ends() -> None:
    s = np.sort(np.random.default_rng(0).uniform(size=5000) ** 8)
    s = np.sort(np.r_[0.0, 5e-324, s, 0.5, 1 - 2**-53, 1.0])
    k = score_cells(s)
    assert np.all(np.diff(k) >= 0)
    # relative width 2^-7 of min(s, 1 - s): 1e-6 and 1.01e-6 are in different cells
    assert score_cells([1e-6])[0] != score_cells([1.01e-6])[0]
    assert score_cells([1 - 1e-6])[0] != score_cells([1 - 1.01e-6])[0]
    assert len(set(score_cells([1.0, 1 - 2**-53, 0.0]).tolist())) == 3


@pytest.mark.parametrize("trial", range(40))
def test_grid_bins_match_equal_mass(trial: int) -> None:
    rng = np.random.default_rng(100 + trial)
    n = int(rng.integers(1, 2000))
    s = rng.beta(5, 0.3, size=n)
    if trial % 3 == 0:
        s = np.round(s, 2)  # ties, point cells
    if trial % 4 == 0:
        s[rng.uniform(size=n) < 0.1] = 1.0
    t = (rng.uniform(size=n) < s).astype(float)
    w = None if trial % 2 else rng.integers(0, 4, size=n).astype(float)
    B = int(rng.integers(1, 20))
    ids, nb = EqualMass(B).assign(s, w)
    want = bin_statistics(ids, nb, s, t, w)
    grid = reduce(
        lambda a, b: a + b,
        [ScoreGrid.from_arrays(s[p], t[p], None if w is None else w[p]) for p in _parts(n, trial)],
    )
    m = np.isin(score_cells(s), grid.edge_cells(B))
    assert m.sum() <= grid.count[np.isin(grid.keys, grid.edge_cells(B))].sum()
    got, bound = grid.equal_mass_statistics(B, rows=(s[m], t[m], None if w is None else w[m]))
    assert bound == 0.0
    for f in ("weight", "sum_score", "sum_target", "sum_target_sq"):
        np.testing.assert_allclose(getattr(got, f), getattr(want, f), rtol=1e-12, atol=1e-9)
    one, bound = grid.equal_mass_statistics(B)
    np.testing.assert_allclose(one.weight.sum(), want.weight.sum(), rtol=1e-12)
    exact = np.abs(want.sum_target - want.sum_score).sum()
    approx = np.abs(one.sum_target - one.sum_score).sum()
    assert abs(exact - approx) <= bound + 1e-9


def test_grid_json_round_trip_and_merge_order() -> None:
    rng = np.random.default_rng(3)
    s, t = rng.uniform(size=500), rng.integers(0, 2, 500)
    a, b = ScoreGrid.from_arrays(s[:200], t[:200]), ScoreGrid.from_arrays(s[200:], t[200:])
    assert (a + b).to_dict() == (b + a).to_dict()
    assert ScoreGrid.from_dict(json.loads(json.dumps(a.to_dict()))).to_dict() == a.to_dict()
    with pytest.raises(CalibrationInputError, match="same bits"):
        a + ScoreGrid.from_arrays(s, t, bits=5)
    with pytest.raises(CalibrationInputError, match="not a ScoreGrid"):
        ScoreGrid.from_dict({"keys": [1]})


# ----------------------------------------------------------------------------- the state


def _multiclass(n: int = 3000, k: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 3.0
    P = np.exp(z - z.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    y = np.array([rng.choice(k, p=np.sqrt(p) / np.sqrt(p).sum()) for p in P])
    P[:5] = np.eye(k)[y[:5]]
    return P, y


P4, Y4 = _multiclass()
W4 = np.random.default_rng(2).integers(0, 4, size=len(Y4)).astype(float)

CASES = [
    ("ace", lambda: CalibrationState.for_metric("ace"), cp.ace),
    ("tace", lambda: CalibrationState.for_metric("tace"), cp.tace),
    (
        "tace-0.05-10",
        lambda: CalibrationState.for_metric("tace", threshold=0.05, n_bins=10),
        lambda p, y, sample_weight: cp.tace(
            p, y, threshold=0.05, n_bins=10, sample_weight=sample_weight
        ),
    ),
    (
        "rmsce-equal-mass",
        lambda: CalibrationState.for_metric("rmsce", estimator=cp.EqualMass(15)),
        cp.rmsce,
    ),
]


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "integer-weights"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_one_and_two_passes(case: Any, weighted: bool) -> None:
    name, make, fn = case
    w = W4 if weighted else None
    expected = float(fn(P4, Y4, sample_weight=w))
    first, second = _two_pass(make, P4, Y4, w)
    assert _close(second.compute(), expected), (second.compute(), expected)
    assert second.error_bound() == 0.0
    if name != "rmsce-equal-mass":
        assert abs(first.compute() - expected) <= first.error_bound()
    else:
        with pytest.raises(CalibrationInputError, match="divergence='l1'"):
            first.error_bound()


def test_second_pass_rules() -> None:
    make = lambda: CalibrationState.for_metric("ace")  # noqa: E731
    first = make()
    first.update(P4, Y4)
    half = first.refine(P4[:1000], Y4[:1000])
    with pytest.raises(CalibrationInputError, match="do not match the first pass"):
        half.compute()  # rows of the edge cells are missing
    with pytest.raises(CalibrationInputError, match="first pass is closed"):
        half.update(P4[:10], Y4[:10])
    with pytest.raises(CalibrationInputError, match="second pass"):
        half.merge(first)
    other = make()
    other.update(P4[:500], Y4[:500])
    with pytest.raises(CalibrationInputError, match="different first-pass"):
        half.merge(other.refine(P4[:10], Y4[:10]))
    twice = half.refine(P4[1000:], Y4[1000:])  # refine chains on one state too
    assert _close(twice.compute(), float(cp.ace(P4, Y4)))
    with pytest.raises(CalibrationInputError, match="fixed bins are exact"):
        CalibrationState.for_metric("ece").refine(P4, Y4)
    with pytest.raises(CalibrationInputError, match="fixed bins"):
        first.reliability_table()
    with pytest.raises(CalibrationInputError, match="fixed bins"):
        CalibrationState(lens="top_label", estimator=cp.EqualMass(10)).murphy_decomposition()


@pytest.mark.parametrize(
    ("metric", "alternative"),
    [
        ("dirichlet", "seeded subsample"),
        ("ce_kl", "seeded subsample"),
        ("skce", "estimator='block'"),
        ("ks", "seeded subsample"),
        ("smece", "SmoothECEState"),
        ("calibration_sharpness", "CalibrationSharpnessState"),
    ],
)
def test_not_streamable_names_the_alternative(metric: str, alternative: str) -> None:
    with pytest.raises(CalibrationInputError, match="cannot be streamed exactly") as info:
        CalibrationState.for_metric(metric)
    assert alternative in str(info.value)


# ----------------------------------------------------------------------------- real data


def _real(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name.startswith("densenet"):
        d = _load(name)
        z = d["logits"].astype(np.float64)
        P = np.exp(z - z.max(1, keepdims=True))
        return P / P.sum(1, keepdims=True), d["labels"]
    d = _load(name)
    return d["probs"], d["labels"]


@pytest.mark.parametrize("metric", ["ace", "tace"])
@pytest.mark.parametrize(
    "name",
    [
        "labelerrors_cifar10.npz",
        "labelerrors_20news.npz",
        "labelerrors_imdb.npz",
        "densenet40_c10_test.npz",
    ],
)
def test_real_data(name: str, metric: str) -> None:
    P, y = _real(name)
    expected = float(getattr(cp, metric)(P, y))
    first, second = _two_pass(lambda: CalibrationState.for_metric(metric), P, y)
    bound = first.error_bound()
    assert abs(first.compute() - expected) <= bound
    assert bound <= 0.1 * expected  # the sketch is useful: within 10 % on these data
    assert _close(second.compute(), expected)


def test_block_skce_alternative_combines_over_chunks() -> None:
    """The documented alternative for the SKCE: chunks cut at block boundaries (even sizes
    for blocks of 2) combine as a mean weighted by their numbers of blocks."""
    rng = np.random.default_rng(21)
    P = rng.dirichlet(np.ones(3), size=1000)
    y = rng.integers(0, 3, 1000)
    whole = float(cp.skce(P, y, estimator="block"))
    a = float(cp.skce(P[:400], y[:400], estimator="block"))
    b = float(cp.skce(P[400:], y[400:], estimator="block"))
    assert abs((200 * a + 300 * b) / 500 - whole) <= 1e-12 * abs(whole)


@pytest.mark.parametrize("metric", ["ace", "tace"])
def test_real_valued_weights(metric: str) -> None:
    """Non-integer weights: the ranks are sums of weights in another order, which
    could move an edge only if a rank fell within rounding of a cumulative weight."""
    w = np.random.default_rng(9).gamma(2.0, size=len(Y4))
    w[1::97] = 0.0
    expected = float(getattr(cp, metric)(P4, Y4, sample_weight=w))
    first, second = _two_pass(lambda: CalibrationState.for_metric(metric), P4, Y4, w)
    assert abs(first.compute() - expected) <= first.error_bound()
    assert _close(second.compute(), expected)


def test_real_logits_two_passes() -> None:
    d = _load("densenet40_c10_test.npz")
    z, y = d["logits"], d["labels"]
    parts = _parts(len(y), 3)
    first = CalibrationState.for_metric("ace")
    for p in parts:
        first.update(z[p], y[p], logits=True)
    second = reduce(lambda a, b: a + b, [first.refine(z[p], y[p], logits=True) for p in parts])
    expected = float(cp.ace(z, y, logits=True))
    assert abs(first.compute() - expected) <= first.error_bound()
    assert _close(second.compute(), expected)
