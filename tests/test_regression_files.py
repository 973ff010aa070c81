"""Tests for files of Gaussian regression predictions: ``calipers.io.read_regression_file``,
``is_regression_file`` and ``calipers table`` / ``calipers report`` on such files.

Every format is written by the test from known arrays and must read back to exactly
those arrays; errors must be ``PredictionFileError`` naming the file and the column
(and line, for text). The command-line table is compared with the functions of
``calipers.regression`` called here directly on the arrays (not on what was read),
and its NLL also with the closed form of the Gaussian log-likelihood.
"""

from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from calipers.cli import main
from calipers.io import (
    PredictionFileError,
    RegressionFile,
    is_regression_file,
    read_regression_file,
)
from calipers.regression import (
    check_gaussian,
    crps_gaussian,
    dawid_sebastiani,
    pit_histogram,
    quantile_calibration,
    variance_calibration,
)

try:
    import torch
except ImportError:  # the .pt tests need PyTorch
    torch = None  # type: ignore[assignment]

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError:  # the .parquet tests need pyarrow
    pa = pq = None  # type: ignore[assignment]

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
needs_pyarrow = pytest.mark.skipif(pa is None, reason="pyarrow is not installed")

RNG = np.random.default_rng(20240516)
N = 40
MU = RNG.normal(size=N)
SD = RNG.uniform(0.5, 2.0, size=N)
Y = RNG.normal(MU, 1.3 * SD)
W = RNG.integers(1, 4, size=N).astype(np.float64)


def _csv(path: Path, header: list[str], cols: list[np.ndarray]) -> Path:
    lines = [",".join(header)] + [
        ",".join(repr(float(v)) for v in row) for row in zip(*cols, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _write(path: Path, cols: dict[str, np.ndarray]) -> Path:
    """Write named 1-D arrays in the format of ``path``'s suffix."""
    suffix = path.suffix
    if suffix == ".csv":
        return _csv(path, list(cols), list(cols.values()))
    if suffix == ".npz":
        np.savez(path, **cols)
    elif suffix == ".parquet":
        pq.write_table(pa.table({k: pa.array(v) for k, v in cols.items()}), path)
    elif suffix in (".pt", ".pth"):
        torch.save({k: torch.as_tensor(v) for k, v in cols.items()}, path)
    return path


FORMATS = [
    pytest.param(".csv", id="csv"),
    pytest.param(".npz", id="npz"),
    pytest.param(".parquet", id="parquet", marks=needs_pyarrow),
    pytest.param(".pt", id="pt", marks=needs_torch),
]


# ============================================================================ reading


@pytest.mark.parametrize("suffix", FORMATS)
def test_every_format_mean_var(tmp_path: Path, suffix: str) -> None:
    f = _write(tmp_path / f"r{suffix}", {"mean": MU, "var": SD**2, "y": Y})
    rf = read_regression_file(f)
    assert isinstance(rf, RegressionFile)
    np.testing.assert_array_equal(rf.mean, MU)
    np.testing.assert_array_equal(rf.variance, SD**2)
    np.testing.assert_array_equal(rf.targets, Y)
    assert rf.std is None and rf.sample_weight is None and rf.path == str(f)
    assert rf.n_samples == N and rf.spread == "variance"
    assert is_regression_file(f)


@pytest.mark.parametrize("suffix", FORMATS)
def test_every_format_mean_std_weights(tmp_path: Path, suffix: str) -> None:
    f = _write(tmp_path / f"r{suffix}", {"MU": MU, "Sigma": SD, "Target": Y, "weight": W})
    rf = read_regression_file(f)
    np.testing.assert_array_equal(rf.mean, MU)
    np.testing.assert_array_equal(rf.std, SD)
    np.testing.assert_array_equal(rf.targets, Y)
    np.testing.assert_array_equal(rf.sample_weight, W)
    assert rf.variance is None and rf.spread == "std"
    G = check_gaussian(**rf.as_kwargs())
    np.testing.assert_allclose(G.variance, SD**2, rtol=1e-15)
    np.testing.assert_array_equal(G.sample_weight, W)
    assert is_regression_file(f)


@pytest.mark.parametrize(
    ("mean", "spread", "target"),
    [
        ("mu", "variance", "targets"),
        ("pred_mean", "sigma2", "y_true"),
        ("prediction", "pred_var", "label"),
        ("Mean", "SD", "TARGET"),
        ("mean", "stddev", "y"),
        ("mean", "pred_std", "y"),
    ],
)
def test_key_aliases(tmp_path: Path, mean: str, spread: str, target: str) -> None:
    f = _write(tmp_path / "r.npz", {mean: MU, spread: SD, target: Y, "sample_weight": W})
    rf = read_regression_file(f)
    is_var = spread.lower() in ("variance", "sigma2", "pred_var")
    assert (rf.variance is not None) == is_var and (rf.std is not None) != is_var
    np.testing.assert_array_equal(rf.targets, Y)
    np.testing.assert_array_equal(rf.sample_weight, W)
    assert f"mean from '{mean}'" in rf.note


def test_explicit_keys_and_unused_columns(tmp_path: Path) -> None:
    f = _csv(tmp_path / "r.csv", ["id", "m", "s2", "obs", "w"], [np.arange(N), MU, SD**2, Y, W])
    assert not is_regression_file(f)
    with pytest.raises(PredictionFileError, match=r"no column recognised as the mean"):
        read_regression_file(f)
    rf = read_regression_file(f, mean_key="M", variance_key="s2", targets_key="obs", weight_key="w")
    np.testing.assert_array_equal(rf.mean, MU)
    np.testing.assert_array_equal(rf.variance, SD**2)
    np.testing.assert_array_equal(rf.sample_weight, W)
    assert "not used: 'id'" in rf.note
    with pytest.raises(PredictionFileError, match=r"no column named 'nope' \(mean_key\)"):
        read_regression_file(f, mean_key="nope")


def test_both_variance_and_std_need_a_key(tmp_path: Path) -> None:
    f = _write(tmp_path / "r.npz", {"mean": MU, "var": SD**2, "std": SD, "y": Y})
    with pytest.raises(PredictionFileError, match=r"both a variance \('var'\) and a standard"):
        read_regression_file(f)
    rf = read_regression_file(f, std_key="std")
    assert rf.variance is None
    np.testing.assert_array_equal(rf.std, SD)
    rf = read_regression_file(f, variance_key="var")
    assert rf.std is None
    with pytest.raises(PredictionFileError, match="not both"):
        read_regression_file(f, variance_key="var", std_key="std")


def test_errors_name_file_and_column(tmp_path: Path) -> None:
    f = _write(tmp_path / "noy.npz", {"mean": MU, "var": SD**2})
    with pytest.raises(
        PredictionFileError, match=r"noy\.npz' has no array recognised as the targets"
    ):
        read_regression_file(f)
    assert not is_regression_file(f)
    f = _write(tmp_path / "short.npz", {"mean": MU, "var": SD[:-1] ** 2, "y": Y})
    with pytest.raises(PredictionFileError, match=rf"array 'var' \(variance\) has {N - 1} rows"):
        read_regression_file(f)
    f = _write(tmp_path / "twod.npz", {"mean": MU, "var": np.ones((N, 2)), "y": Y})
    with pytest.raises(PredictionFileError, match=r"array 'var' has shape \(40, 2\)"):
        read_regression_file(f)
    f = _write(tmp_path / "two.npz", {"mean": MU, "mu": MU, "var": SD**2, "y": Y})
    with pytest.raises(PredictionFileError, match=r"ambiguous: arrays 'mean', 'mu'.*mean_key"):
        read_regression_file(f)
    bad = tmp_path / "text.csv"
    bad.write_text("mean,var,y\n0.0,1.0,0.5\n0.1,high,0.2\n")
    with pytest.raises(PredictionFileError, match=r"text\.csv' line 3, column 'var': 'high'"):
        read_regression_file(bad)


def test_npy_and_pickles_refused(tmp_path: Path) -> None:
    f = tmp_path / "r.npy"
    np.save(f, np.stack([MU, SD, Y], axis=1))
    with pytest.raises(PredictionFileError, match=r"\.npy file.*\.csv, \.npz, \.parquet or \.pt"):
        read_regression_file(f)
    assert not is_regression_file(f)
    with pytest.raises(PredictionFileError, match="looks like a pickle"):
        read_regression_file(tmp_path / "r.pkl")


def test_object_arrays_refused_without_unpickling(tmp_path: Path) -> None:
    marker = tmp_path / "was_unpickled"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str, str]]:
            return (open, (str(marker), "w"))

    # an .npz whose 'var' member is a pickled object array that would create `marker`
    f = tmp_path / "obj.npz"
    with zipfile.ZipFile(f, "w") as z:
        for name, arr in (("mean", MU), ("y", Y)):
            with z.open(f"{name}.npy", "w") as fh:
                np.lib.format.write_array(fh, arr)
        # an object-array header written by hand, followed by a pickle stream (what
        # np.save writes for an object array), without asking NumPy to pickle anything
        with z.open("var.npy", "w") as fh:
            np.lib.format.write_array_header_1_0(
                fh, {"descr": "|O", "fortran_order": False, "shape": (N,)}
            )
            fh.write(pickle.dumps(Payload()))
    assert b"was_unpickled" in f.read_bytes()
    with pytest.raises(PredictionFileError, match=r"array 'var' contains Python objects"):
        read_regression_file(f)
    assert is_regression_file(f)  # names only: nothing is loaded
    assert not marker.exists()
    if torch is not None:
        g = tmp_path / "obj.pt"
        g.write_bytes(pickle.dumps({"mean": Payload(), "var": 1, "y": 2}))
        with pytest.raises(PredictionFileError, match="refused"):
            read_regression_file(g)
        assert not is_regression_file(g)
        assert not marker.exists()


@needs_pyarrow
def test_parquet_non_numeric_column(tmp_path: Path) -> None:
    f = tmp_path / "r.parquet"
    table = pa.table({"mean": MU, "var": [str(v) for v in SD**2], "y": Y})
    pq.write_table(table, f)
    with pytest.raises(PredictionFileError, match=r"column 'var' has type string"):
        read_regression_file(f)


@needs_torch
def test_pt_not_a_dict(tmp_path: Path) -> None:
    f = tmp_path / "r.pt"
    torch.save(torch.zeros(3), f)
    with pytest.raises(PredictionFileError, match="not a dict of tensors"):
        read_regression_file(f)
    assert not is_regression_file(f)


@pytest.mark.parametrize(
    ("mean", "std", "target"),
    [
        (
            "y_pred",
            "y_std",
            "y_true",
        ),  # uncertainty-toolbox's get_all_metrics(y_pred, y_std, y_true)
        ("y_mean", "y_std", "y"),  # scikit-learn: y_mean, y_std = gpr.predict(X, return_std=True)
        ("mean", "stddev", "y"),  # netcal: (mean, stddev) and y
        ("Y_PRED", "Y_STD", "Y_TEST"),
    ],
)
def test_common_spellings_of_the_peers(tmp_path: Path, mean: str, std: str, target: str) -> None:
    """The names other libraries give a mean, a standard deviation and a target are read
    as regression predictions (the std as a std, never as a variance)."""
    f = _csv(tmp_path / "peer.csv", [mean, std, target], [MU, SD, Y])
    assert is_regression_file(f)
    rf = read_regression_file(f)
    np.testing.assert_array_equal(rf.mean, MU)
    np.testing.assert_array_equal(rf.std, SD)
    np.testing.assert_array_equal(rf.targets, Y)
    assert rf.variance is None
    assert f"std from '{std}'" in rf.note


def test_uncertainty_toolbox_csv_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``calipers table`` on a y_pred,y_std,y_true file prints the regression table, with
    the NLL of the standard deviations (closed form here), not a classification error."""
    f = _csv(tmp_path / "gpr.csv", ["y_pred", "y_std", "y_true"], [MU, SD, Y])
    code, out, err = run(["table", str(f), "--format", "json"], capsys)
    assert code == 0, err
    assert "regression predictions (mean, std, targets)" in err
    row = json.loads(out)["models"][0]
    assert row["nll"] == pytest.approx(_closed_form_nll(MU, SD, Y, np.ones(N)), rel=1e-12)


def test_unrecognised_regression_file_names_the_regression_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file whose names are not recognised, with non-integer targets, is read as
    classification; the error then says which regression names or keys to use."""
    f = _csv(tmp_path / "odd.csv", ["estimate", "uncertainty", "y_true"], [MU, SD, Y])
    assert not is_regression_file(f)
    code, _, err = run(["table", str(f)], capsys)
    assert code != 0
    assert "is not a class index" in err
    for name in ("y_pred", "y_std", "--mean-key", "--std-key", "--targets-key"):
        assert name in err, name
    # and the keys it names work
    code, out, err = run(
        ["table", str(f), "--mean-key", "estimate", "--std-key", "uncertainty", "--format", "json"],
        capsys,
    )
    assert code == 0, err
    row = json.loads(out)["models"][0]
    assert row["nll"] == pytest.approx(_closed_form_nll(MU, SD, Y, np.ones(N)), rel=1e-12)
    # an .npz archive with no recognised names says the same
    g = _write(tmp_path / "odd.npz", {"estimate": MU, "uncertainty": SD, "obs": Y})
    from calipers.io import read_predictions

    with pytest.raises(PredictionFileError, match="regression predictions.*--mean-key"):
        read_predictions(g)


# ============================================================================ command line


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _expected(mu: np.ndarray, sd: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> dict:
    vc = variance_calibration(mu, std=sd, targets=y, sample_weight=w, n_bins=15)
    return {
        "dss": dawid_sebastiani(mu, std=sd, targets=y, sample_weight=w),
        "crps": crps_gaussian(mu, std=sd, targets=y, sample_weight=w),
        "pit_ks": pit_histogram(mu, std=sd, targets=y, sample_weight=w).ks_statistic,
        "interval_ce": quantile_calibration(
            mu, std=sd, targets=y, sample_weight=w
        ).mean_absolute_error,
        "ence": vc.ence,
        "mse_over_avg_var": vc.mse_over_avg_var,
        "se_var_ratio": vc.se_var_ratio,
    }


def _closed_form_nll(mu: np.ndarray, sd: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    per_row = 0.5 * np.log(2 * np.pi * sd**2) + (y - mu) ** 2 / (2 * sd**2)
    return float(np.sum(w * per_row) / np.sum(w))


def test_cli_table_matches_library(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a.npz", {"mean": MU, "var": SD**2, "y": Y})
    b = _csv(tmp_path / "b.csv", ["mu", "sd", "target", "weight"], [MU, SD, Y, W])
    code, out, err = run(["table", str(a), str(b), "--format", "json"], capsys)
    assert code == 0, err
    assert f"{a}: regression predictions (mean, variance, targets): {N} rows" in err
    assert f"{b}: regression predictions (mean, std, targets, weights): {N} rows" in err
    doc = json.loads(out)
    assert doc["kind"] == "regression"
    assert doc["columns"] == ["model", "n"] + [
        "nll",
        "dss",
        "crps",
        "pit_ks",
        "interval_ce",
        "ence",
        "mse_over_avg_var",
        "se_var_ratio",
    ]
    rows = {r["model"]: r for r in doc["models"]}
    for name, w in (("a", None), ("b", W)):
        row = rows[name]
        assert row["n"] == N
        ones = np.ones(N) if w is None else w
        assert row["nll"] == pytest.approx(_closed_form_nll(MU, SD, Y, ones), rel=1e-12)
        for key, value in _expected(MU, SD, Y, w).items():
            assert row[key] == pytest.approx(value, rel=1e-12, abs=1e-14), (name, key)
    # the weights matter: the two rows differ
    assert rows["a"]["crps"] != pytest.approx(rows["b"]["crps"], rel=1e-6)


def test_cli_text_markdown_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a.npz", {"mean": MU, "std": SD, "y": Y})
    code, out, _ = run(["table", str(a)], capsys)
    assert code == 0
    assert "regression calibration table" in out and "MSE/AvgVar" in out
    code, out, _ = run(["table", str(a), "--format", "markdown"], capsys)
    assert code == 0 and "| model | n | NLL | DSS | CRPS |" in out
    code, out, _ = run(["table", str(a), "--format", "csv", "--bins", "4"], capsys)
    assert code == 0
    header, row = out.strip().splitlines()
    assert header.startswith("model,n,nll,dss,crps,pit_ks,interval_ce,ence")
    ence = float(row.split(",")[header.split(",").index("ence")])
    assert ence == pytest.approx(variance_calibration(MU, std=SD, targets=Y, n_bins=4).ence)


def test_cli_keys_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _csv(tmp_path / "r.csv", ["m", "s", "obs"], [MU, SD, Y])
    code, out, err = run(
        ["table", str(f), "--mean-key", "m", "--std-key", "s", "--targets-key", "obs",
         "--format", "json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    crps = json.loads(out)["models"][0]["crps"]
    assert crps == pytest.approx(crps_gaussian(MU, std=SD, targets=Y), rel=1e-12)
    assert run(["table", "--mean-key", "m"], capsys)[0] == 2  # a key option needs a FILE


def test_cli_mixing_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a.npz", {"mean": MU, "var": SD**2, "y": Y})
    c = tmp_path / "c.npz"
    np.savez(c, probs=np.full((4, 2), 0.5), labels=np.array([0, 1, 0, 1]))
    code, out, err = run(["table", str(a), str(c)], capsys)
    assert code == 3 and out == ""
    assert "regression predictions" in err and "classification predictions" in err
    assert str(a) in err and str(c) in err


def test_cli_bad_value_names_file_and_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    var = SD**2
    var[3] = 0.0
    f = _csv(tmp_path / "bad.csv", ["mean", "var", "y"], [MU, var, Y])
    code, out, err = run(["table", str(f)], capsys)
    assert code == 3 and out == ""
    assert f"calipers: error: {f}: variance must be > 0" in err
    assert "row 3 is 0.0" in err and "counted from 0" in err


def test_cli_streaming_options_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path / "a.npz", {"mean": MU, "var": SD**2, "y": Y})
    for extra in (["--chunk-rows", "10"], ["--scheduler", "tcp://localhost:1"], ["--logits"]):
        code, _, err = run(["table", str(f), *extra], capsys)
        assert code == 3, extra
        assert f"{extra[0]} does not apply to regression files" in err


def test_cli_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path / "a.npz", {"mean": MU, "var": SD**2, "y": Y})
    code, out, err = run(["report", str(f), "--format", "json"], capsys)
    assert code == 0, err
    assert f"{f}: regression predictions (mean, variance, targets): {N} rows" in err
    (row,) = json.loads(out)["rows"]
    assert row["model"] == "a" and row["n"] == N
    crps = crps_gaussian(MU, variance=SD**2, targets=Y)
    assert row["metrics"]["crps"] == pytest.approx(crps, rel=1e-12)
    assert run(["report", str(f), "--chunk-rows", "5"], capsys)[0] == 3


def test_cli_report_recalibrates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--calibration FILE fits the three regression recalibrators on it; --recalibrate
    without it splits each file (seeded); the numbers are the library's on the same rows."""
    from calipers.recalibration import VarianceScaling

    rng = np.random.default_rng(11)
    mu_c, sd_c = rng.normal(size=300), rng.uniform(0.5, 2.0, 300)
    y_c = mu_c + 2.0 * sd_c * rng.normal(size=300)  # true sd twice the predicted one
    f = _write(tmp_path / "test.npz", {"mean": MU, "std": SD, "y": MU + 2.0 * SD * (Y - MU) / SD})
    c = _write(tmp_path / "cal.csv", {"mean": mu_c, "std": sd_c, "y": y_c})
    code, out, err = run(["report", str(f), "--calibration", str(c), "--format", "json"], capsys)
    assert code == 0, err
    rows = {r["method"]: r for r in json.loads(out)["rows"]}
    assert set(rows) == {
        "uncalibrated",
        "VarianceScaling",
        "VariancePlattScaling",
        "QuantileRecalibration",
    }
    yt = MU + 2.0 * (Y - MU)
    rc = VarianceScaling().fit(mu_c, std=sd_c, targets=y_c)
    gain = rc.improvement(MU, std=SD, targets=yt)
    assert rows["VarianceScaling"]["metrics"]["nll_improvement"] == pytest.approx(gain["nll"])
    # a split of the file itself, seeded: the same rows on a second run
    argv = ["report", str(c), "--recalibrate", "vscale", "--split", "0.4", "--format", "json"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "split 120 calibration / 180 test rows (random, seed 0)" in err
    perm = np.random.default_rng(0).permutation(300)
    ci, ti = np.sort(perm[:120]), np.sort(perm[120:])
    rc = VarianceScaling().fit(mu_c[ci], std=sd_c[ci], targets=y_c[ci])
    (after,) = [r for r in json.loads(out)["rows"] if r["method"] == "VarianceScaling"]
    assert after["n"] == 180
    assert after["metrics"]["nll_improvement"] == pytest.approx(
        rc.improvement(mu_c[ti], std=sd_c[ti], targets=y_c[ti])["nll"], rel=1e-12
    )
    code, _, err = run(["report", str(c), "--recalibrate", "ts"], capsys)
    assert code == 3 and "unknown regression recalibration method 'ts'" in err


def test_cli_diagram_of_a_regression_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pit / quantile / variance draw a regression file (the PNG's bars are the PIT
    histogram computed here); a classification diagram of it, or a regression diagram of a
    classification file, is refused with the kinds that apply."""
    import matplotlib

    matplotlib.use("Agg")
    f = _write(tmp_path / "r.csv", {"mean": MU, "std": SD, "y": Y})
    for kind in ("pit", "quantile", "variance"):
        out = tmp_path / f"{kind}.png"
        code, _, err = run(["diagram", kind, str(f), "--out", str(out), "--bins", "5"], capsys)
        assert code == 0, err
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from calipers.cli.diagram import _figure
    from calipers.cli.program import build_parser

    args = build_parser().parse_args(["diagram", "pit", str(f), "--bins", "5"])
    fig = _figure(args)
    (bars,) = fig.axes[0].containers  # the histogram's one BarContainer
    from scipy import stats

    counts, _ = np.histogram(stats.norm.cdf((Y - MU) / SD), bins=5, range=(0, 1))
    assert [b.get_height() for b in bars] == pytest.approx(counts.tolist())
    code, _, err = run(["diagram", "reliability", str(f), "--out", str(tmp_path / "x.png")], capsys)
    assert code == 3 and "its diagrams are pit, quantile, variance" in err
    c = tmp_path / "c.npz"
    np.savez(c, probs=np.full(4, 0.5), labels=np.array([0, 1, 0, 1]))
    code, _, err = run(["diagram", "pit", str(c), "--out", str(tmp_path / "x.png")], capsys)
    assert code == 3 and "is for regression predictions" in err
