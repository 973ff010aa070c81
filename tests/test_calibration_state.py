"""Mergeable calibration state: streamed results equal the in-memory ones.

Every supported preset and lens is checked on seeded data (and on the real
data sets of the shared data folder, ``$CALIPERS_SHARED_DATA`` or
``<repo>/../shared/data``, skipped only when absent): the data are cut into
uneven chunks, each chunk goes into its own state, some states go through
JSON and back, and the states are merged in several orders and trees.

Exact vs approximate: a state fed the whole data in one ``update`` gives
exactly (``==``) the in-memory value, since it adds the same float64 values
in the same order. Merged states add per-chunk totals, i.e. the same values
grouped differently, so floating-point summation order differs; they are
compared with a relative tolerance of 1e-12 (and 1e-12 absolute for the Murphy
terms, which are recovered from sums of squares). Merging is exactly
commutative (float addition is) and JSON round trips are bit-exact.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import reduce
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.stream.calibration_state import CalibrationState
from calipers.validation import CalibrationInputError
from shared_data import load as _load

REL = 1e-12

# ----------------------------------------------------------------------------- data


def _multiclass(n: int = 3000, k: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    P = np.exp(z - z.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    y = np.array([rng.choice(k, p=np.sqrt(p) / np.sqrt(p).sum()) for p in P])
    P[:5] = np.eye(k)[y[:5]]  # exact 0 and 1 scores (edges, thresholds)
    return P, y


def _binary(n: int = 2500, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 3, size=n)
    y = (rng.uniform(size=n) < p**0.8).astype(int)
    p[:3] = [0.0, 1.0, 0.6]
    return p, y


def _weights(n: int, seed: int = 2) -> np.ndarray:
    w = np.random.default_rng(seed).gamma(2.0, size=n)
    w[1::97] = 0.0
    return w


def _chunks(n: int) -> list[slice]:
    cuts = sorted({min(c, n) for c in (0, 1, 8, 301, 302, n // 2, n - 7, n)})
    return [slice(a, b) for a, b in zip(cuts[:-1], cuts[1:], strict=True) if b > a]


def _states(
    make: Callable[[], CalibrationState], probs: Any, labels: Any, w: Any, logits: bool = False
) -> list[CalibrationState]:
    out = []
    for i, c in enumerate(_chunks(len(labels))):
        st = make()
        st.update(probs[c], labels[c], None if w is None else w[c], logits=logits)
        if i % 2:  # half the chunks pass through JSON
            st = CalibrationState.from_json(st.to_json())
        out.append(st)
    return out


def _merges(states: list[CalibrationState]) -> dict[str, CalibrationState]:
    """The same states merged left to right, right to left, as a tree and shuffled."""

    def tree(xs: list[CalibrationState]) -> CalibrationState:
        if len(xs) == 1:
            return xs[0]
        m = len(xs) // 2
        return tree(xs[:m]).merge(tree(xs[m:]))

    order = np.random.default_rng(3).permutation(len(states))
    return {
        "left": reduce(lambda a, b: a.merge(b), states),
        "right": reduce(lambda a, b: b.merge(a), states[::-1]),
        "tree": tree(states),
        "shuffled": reduce(lambda a, b: a + b, [states[i] for i in order]),
        "json-mid": CalibrationState.from_json(tree(states[:3]).to_json()).merge(tree(states[3:])),
    }


def _close(a: float, b: float) -> bool:
    return bool(a == b or abs(a - b) <= REL * max(abs(a), abs(b)))


# ----------------------------------------------------------------------------- cases

P4, Y4 = _multiclass()
PB, YB = _binary()
W4 = _weights(len(Y4))
WB = _weights(len(YB), seed=4)
KULL = cp.FixedEdges(np.r_[np.linspace(0, 1, 15), 1.0], closed="left")

# (id, input, state factory, in-memory function of (probs, labels, sample_weight))
CASES: list[tuple[str, str, Callable[[], CalibrationState], Callable[..., Any]]] = [
    ("ece", "multi", lambda: CalibrationState.for_metric("ece"), cp.ece),
    (
        "ece-left-7",
        "multi",
        lambda: CalibrationState.for_metric("ece", n_bins=7, edge_rule="left"),
        lambda p, y, sample_weight: cp.ece(
            p, y, n_bins=7, edge_rule="left", sample_weight=sample_weight
        ),
    ),
    ("mce", "multi", lambda: CalibrationState.for_metric("mce"), cp.mce),
    (
        "bin_averaged_ece",
        "multi",
        lambda: CalibrationState.for_metric("bin_averaged_ece"),
        cp.bin_averaged_ece,
    ),
    (
        "rmsce-equal-width",
        "multi",
        lambda: CalibrationState.for_metric("rmsce"),
        lambda p, y, sample_weight: cp.rmsce(
            p, y, estimator=cp.EqualWidth(15), sample_weight=sample_weight
        ),
    ),
    (
        "rmsce-fixed-edges",
        "multi",
        lambda: CalibrationState.for_metric("rmsce", estimator=KULL),
        lambda p, y, sample_weight: cp.rmsce(p, y, estimator=KULL, sample_weight=sample_weight),
    ),
    (
        "top_label_ece",
        "multi",
        lambda: CalibrationState.for_metric("top_label_ece"),
        cp.top_label_ece,
    ),
    (
        "top_label_ece-mean",
        "multi",
        lambda: CalibrationState.for_metric("top_label_ece", class_aggregate="mean"),
        lambda p, y, sample_weight: cp.top_label_ece(
            p, y, class_aggregate="mean", sample_weight=sample_weight
        ),
    ),
    ("sce", "multi", lambda: CalibrationState.for_metric("sce"), cp.sce),
    (
        "sce-thr",
        "multi",
        lambda: CalibrationState.for_metric("sce", n_bins=10, threshold=0.01),
        lambda p, y, sample_weight: cp.sce(
            p, y, n_bins=10, threshold=0.01, sample_weight=sample_weight
        ),
    ),
    (
        "classwise_ece",
        "multi",
        lambda: CalibrationState.for_metric("classwise_ece"),
        cp.classwise_ece,
    ),
    (
        "classwise_ece-kull-sum",
        "multi",
        lambda: CalibrationState.for_metric("classwise_ece", estimator=KULL, reduction="sum"),
        lambda p, y, sample_weight: cp.classwise_ece(
            p, y, estimator=KULL, reduction="sum", sample_weight=sample_weight
        ),
    ),
    ("tce_p", "multi", lambda: CalibrationState.for_metric("tce_p"), cp.tce_p),
    (
        "cwce_p-3-noroot",
        "multi",
        lambda: CalibrationState.for_metric("cwce_p", p=3, root=False),
        lambda p, y, sample_weight: cp.cwce_p(p, y, p=3, root=False, sample_weight=sample_weight),
    ),
    (
        "top_k_ece-2",
        "multi",
        lambda: CalibrationState.for_metric("top_k_ece", k=2, n_bins=5),
        lambda p, y, sample_weight: cp.top_k_ece(
            p, y, k=2, estimator=cp.EqualWidth(5), sample_weight=sample_weight
        ),
    ),
    (
        "top_k_ece-1",
        "multi",
        lambda: CalibrationState.for_metric("top_k_ece", k=1),
        lambda p, y, sample_weight: cp.top_k_ece(
            p, y, k=1, estimator=cp.EqualWidth(15), sample_weight=sample_weight
        ),
    ),
    (
        "label-selection-kl",
        "multi",
        lambda: CalibrationState(
            lens="top_label", selection=[cp.LabelSelection([0, 2])], divergence="squared_l2"
        ),
        lambda p, y, sample_weight: cp.calibration_error(
            p,
            y,
            lens="top_label",
            selection=cp.LabelSelection([0, 2]),
            divergence="squared_l2",
            sample_weight=sample_weight,
        ),
    ),
    ("binary-ece", "binary", lambda: CalibrationState.for_metric("ece"), cp.ece),
    (
        "binary-top-label-mce",
        "binary",
        lambda: CalibrationState.for_metric("mce", lens="top_label"),
        lambda p, y, sample_weight: cp.mce(p, y, lens="top_label", sample_weight=sample_weight),
    ),
    ("binary-sce", "binary", lambda: CalibrationState.for_metric("sce"), cp.sce),
    (
        "binary-classwise-sum",
        "binary",
        lambda: CalibrationState.for_metric("classwise_ece", reduction="sum"),
        lambda p, y, sample_weight: cp.classwise_ece(
            p, y, reduction="sum", sample_weight=sample_weight
        ),
    ),
]


def _data(kind: str, weighted: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if kind == "multi":
        return P4, Y4, (W4 if weighted else None)
    return PB, YB, (WB if weighted else None)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_merged_states_equal_in_memory(case: Any, weighted: bool) -> None:
    _, kind, make, fn = case
    p, y, w = _data(kind, weighted)
    expected = float(fn(p, y, sample_weight=w))
    whole = make()
    whole.update(p, y, w)
    assert whole.compute() == expected  # one batch: exactly the in-memory number
    for how, st in _merges(_states(make, p, y, w)).items():
        assert _close(st.compute(), expected), (how, st.compute(), expected)


def test_merge_is_commutative_and_json_exact() -> None:
    states = _states(lambda: CalibrationState.for_metric("classwise_ece"), P4, Y4, W4)
    a, b = states[2], states[4]
    assert a.merge(b).to_json() == b.merge(a).to_json()
    ab_c = a.merge(b).merge(states[5])
    a_bc = a.merge(b.merge(states[5]))
    assert _close(ab_c.compute(), a_bc.compute())
    text = ab_c.to_json()
    assert CalibrationState.from_json(text).to_json() == text
    assert "pickle" not in text and json.loads(text)["format"].startswith("calipers.")


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("kind", ["multi", "binary"])
def test_scores(kind: str, weighted: bool) -> None:
    p, y, w = _data(kind, weighted)
    st = _merges(_states(lambda: CalibrationState(), p, y, w))["tree"]
    assert _close(st.accuracy(), float(cp.accuracy(p, y, sample_weight=w)))
    assert _close(st.nll(), float(cp.nll(p, y, sample_weight=w)))
    assert _close(st.brier(), float(cp.brier(p, y, sample_weight=w)))


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize(
    ("kind", "lens"), [("multi", "classwise"), ("multi", "top_label"), ("binary", "binary")]
)
def test_murphy_decomposition(kind: str, lens: str, weighted: bool) -> None:
    p, y, w = _data(kind, weighted)
    est = cp.EqualWidth(10)
    st = _merges(_states(lambda: CalibrationState(lens=lens, estimator=est), p, y, w))["shuffled"]
    got = st.murphy_decomposition()
    want = cp.murphy_decomposition(p, y, lens=lens, estimator=est, sample_weight=w)
    for name in want.__dataclass_fields__:
        assert abs(getattr(got, name) - getattr(want, name)) <= 1e-12, name


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("empty", ["drop", "keep"])
@pytest.mark.parametrize(
    ("kind", "lens", "est"),
    [
        ("multi", "auto", cp.EqualWidth(15)),
        ("multi", "classwise", KULL),
        ("multi", "top_label_per_class", cp.EqualWidth(8, "left")),
        ("binary", "auto", cp.EqualWidth(12)),
    ],
)
def test_reliability_table(kind: str, lens: str, est: Any, empty: str, weighted: bool) -> None:
    p, y, w = _data(kind, weighted)
    st = _merges(_states(lambda: CalibrationState(lens=lens, estimator=est), p, y, w))["tree"]
    got = st.reliability_table(empty=empty, as_frame=False)
    want = cp.reliability_table(
        p, y, lens=lens, estimator=est, sample_weight=w, empty=empty, as_frame=False
    )
    assert got.dtype.names == want.dtype.names
    for c in want.dtype.names:
        if want[c].dtype.kind in "fc":
            np.testing.assert_allclose(got[c], want[c], rtol=1e-12, atol=1e-15, err_msg=c)
        else:
            assert got[c].tolist() == want[c].tolist(), c


# ----------------------------------------------------------------------------- real data


@pytest.mark.parametrize("metric", ["ece", "mce", "sce", "classwise_ece", "top_label_ece", "tce_p"])
def test_real_logits(metric: str) -> None:
    d = _load("densenet40_c10_test.npz")
    z, y = d["logits"], d["labels"]
    make = lambda: CalibrationState.for_metric(metric)  # noqa: E731
    whole = make()
    whole.update(z, y, logits=True)
    expected = float(getattr(cp, metric)(z, y, logits=True))
    assert _close(whole.compute(), expected)
    for st in _merges(_states(make, z, y, None, logits=True)).values():
        assert _close(st.compute(), expected)
    assert _close(st.nll(), float(cp.nll(z, y, logits=True)))
    assert _close(st.accuracy(), float(cp.accuracy(z, y, logits=True)))


def test_real_top_k_streams_as_in_memory() -> None:
    """The top-k remainder ``1 - sum`` rounds to -2e-16 on some of these softmax
    rows; the lens clamps it at 0, so equal-width grid bins accept them."""
    d = _load("densenet40_c10_test.npz")
    z, y = d["logits"], d["labels"]
    expected = float(cp.top_k_ece(z, y, k=2, estimator=cp.EqualWidth(5), logits=True))
    assert 0.0 < expected < 1.0
    make = lambda: CalibrationState.for_metric("top_k_ece", k=2, n_bins=5)  # noqa: E731
    for st in _merges(_states(make, z, y, None, logits=True)).values():
        assert _close(st.compute(), expected)


def test_top_k_remainder_is_clamped_at_zero() -> None:
    from calipers.pipeline.lenses import top_k
    from calipers.validation import check_predictions

    row = np.array([[0.1, 0.9000000000000001, 0.0]])  # sums to 1 + 1 ulp: within tolerance
    assert 1.0 - row[0, :2].sum() < 0
    (sl,) = list(top_k(2)(check_predictions(row, [1])))
    assert sl.scores[0, 2] == 0.0 and sl.scores[0, 0] == 0.9000000000000001


@pytest.mark.parametrize("name", ["niamey2016_EMOS.npz", "niamey2016_Logistic.npz"])
def test_real_binary(name: str) -> None:
    d = _load(name)
    p, y = d["p"], d["y"].astype(int)
    for metric in ("ece", "mce", "classwise_ece"):
        make = lambda m=metric: CalibrationState.for_metric(m, n_bins=10)  # noqa: E731
        expected = float(getattr(cp, metric)(p, y, n_bins=10))
        for st in _merges(_states(make, p, y, None)).values():
            assert _close(st.compute(), expected), metric
    st = _merges(_states(lambda: CalibrationState(lens="binary"), p, y, None))["tree"]
    assert _close(st.brier(), float(cp.brier(p, y)))


# ----------------------------------------------------------------------------- errors


def test_merge_config_mismatch_raises() -> None:
    a = CalibrationState.for_metric("ece", n_bins=15)
    b = CalibrationState.for_metric("ece", n_bins=10)
    with pytest.raises(CalibrationInputError, match="different configurations"):
        a.merge(b)
    with pytest.raises(CalibrationInputError, match="different configurations"):
        a.merge(CalibrationState.for_metric("mce"))


def test_class_count_mismatch_raises() -> None:
    a = CalibrationState()
    a.update(P4[:10], Y4[:10])
    with pytest.raises(CalibrationInputError, match="4 classes"):
        a.update(PB[:10], YB[:10])
    b = CalibrationState()
    b.update(PB[:10], YB[:10])
    with pytest.raises(CalibrationInputError, match="cannot merge"):
        a.merge(b)


def test_equal_mass_kumar_refused() -> None:
    """Equal-mass bins stream by the Nixon rule only (tests/test_calibration_state_equal_mass.py)."""
    with pytest.raises(CalibrationInputError, match="rule='kumar'"):
        CalibrationState(estimator=cp.EqualMass(15, rule="kumar"))


def test_other_refusals() -> None:
    with pytest.raises(CalibrationInputError, match="k-d tree"):
        CalibrationState(estimator=cp.KDTree(0.1))
    with pytest.raises(CalibrationInputError, match="no streamable preset"):
        CalibrationState.for_metric("full_ece")
    with pytest.raises(CalibrationInputError, match="not a calipers"):
        CalibrationState.from_json("{}")
    with pytest.raises(CalibrationInputError, match="no samples"):
        CalibrationState().compute()
