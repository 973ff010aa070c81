"""Calibration within groups (calipers.subgroups), checked against independent computations.

Every number is recomputed here another way: the per-group errors with the
calipers metric on the group's rows alone, the noise levels by a brute-force
loop over label draws from the same seeded generator, the multicalibration
audit by a loop over groups and score bins, the single-bin noise level against
its exact binomial value.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import calipers as cp
from calipers.subgroups import (
    MulticalibrationAudit,
    SubgroupCalibration,
    WorstGroup,
    calibration_by_group,
    multicalibration_audit,
    worst_group,
)
from calipers.validation import CalibrationInputError


def _binary(n: int = 600, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, size=n)
    g = rng.choice(np.array(["a", "b", "c"]), size=n, p=[0.5, 0.3, 0.2])
    truth = np.where(g == "c", p**2, p)
    y = (rng.uniform(size=n) < truth).astype(int)
    return p, y, g


def _bin(p: np.ndarray, nb: int) -> np.ndarray:
    """Equal-width bins (lo, hi], 0 in the first: ceil(p nb) - 1."""
    return np.clip(np.ceil(p * nb).astype(int) - 1, 0, nb - 1)


# ----------------------------------------------------------------------------- per group


def test_per_group_numbers_equal_the_metric_on_each_subset() -> None:
    p, y, g = _binary()
    r = calibration_by_group(p, y, groups=g, n_resamples=0, n_null=0)
    assert isinstance(r, SubgroupCalibration)
    assert r.names == ["a", "b", "c"]
    for s in r.groups:
        m = g == s.group
        assert s.n == m.sum()
        assert s.error == cp.ece(p[m], y[m])  # the metric itself, bit for bit
        assert s.events == y[m].sum()
        assert s.mean_predicted == pytest.approx(p[m].mean(), rel=1e-12)
        assert s.observed_rate == pytest.approx(y[m].mean(), rel=1e-12)
        assert math.isnan(s.ci_low) and math.isnan(s.null_q95)
    assert r.overall.group == "all" and r.overall.error == cp.ece(p, y)


def test_any_registered_metric_and_its_keywords() -> None:
    p, y, g = _binary()
    r = calibration_by_group(p, y, groups=g, metric="ace", n_bins=5, n_resamples=0, n_null=0)
    assert r.metric == "ace"
    for s in r.groups:
        m = g == s.group
        assert s.error == cp.ace(p[m], y[m], n_bins=5)


def test_multiclass_top_label_and_weights() -> None:
    rng = np.random.default_rng(3)
    n, k = 500, 4
    probs = rng.dirichlet(np.ones(k), size=n)
    y = np.array([rng.choice(k, p=row) for row in probs])
    g = rng.integers(0, 3, size=n)
    w = rng.uniform(0.5, 2.0, size=n)
    r = calibration_by_group(probs, y, groups=g, sample_weight=w, n_resamples=0, n_null=0)
    conf = probs.max(1)
    correct = (probs.argmax(1) == y).astype(float)
    for s in r.groups:
        m = g == s.group
        assert s.error == pytest.approx(cp.ece(probs[m], y[m], sample_weight=w[m]), rel=1e-12)
        assert s.weight == pytest.approx(w[m].sum())
        assert s.events == pytest.approx((w[m] * correct[m]).sum())  # correct predictions
        assert s.mean_predicted == pytest.approx((w[m] * conf[m]).sum() / w[m].sum())


def test_intersections_of_attributes_are_every_combination_present() -> None:
    rng = np.random.default_rng(5)
    n = 400
    sex = rng.choice(["F", "M"], size=n)
    age = rng.choice(["<40", ">=40"], size=n)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    r = calibration_by_group(
        p, y, attributes={"sex": sex, "age": age}, n_resamples=0, n_null=0, min_size=1
    )
    expected = [f"sex={a} & age={b}" for a in ("F", "M") for b in ("<40", ">=40")]
    assert r.names == expected
    for s in r.groups:
        a, b = (part.split("=", 1)[1] for part in s.group.split(" & "))
        m = (sex == a) & (age == b)
        assert s.n == m.sum() and s.error == cp.ece(p[m], y[m])
    both = calibration_by_group(
        p, y, attributes={"sex": sex, "age": age}, combine="both", n_resamples=0, n_null=0
    )
    assert both.names[:4] == ["sex=F", "sex=M", "age=<40", "age=>=40"] and len(both.names) == 8


def test_noise_levels_equal_a_brute_force_loop_over_the_same_draws() -> None:
    p, y, g = _binary(n=300)
    B = 40
    r = calibration_by_group(p, y, groups=g, n_resamples=0, n_null=B, seed=11)
    rng = np.random.default_rng([11, 1])  # the documented stream of the draws
    U = rng.random((B, p.shape[0]))
    null = np.array(
        [[cp.ece(p[g == s], (U[b] < p)[g == s].astype(int)) for s in "abc"] for b in range(B)]
    )
    for j, s in enumerate(r.groups):
        assert s.null_mean == pytest.approx(null[:, j].mean(), rel=1e-10)
        assert s.null_q95 == pytest.approx(np.quantile(null[:, j], 0.95), rel=1e-10)
        assert s.p_value == (1 + np.sum(null[:, j] >= s.error - 1e-12)) / (1 + B)
    np.testing.assert_allclose(r.max_null, null.max(axis=1), rtol=1e-10)
    # the generic path (a function of our own, no vectorised form) draws the same labels
    r2 = calibration_by_group(
        p,
        y,
        groups=g,
        metric=lambda P, _, **kw: cp.ece(P, None, **kw),
        n_resamples=0,
        n_null=B,
        seed=11,
    )
    np.testing.assert_allclose(r2.max_null, r.max_null, rtol=1e-10)


def test_noise_level_of_one_bin_is_the_binomial_mean_absolute_deviation() -> None:
    # one bin and a constant risk: ECE = |mean(y) - p|; under the null mean(y) ~ Binom(n, p) / n
    from scipy.stats import binom

    n, p0, B = 60, 0.3, 4000
    p = np.full(n, p0)
    y = (np.arange(n) < 18).astype(int)
    r = calibration_by_group(
        p, y, groups=np.zeros(n, int), n_bins=1, n_resamples=0, n_null=B, seed=1
    )
    k = np.arange(n + 1)
    dev = np.abs(k / n - p0)
    exact_mean = float(np.sum(binom.pmf(k, n, p0) * dev))
    sd = float(np.sqrt(np.sum(binom.pmf(k, n, p0) * dev**2) - exact_mean**2))
    s = r.groups[0]
    assert abs(s.null_mean - exact_mean) < 4 * sd / np.sqrt(B)
    # about sqrt(2 / pi) sqrt(p (1 - p) / n), the normal approximation
    assert s.null_mean == pytest.approx(np.sqrt(2 / np.pi) * np.sqrt(p0 * 0.7 / n), rel=0.1)
    # the 95th percentile: the exact binomial quantile of |k / n - p0| (a value of dev)
    order = np.argsort(dev)
    cdf = np.cumsum(binom.pmf(k, n, p0)[order])
    q95 = dev[order][np.searchsorted(cdf, 0.95)]
    assert s.null_q95 == pytest.approx(q95, abs=1 / n + 1e-12)


def test_seeded_and_reproducible() -> None:
    p, y, g = _binary()
    a = calibration_by_group(p, y, groups=g, n_resamples=200, n_null=100, seed=4)
    b = calibration_by_group(p, y, groups=g, n_resamples=200, n_null=100, seed=4)
    c = calibration_by_group(p, y, groups=g, n_resamples=200, n_null=100, seed=5)
    assert a == b and np.array_equal(a.max_null, b.max_null)
    assert a.groups[0].null_mean != c.groups[0].null_mean
    for s in a.groups:
        assert s.ci_low <= s.ci_high


def test_bootstrap_interval_is_the_metric_interval_of_the_group() -> None:
    p, y, g = _binary()
    r = calibration_by_group(p, y, groups=g, n_resamples=300, n_null=0, seed=2)
    for s in r.groups:
        m = g == s.group
        # the group's own interval with some seed: its width matches a fresh bootstrap's
        ci = cp.confidence_interval(cp.ece, p[m], y[m], n_resamples=300, seed=99)
        assert s.ci_high - s.ci_low == pytest.approx(ci.high - ci.low, rel=0.35)
        assert ci.estimate == pytest.approx(s.error, rel=1e-12)


def test_a_miscalibrated_group_exceeds_its_noise_and_a_calibrated_one_does_not() -> None:
    p, y, g = _binary(n=3000, seed=8)
    r = calibration_by_group(p, y, groups=g, n_resamples=0, n_null=300)
    assert r["c"].exceeds_noise and r["c"].p_value < 0.01
    assert not r["a"].exceeds_noise


def test_reliability_table_of_a_group_and_plain_outputs() -> None:
    pytest.importorskip("pandas")
    p, y, g = _binary()
    r = calibration_by_group(p, y, groups=g, n_resamples=50, n_null=20)
    m = g == "b"
    t = r.reliability_table("b", n_bins=10)
    ref = cp.reliability_table(p[m], y[m], n_bins=10)
    assert t.equals(ref)
    assert r.reliability_table("all", n_bins=10).equals(cp.reliability_table(p, y, n_bins=10))
    with pytest.raises(CalibrationInputError, match="no group 'z'"):
        r.reliability_table("z")
    tab = r.table()
    assert list(tab["group"]) == ["a", "b", "c", "all"]
    assert {"error", "null_q95", "ci_low", "exceeds_noise"} <= set(tab.columns)
    rec = r.table(as_frame=False)
    assert rec.group.tolist() == ["a", "b", "c", "all"]
    json.dumps(r.to_dict())


def test_small_groups_are_skipped_and_listed() -> None:
    p, y, g = _binary(n=200)
    g = g.astype(object)
    g[:3] = "tiny"
    r = calibration_by_group(p, y, groups=g, min_size=10, n_resamples=0, n_null=0)
    assert "tiny" not in r.names and r.skipped == (("tiny", 3),)


# ----------------------------------------------------------------------------- worst group


def test_worst_group_over_thresholds_equals_brute_force() -> None:
    rng = np.random.default_rng(2)
    n = 800
    p = rng.uniform(0.05, 0.95, size=n)
    age = rng.integers(18, 90, size=n)
    y = (rng.uniform(size=n) < np.where(age > 65, p / 2, p)).astype(int)
    B = 30
    w = worst_group(p, y, features={"age": age}, n_thresholds=3, n_resamples=0, n_null=B, seed=3)
    assert isinstance(w, WorstGroup)
    groups = {}
    for t in np.unique(np.quantile(age, [0.25, 0.5, 0.75], method="lower")):
        groups[f"age <= {t:g}"] = age <= t
        groups[f"age > {t:g}"] = age > t
    assert w.by_group.names == list(groups)
    errors = {k: cp.ece(p[m], y[m]) for k, m in groups.items()}
    best = max(errors, key=errors.__getitem__)
    assert w.group == best and w.error == errors[best]
    rng2 = np.random.default_rng([3, 1])
    U = rng2.random((B, n))
    mx = np.array(
        [max(cp.ece(p[m], (U[b] < p)[m].astype(int)) for m in groups.values()) for b in range(B)]
    )
    assert w.family_null_mean == pytest.approx(mx.mean(), rel=1e-10)
    assert w.family_p_value == (1 + np.sum(mx >= w.error - 1e-12)) / (1 + B)
    assert w.exceeds_noise
    assert "worst of 6 groups" in str(w)
    json.dumps(w.to_dict())


def test_worst_group_of_a_calibrated_model_is_within_noise() -> None:
    rng = np.random.default_rng(12)
    n = 1000
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    g = rng.integers(0, 8, size=n)
    w = worst_group(p, y, groups=g, n_resamples=0, n_null=200)
    # the worst of 8 groups exceeds its own noise level more often than 5 %, not the family's
    assert not w.exceeds_noise and w.family_p_value > 0.05
    assert w.family_null_q95 > max(s.null_q95 for s in w.by_group.groups) * 0.99


# ----------------------------------------------------------------------------- audit


def _audit_data(n: int = 1500, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    a, b = rng.integers(0, 2, n), rng.integers(0, 3, n)
    q = np.where((a == 1) & (b == 2), np.clip(p + 0.25, 0, 1), p)
    y = (rng.uniform(size=n) < p).astype(int)
    return q, y, a, b


def _brute_audit(q, y, masks, nb, normalization, gamma=0.0, min_cell=1):
    n = q.shape[0]
    bins = _bin(q, nb)
    best = (-1.0, None, None)
    for name, m in masks.items():
        if normalization == "conditional" and m.mean() < gamma:
            continue
        for v in range(nb):
            c = m & (bins == v)
            if not c.any() or (normalization == "conditional" and c.sum() < min_cell):
                continue
            val = abs(np.sum(y[c] - q[c])) / (n if normalization == "joint" else c.sum())
            if val > best[0]:
                best = (val, name, v)
    return best


@pytest.mark.parametrize("normalization", ["joint", "conditional"])
def test_audit_maximum_equals_a_loop_over_groups_and_bins(normalization: str) -> None:
    q, y, a, b = _audit_data()
    masks = {f"a={i} & b={j}": (a == i) & (b == j) for i in range(2) for j in range(3)}
    masks["a=1"] = a == 1
    B = 25
    audit = multicalibration_audit(
        q,
        y,
        masks=masks,
        include_all=False,
        n_bins=8,
        normalization=normalization,
        gamma=0.1,
        min_cell_size=15,
        n_null=B,
        seed=6,
    )
    assert isinstance(audit, MulticalibrationAudit)
    val, name, v = _brute_audit(q, y, masks, 8, normalization, gamma=0.1, min_cell=15)
    assert audit.violation == pytest.approx(val, rel=1e-12)
    assert (audit.group, audit.bin) == (name, v)
    assert (audit.bin_lower, audit.bin_upper) == (v / 8, (v + 1) / 8)
    c = masks[name] & (_bin(q, 8) == v)
    assert audit.n == c.sum() and audit.share == pytest.approx(c.mean())
    assert audit.mean_predicted == pytest.approx(q[c].mean())
    assert audit.observed_rate == pytest.approx(y[c].mean())
    # the null: the same loop on labels drawn from the predictions, same generator
    rng = np.random.default_rng([6, 1])
    U = rng.random((B, q.shape[0]))
    null = [
        _brute_audit(q, (U[d] < q).astype(float), masks, 8, normalization, 0.1, 15)[0]
        for d in range(B)
    ]
    np.testing.assert_allclose(audit.null_distribution, null, rtol=1e-10)
    assert audit.p_value == (1 + np.sum(np.array(null) >= audit.violation - 1e-12)) / (1 + B)
    assert audit.exceeds_noise


def test_audit_of_one_cell_against_the_binomial_noise() -> None:
    from scipy.stats import binom

    n, p0 = 80, 0.4
    q = np.full(n, p0)
    y = (np.arange(n) < 32).astype(int)
    audit = multicalibration_audit(
        q, y, groups=np.zeros(n, int), include_all=False, n_bins=1, n_null=4000, seed=0
    )
    k = np.arange(n + 1)
    exact = float(np.sum(binom.pmf(k, n, p0) * np.abs(k / n - p0)))
    assert audit.violation == pytest.approx(0.0, abs=1e-12)
    assert audit.null_mean == pytest.approx(exact, rel=0.05)
    assert audit.null_mean == pytest.approx(np.sqrt(2 / np.pi * p0 * (1 - p0) / n), rel=0.1)


def test_audit_of_a_calibrated_model_is_within_noise_and_table() -> None:
    rng = np.random.default_rng(4)
    n = 2000
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    a = rng.integers(0, 4, n)
    audit = multicalibration_audit(p, y, attributes={"a": a}, n_null=300)
    assert not audit.exceeds_noise and audit.p_value > 0.05
    assert audit.n_groups == 5  # four groups and "all"
    pytest.importorskip("pandas")
    t = audit.table()
    assert t["violation"].iloc[0] == audit.violation
    assert t["n"].sum() == 2 * n  # every row once in its group, once in "all"
    json.dumps(audit.to_dict())
    assert "largest joint violation" in str(audit)


def test_audit_multiclass_is_of_the_top_label() -> None:
    rng = np.random.default_rng(9)
    n = 600
    probs = rng.dirichlet(np.ones(3), size=n)
    y = np.array([rng.choice(3, p=r) for r in probs])
    g = rng.integers(0, 2, n)
    audit = multicalibration_audit(probs, y, groups=g, n_bins=5, n_null=20)
    conf = probs.max(1)
    correct = (probs.argmax(1) == y).astype(float)
    masks = {0: g == 0, 1: g == 1, "all": np.ones(n, bool)}
    val, name, v = _brute_audit(conf, correct, masks, 5, "joint")
    assert audit.violation == pytest.approx(val, rel=1e-12) and audit.group == name


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "name the groups"),
        ({"groups": np.zeros(5)}, r"groups must hold one value per row of probs, shape \(100,\)"),
        ({"masks": {"m": np.zeros(100, bool)}}, r"masks\['m'\] selects no row"),
        ({"masks": {"m": np.zeros(100)}}, r"masks\['m'\] must be booleans"),
        ({"masks": {"m": np.ones(99, bool)}}, r"masks\['m'\] must hold one value per row"),
        ({"groups": np.arange(100)}, "no group has min_size = 10 rows"),
        ({"groups": np.zeros(100), "min_size": 0}, "min_size must be an integer >= 1"),
        ({"attributes": {"a": np.zeros(100)}, "combine": "all"}, "combine must be one of"),
        ({"features": {"x": np.full(100, np.nan)}}, r"features\['x'\] must be finite; row 0"),
        ({"features": {"x": np.array(["a"] * 100)}}, r"features\['x'\] must be numbers"),
        ({"groups": np.zeros(100), "metric": "nope"}, "unknown metric 'nope'"),
        (
            {"groups": np.zeros(100), "n_null": -1},
            r"n_null must be an integer in \[0, 1000000\]; got -1",
        ),
        ({"groups": np.zeros(100), "confidence_level": 1.5}, "confidence_level must be"),
        ({"groups": np.zeros(100), "seed": -2}, "seed must be a non-negative integer"),
    ],
)
def test_refusals_say_what_and_where(kwargs: dict, match: str) -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=100)
    y = (rng.uniform(size=100) < p).astype(int)
    with pytest.raises(CalibrationInputError, match=match):
        calibration_by_group(p, y, n_resamples=0, **kwargs)


def test_audit_and_worst_group_refusals() -> None:
    rng = np.random.default_rng(0)
    p = rng.uniform(size=100)
    y = (rng.uniform(size=100) < p).astype(int)
    g = rng.integers(0, 2, 100)
    with pytest.raises(CalibrationInputError, match="normalization must be"):
        multicalibration_audit(p, y, groups=g, normalization="max")
    with pytest.raises(CalibrationInputError, match="gamma must be a number in"):
        multicalibration_audit(p, y, groups=g, normalization="conditional", gamma=1.0)
    with pytest.raises(CalibrationInputError, match="no cell is audited"):
        multicalibration_audit(p, y, groups=g, normalization="conditional", min_cell_size=101)
    with pytest.raises(
        CalibrationInputError, match=r"n_null must be an integer in \[1, 1000000\]; got 0"
    ):
        multicalibration_audit(p, y, groups=g, n_null=0)
    with pytest.raises(CalibrationInputError, match="worst_group needs n_null >= 1"):
        worst_group(p, y, groups=g, n_null=0)
    with pytest.raises(CalibrationInputError, match="one value per row"):
        worst_group(p, y, groups=g[:50])


# ----------------------------------------------------------------------------- inputs


def test_integer_weights_equal_repeated_rows() -> None:
    rng = np.random.default_rng(21)
    n = 300
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    g = rng.integers(0, 2, n)
    k = rng.integers(0, 3, n)  # weight 0 drops a row
    rep = np.repeat(np.arange(n), k)
    a = calibration_by_group(p, y, groups=g, sample_weight=k, n_resamples=0, n_null=0, min_size=1)
    b = calibration_by_group(p[rep], y[rep], groups=g[rep], n_resamples=0, n_null=0, min_size=1)
    for s, t in zip(a.groups, b.groups, strict=True):
        assert s.error == pytest.approx(t.error, rel=1e-12)
        assert s.weight == t.n and s.events == t.events
    ma = multicalibration_audit(p, y, groups=g, sample_weight=k, n_null=5)
    mb = multicalibration_audit(p[rep], y[rep], groups=g[rep], n_null=5)
    assert ma.violation == pytest.approx(mb.violation, rel=1e-12) and ma.group == mb.group


def test_torch_tensors_give_the_numpy_numbers() -> None:
    torch = pytest.importorskip("torch")
    p, y, _ = _binary(n=200)
    g = np.random.default_rng(1).integers(0, 2, 200)
    a = calibration_by_group(p, y, groups=g, n_resamples=50, n_null=50)
    b = calibration_by_group(
        torch.tensor(p), torch.tensor(y), groups=torch.tensor(g), n_resamples=50, n_null=50
    )
    assert a == b


def test_str_is_one_line_per_group_with_the_numbers_and_the_reading():
    from calipers.subgroups import calibration_by_group

    rng = np.random.default_rng(31)
    p = rng.uniform(0.05, 0.95, 600)
    y = (rng.random(600) < p).astype(int)
    y[:300] = (rng.random(300) < p[:300] ** 2).astype(int)  # group "a" over-predicted
    g = np.where(np.arange(600) < 300, "a", "b")
    r = calibration_by_group(p, y, groups=g, n_null=200, n_resamples=100)
    lines = str(r).splitlines()
    assert len(lines) == 1 + 3  # heading, a, b, all
    for line, stats in zip(lines[1:], (r["a"], r["b"], r.overall), strict=True):
        assert line.startswith(f"  {stats.group} (n = {stats.n}): {stats.error:.4g} [")
        assert line.endswith(
            "exceeds the noise" if stats.error > stats.null_q95 else "within the noise"
        )
    assert lines[1].endswith("exceeds the noise")
