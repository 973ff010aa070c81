"""Files of quantiles, intervals and samples: ``calipers.io.read_predictive_file``.

Every format is written here from known arrays and must read back to exactly those
arrays, quantile columns ordered by level; each spelling of a quantile level must
give the float nearest the decimal written (``float("0.05")``, never ``5 * 0.01``).
Errors are ``PredictionFileError`` naming the file and the columns.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from calipers.io import (
    PredictionFileError,
    is_regression_file,
    predictive_file_kinds,
    read_predictive_file,
    read_regression_file,
)
from calipers.io.predictive_file import quantile_level_text

try:
    import torch
except ImportError:  # the .pt tests need PyTorch
    torch = None  # type: ignore[assignment]

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:  # the .parquet tests need pyarrow
    pa = pq = None  # type: ignore[assignment]

RNG = np.random.default_rng(7)
N = 23
Y = RNG.normal(size=N)
W = RNG.integers(1, 4, size=N).astype(np.float64)
Q = np.sort(RNG.normal(size=(N, 3)), axis=1)  # levels 0.05, 0.5, 0.95
S = RNG.normal(size=(N, 6))


def _write(path: Path, cols: dict[str, np.ndarray]) -> Path:
    """Named 1-D (or, but for CSV, 2-D) arrays in the format of ``path``'s suffix."""
    suffix = path.suffix
    if suffix == ".csv":
        lines = [",".join(cols)] + [
            ",".join(repr(float(v)) for v in row) for row in zip(*cols.values(), strict=True)
        ]
        path.write_text("\n".join(lines) + "\n")
    elif suffix == ".npz":
        np.savez(path, **cols)
    elif suffix == ".npy":
        dt = [(k, np.float64, v.shape[1:]) for k, v in cols.items()]
        rec = np.zeros(len(next(iter(cols.values()))), dtype=dt)
        for k, v in cols.items():
            rec[k] = v
        np.save(path, rec)
    elif suffix == ".parquet":
        if pa is None:
            pytest.skip("pyarrow is not installed")
        arrays = {k: pa.array(list(v) if v.ndim == 2 else v) for k, v in cols.items()}
        pq.write_table(pa.table(arrays), path)
    else:
        if torch is None:
            pytest.skip("PyTorch is not installed")
        torch.save({k: torch.as_tensor(v) for k, v in cols.items()}, path)
    return path


# ------------------------------------------------------------------ level names


@pytest.mark.parametrize(
    ("name", "text", "prefix"),
    [
        ("q0.05", "0.05", ""),
        ("Q0.05", "0.05", ""),
        ("quantile_0.05", "0.05", ""),
        ("quantile0.05", "0.05", ""),
        ("q_0.05", "0.05", ""),
        ("q05", "0.05", ""),
        ("q5", "0.05", ""),
        ("q95", "0.95", ""),
        ("q_5", "0.05", ""),
        ("0.05", "0.05", ""),
        (".05", "0.05", ""),
        ("5%", "0.05", ""),
        ("97.5%", "0.975", ""),
        ("q2.5%", "0.025", ""),
        ("percentile_5", "0.05", ""),
        ("percentile_2.5", "0.025", ""),
        ("target_q0.05", "0.05", "target"),
        ("sales_q0.90", "0.9", "sales"),
        ("target_0.05", "0.05", "target"),
        ("q0.1", "0.1", ""),
    ],
)
def test_level_spellings(name: str, text: str, prefix: str) -> None:
    assert quantile_level_text(name) == (text, prefix)
    assert float(Decimal(text)) == float(text)


@pytest.mark.parametrize(
    "name", ["x1", "feature_3", "sample_0", "s0", "p0", "p10", "label", "5", "y", "mean", "q"]
)
def test_names_that_state_no_level(name: str) -> None:
    assert quantile_level_text(name) is None


def test_levels_are_the_floats_written(tmp_path: Path) -> None:
    # q7 (percent) must be float("0.07"), which 7 * 0.01 and 7 / 100 * 1.0 are not all
    f = _write(tmp_path / "q.csv", {"q7": Q[:, 0], "q0.29": Q[:, 1], "q57%": Q[:, 2], "y": Y})
    pf = read_predictive_file(f)
    assert pf.levels == ("0.07", "0.29", "0.57")
    assert pf.level_values.tolist() == [0.07, 0.29, 0.57]
    assert 57 * 0.01 != 0.57  # what a naive reading would give


# ------------------------------------------------------------------ every format


@pytest.mark.parametrize("suffix", [".csv", ".npz", ".npy", ".parquet", ".pt"])
def test_quantile_columns_every_format(tmp_path: Path, suffix: str) -> None:
    # written out of level order, with weights and an unused column
    cols = {"q95": Q[:, 2], "id": np.arange(N) * 1.0, "q5": Q[:, 0], "q50": Q[:, 1], "y": Y}
    f = _write(tmp_path / f"q{suffix}", {**cols, "weight": W})
    assert predictive_file_kinds(f) == ("quantiles",)
    pf = read_predictive_file(f)
    assert pf.kind == "quantiles" and pf.levels == ("0.05", "0.5", "0.95")
    np.testing.assert_array_equal(pf.quantiles, Q)
    np.testing.assert_array_equal(pf.targets, Y)
    np.testing.assert_array_equal(pf.sample_weight, W)
    assert "'id'" in pf.note and "q5" in pf.note


@pytest.mark.parametrize("suffix", [".csv", ".npz", ".npy", ".parquet", ".pt"])
def test_sample_columns_every_format(tmp_path: Path, suffix: str) -> None:
    cols = {f"sample_{j}": S[:, j] for j in (3, 0, 5, 1, 2, 4)}
    f = _write(tmp_path / f"s{suffix}", {**cols, "y_true": Y})
    assert predictive_file_kinds(f) == ("samples",)
    pf = read_predictive_file(f)
    assert pf.kind == "samples" and pf.sample_weight is None
    np.testing.assert_array_equal(pf.samples, S)  # members in number order
    np.testing.assert_array_equal(pf.targets, Y)


@pytest.mark.parametrize("suffix", [".npz", ".npy", ".parquet", ".pt"])
def test_sample_array_every_format(tmp_path: Path, suffix: str) -> None:
    f = _write(tmp_path / f"a{suffix}", {"samples": S, "y": Y})
    assert predictive_file_kinds(f) == ("samples",)
    pf = read_predictive_file(f)
    np.testing.assert_array_equal(pf.samples, S)
    assert pf.note == "samples from 'samples', targets from 'y'"


@pytest.mark.parametrize("suffix", [".npz", ".pt"])
def test_quantiles_array_with_levels(tmp_path: Path, suffix: str) -> None:
    f = _write(
        tmp_path / f"qa{suffix}",
        {"quantiles": Q[:, ::-1].copy(), "levels": np.array([0.95, 0.5, 0.05]), "y": Y},
    )
    pf = read_predictive_file(f)
    assert pf.levels == ("0.05", "0.5", "0.95")
    np.testing.assert_array_equal(pf.quantiles, Q)
    g = _write(tmp_path / f"qb{suffix}", {"quantiles": Q, "y": Y})
    with pytest.raises(PredictionFileError, match="needs its levels"):
        read_predictive_file(g)
    pf = read_predictive_file(g, quantile_levels="0.05,0.5,0.95")
    np.testing.assert_array_equal(pf.quantiles, Q)
    with pytest.raises(PredictionFileError, match="3 columns but 2 levels"):
        read_predictive_file(g, quantile_levels="0.05,0.95")


@pytest.mark.parametrize("name", ["q_0.05", "quantile_0.05", "0.05", "5%", "target_q0.05"])
def test_peer_spellings_on_csv(tmp_path: Path, name: str) -> None:
    hi = name.replace("0.05", "0.95").replace("5%", "95%")
    f = _write(tmp_path / "p.csv", {name: Q[:, 0], hi: Q[:, 2], "target": Y})
    pf = read_predictive_file(f)
    assert pf.levels == ("0.05", "0.95")
    np.testing.assert_array_equal(pf.quantiles, Q[:, [0, 2]])


def test_interval_with_its_level(tmp_path: Path) -> None:
    f = _write(tmp_path / "i.csv", {"lower": Q[:, 0], "upper": Q[:, 2], "y": Y})
    assert predictive_file_kinds(f) == ("interval",)
    with pytest.raises(PredictionFileError, match=r"'lower' and 'upper' do not say their level"):
        read_predictive_file(f)
    pf = read_predictive_file(f, interval_level="0.90")
    assert pf.kind == "interval" and pf.interval_level == "0.9"
    np.testing.assert_array_equal(pf.quantiles, Q[:, [0, 2]])
    with pytest.raises(PredictionFileError, match=r"interval level .* 1.5, not a quantile level"):
        read_predictive_file(f, interval_level=1.5)
    g = _write(tmp_path / "j.csv", {"lo_90": Q[:, 0], "hi_90": Q[:, 2], "y": Y})
    pf = read_predictive_file(g, lower_key="lo_90", upper_key="hi_90", interval_level=0.9)
    np.testing.assert_array_equal(pf.quantiles, Q[:, [0, 2]])


def test_explicit_columns_and_levels(tmp_path: Path) -> None:
    f = _write(tmp_path / "e.csv", {"low": Q[:, 0], "mid": Q[:, 1], "high": Q[:, 2], "obs": Y})
    assert predictive_file_kinds(f) == ()
    with pytest.raises(PredictionFileError, match="states no quantile level"):
        read_predictive_file(f, quantile_columns="low,mid,high", targets_key="obs")
    pf = read_predictive_file(
        f, quantile_columns=["high", "low", "mid"], quantile_levels="0.9,0.1,0.5", targets_key="obs"
    )
    assert pf.levels == ("0.1", "0.5", "0.9")
    np.testing.assert_array_equal(pf.quantiles, Q)
    g = _write(tmp_path / "m.csv", {"ens_0": S[:, 0], "ens_1": S[:, 1], "y": Y})
    pf = read_predictive_file(g, samples_key="ens")
    np.testing.assert_array_equal(pf.samples, S[:, :2])


# ------------------------------------------------------------------ the Gaussian stays as it was


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_gaussian_file_read_as_before(tmp_path: Path, suffix: str) -> None:
    # a Gaussian file with features named like samples (scikit-learn's diabetes s1..s6)
    cols = {"mean": Q[:, 1], "std": Q[:, 2] - Q[:, 0] + 1, "y": Y, "s1": S[:, 0], "s2": S[:, 1]}
    f = _write(tmp_path / f"g{suffix}", cols)
    assert is_regression_file(f)
    rf = read_regression_file(f)
    pf = read_predictive_file(f)
    assert pf.kind == "gaussian" and pf.gaussian is not None and pf.note == rf.note
    for k, v in rf.as_kwargs().items():
        got = pf.gaussian.as_kwargs()[k]
        assert (v is None and got is None) or np.array_equal(v, got)
    pf = read_predictive_file(f, kind="samples")
    np.testing.assert_array_equal(pf.samples, S[:, :2])


def test_classification_files_are_not_regression(tmp_path: Path) -> None:
    f = tmp_path / "c.csv"
    f.write_text("label,p0,p1\n0,0.4,0.6\n1,0.3,0.7\n")
    assert predictive_file_kinds(f) == ()
    np.savez(tmp_path / "c.npz", probs=np.full((3, 2), 0.5), labels=np.zeros(3, int))
    assert predictive_file_kinds(tmp_path / "c.npz") == ()


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("cols", "match"),
    [
        ({"q0.05": 0, "q1.5": 1, "y": 2}, r"'q1.5' gives level 1.5, not a quantile level"),
        ({"q0": 0, "q0.5": 1, "y": 2}, r"'q0' gives level 0, not a quantile level"),
        ({"q0.5": 0, "q50": 1, "y": 2}, r"'q0.5' and column 'q50' both give the quantile level"),
        (
            {"sample_0": 0, "sample_1": 1, "sample_3": 2, "y": 3},
            r"sample_0 \.\.\. sample_3 are ragged \(number 2 is missing\)",
        ),
        ({"s1": 0, "s2": 1, "s4": 2, "y": 3}, r"ragged \(number 3 is missing\)"),
        ({"lower": 0, "y": 1}, r"'lower' is one end of an interval but no upper end"),
        (
            {"q0.1": 0, "q0.9": 1, "sample_0": 2, "sample_1": 3, "y": 4},
            r"ambiguous: its columns could hold quantiles \('q0.1', 'q0.9'\) or samples",
        ),
        (
            {"a_q0.1": 0, "a_q0.9": 1, "b_q0.1": 2, "b_q0.9": 3, "y": 4},
            r"quantile columns fall in 2 groups .*quantile_columns=",
        ),
        ({"q0.1": 0, "q0.9": 1}, r"no column recognised as the targets"),
        ({"a": 0, "y": 1}, r"no columns recognised as regression predictions"),
    ],
)
def test_refusals_name_file_and_columns(tmp_path: Path, cols: dict[str, int], match: str) -> None:
    arrays = {k: S[:, v] for k, v in cols.items()}
    f = _write(tmp_path / "bad.csv", arrays)
    with pytest.raises(PredictionFileError, match=match) as err:
        read_predictive_file(f)
    assert str(f) in str(err.value) and "\n" not in str(err.value)


def test_missing_member_value_names_line_and_column(tmp_path: Path) -> None:
    f = tmp_path / "r.csv"
    f.write_text("sample_0,sample_1,y\n1,2,3\n1,,3\n")
    with pytest.raises(PredictionFileError, match=r"line 3, column 'sample_1': '' is not a number"):
        read_predictive_file(f)


def test_wrong_shapes_refused(tmp_path: Path) -> None:
    f = _write(tmp_path / "w.npz", {"samples": S[:, 0], "y": Y})
    with pytest.raises(PredictionFileError, match=r"'samples' \(samples\) has shape \(23,\)"):
        read_predictive_file(f)
    g = _write(tmp_path / "l.npz", {"samples": S, "y": Y[:-1]})
    with pytest.raises(PredictionFileError, match="have 22 rows but the predictions have 23"):
        read_predictive_file(g)
    h = tmp_path / "plain.npy"
    np.save(h, S)
    with pytest.raises(PredictionFileError, match="one unnamed array"):
        read_predictive_file(h)


def test_kind_contradicting_options_refused(tmp_path: Path) -> None:
    f = _write(tmp_path / "k.csv", {"q0.1": Q[:, 0], "q0.9": Q[:, 2], "y": Y})
    with pytest.raises(PredictionFileError, match="contradicts"):
        read_predictive_file(f, kind="samples", quantile_levels="0.1,0.9")
    with pytest.raises(PredictionFileError, match="kind must be one of"):
        read_predictive_file(f, kind="ensemble")


def test_features_named_like_samples_stay_features(tmp_path: Path) -> None:
    # scikit-learn's diabetes features are s1 ... s6: beside quantiles or sample_0.. they are
    # features (listed as not used), not an ensemble
    feats = {f"s{j}": S[:, j - 1] for j in range(1, 5)}
    f = _write(tmp_path / "q.csv", {**feats, "q0.1": Q[:, 0], "q0.9": Q[:, 2], "y": Y})
    assert predictive_file_kinds(f) == ("quantiles",)
    pf = read_predictive_file(f)
    assert pf.kind == "quantiles" and "'s1'" in pf.note
    g = _write(tmp_path / "e.csv", {**feats, "sample_0": Q[:, 0], "sample_1": Q[:, 2], "y": Y})
    pf = read_predictive_file(g)
    np.testing.assert_array_equal(pf.samples, Q[:, [0, 2]])
    h = _write(tmp_path / "s.csv", {**feats, "y": Y})  # alone, s1.. are an ensemble
    assert read_predictive_file(h).samples.shape == (N, 4)
