"""Tests for the ``calipers`` program (``calipers.cli``, ``python -m calipers``).

Most tests run the program in-process through ``calipers.cli.main([...])`` and check
its return code and output; two run it as a separate process to check the installed
entry points. Numbers in the JSON output are compared with the library's functions on
the same arrays and, independently, with values computed by hand on a 4-row file.
"""

from __future__ import annotations

import csv
import dataclasses
import doctest
import io
import json
import math
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import calipers as cp
from calipers import cli
from calipers.cli import main
from calipers.datasets import load_default_predictions
from shared_data import available, data_dir, missing_reason

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = data_dir() or ROOT.parent / "shared" / "data"
METRIC_KEYS = [
    "accuracy",
    "nll",
    "brier",
    "ece",
    "ace",
    "sce",
    "tace",
    "mce",
    "rmsce",
    "classwise_ece",
    "bin_averaged_ece",
]

# 4 rows, 2 classes; predictions 0, 0, 1, 1 against labels 0, 1, 1, 1
TINY_CSV = "label,p0,p1\n0,0.95,0.05\n1,0.85,0.15\n1,0.25,0.75\n1,0.35,0.65\n"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    code, out, err = run([*argv, "--format", "json"], capsys)
    assert code == 0, err
    return json.loads(out)


def library_values(P: cp.Predictions, n_bins: int = 15) -> dict[str, float]:
    """The table's numbers straight from the public functions."""
    return {
        "accuracy": cp.accuracy(P, None),
        "nll": cp.nll(P, None),
        "brier": cp.brier(P, None),
        "ece": cp.ece(P, None, n_bins=n_bins),
        "ace": cp.ace(P, None, n_bins=n_bins),
        "sce": cp.sce(P, None, n_bins=n_bins),
        "tace": cp.tace(P, None, n_bins=n_bins),
        "mce": cp.mce(P, None, n_bins=n_bins),
        "rmsce": cp.rmsce(P, None, n_bins=n_bins),
        "classwise_ece": cp.classwise_ece(P, None, n_bins=n_bins),
        "bin_averaged_ece": cp.bin_averaged_ece(P, None, n_bins=n_bins),
    }


def as_float(v: object) -> float:
    return float(v)  # type: ignore[arg-type]  # JSON writes inf as the string "inf"


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    f = tmp_path / "tiny.csv"
    f.write_text(TINY_CSV)
    return f


# ----------------------------------------------------------------------------- basics


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--version"], capsys)
    assert code == 0
    assert out.strip() == f"calipers {cp.__version__}"


def test_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    assert "examples:" in out and "calipers demo --out demo/" in out and "exit status" in out
    code, out, _ = run(["table", "--help"], capsys)
    assert code == 0
    for opt in (
        "--bins",
        "--format",
        "--out",
        "--logits",
        "--labels",
        "--nll-clip",
        "--renormalize",
    ):
        assert opt in out
    assert "calipers table preds.npz" in out


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["table", "--bins", "0"],
        ["table", "--bins", "many"],
        ["table", "--format", "xml"],
        ["table", "--nll-clip", "0.7"],
        ["table", "--labels", "y.npy"],  # needs a FILE
        ["table", "--logits"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2
    assert "usage:" in err
    assert "Traceback" not in err


# ----------------------------------------------------------------------------- the default


def test_default_table_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["table"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("calipers ") and "calibration table" in lines[0]
    header = " ".join(out.split("\n\n")[0].split())
    assert "source: embedded default, as no prediction file was given" in header
    assert "all 1797 rows, 10 classes" in header
    for name in ("gaussian_nb", "random_forest", "logistic_regression"):
        assert sum(line.startswith(name) for line in lines) == 1
    nb = next(line for line in lines if line.startswith("gaussian_nb"))
    assert nb.split()[3] == "inf"  # model, n, accuracy, NLL
    assert "NLL is inf for gaussian_nb: 19 of 1797 rows give probability 0" in out
    assert "--nll-clip" in out


def test_default_json_matches_library(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(["table"], capsys)
    d = load_default_predictions()
    assert [m["model"] for m in doc["models"]] == list(d.model_names)
    assert "embedded default" in doc["sources"][0]
    for row in doc["models"]:
        P = cp.check_predictions(d.probs[row["model"]], d.labels)
        assert row["n"] == 1797 and row["n_classes"] == 10
        for key, value in library_values(P).items():
            assert as_float(row[key]) == value, key
    nb = doc["models"][0]
    assert nb["nll"] == "inf"  # strict JSON has no infinity
    assert any("NLL is inf for gaussian_nb" in n for n in doc["notes"])


def test_nll_clip_column(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(["table", "--nll-clip", "1e-15"], capsys)
    d = load_default_predictions()
    nb = doc["models"][0]
    assert nb["nll"] == "inf"
    assert nb["nll_clipped"] == cp.nll(d.probs["gaussian_nb"], d.labels, clip=1e-15)
    assert math.isfinite(nb["nll_clipped"])
    code, out, _ = run(["table", "--nll-clip", "1e-15"], capsys)
    assert "NLL@1e-15" in out


def test_bins_option(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(["table", "--bins", "10"], capsys)
    d = load_default_predictions()
    row = doc["models"][1]
    P = cp.check_predictions(d.probs[row["model"]], d.labels)
    assert doc["settings"]["n_bins"] == 10
    for key, value in library_values(P, n_bins=10).items():
        assert as_float(row[key]) == value, key


def test_markdown_and_csv_formats(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["table", "--format", "markdown"], capsys)
    assert code == 0
    assert "| model | n | accuracy | NLL |" in out
    assert "| gaussian_nb | 1797 | 0.8509 | inf |" in out
    code, out, err = run(["table", "--format", "csv"], capsys)
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["model"] for r in rows] == ["gaussian_nb", "random_forest", "logistic_regression"]
    assert rows[0]["nll"] == "inf"
    d = load_default_predictions()
    assert float(rows[2]["ece"]) == cp.ece(d.probs["logistic_regression"], d.labels)
    assert "embedded default" in err  # provenance and notes go to stderr for CSV


def test_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["demo", "--out", str(tmp_path / "t"), "--table-only"], capsys)
    assert code == 0, err
    code2, table_out, _ = run(["table"], capsys)
    assert out == table_out
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == [
        ".calipers-report",
        "table.json",
        "table.md",
    ]
    target = tmp_path / "demo" / "nested"
    code, out, err = run(["demo", "--out", str(target), "--recalibrate", "ts,mrr"], capsys)
    assert code == 0, err
    assert "gaussian_nb" in out
    names = sorted(p.name for p in target.iterdir())
    assert names == [
        ".calipers-report",
        "figures",
        "report.html",
        "report.json",
        "report.md",
        "report.tex",
        "table.json",
        "table.md",
    ]
    doc = json.loads((target / "table.json").read_text())
    assert [m["model"] for m in doc["models"]] == list(load_default_predictions().model_names)
    assert "| gaussian_nb | 1797 |" in (target / "table.md").read_text()
    # the report's numbers are the library's, on the test half of the embedded split
    d = load_default_predictions()
    test = ~d.is_calibration
    rep = json.loads((target / "report.json").read_text())
    rows = {(r["model"], r["method"]): r for r in rep["rows"]}
    lr = rows[("logistic_regression", "uncalibrated")]["metrics"]
    assert lr["ece"] == pytest.approx(
        cp.ece(d.probs["logistic_regression"][test], d.labels[test]), rel=1e-9
    )
    ts = cp.TemperatureScaling().fit(d.logits["logistic_regression"][~test], d.labels[~test])
    p_ts = ts.predict_proba(d.logits["logistic_regression"][test])
    assert rows[("logistic_regression", "TemperatureScaling")]["metrics"]["nll"] == pytest.approx(
        cp.nll(p_ts, d.labels[test]), rel=1e-9
    )
    # TS cannot take the naive Bayes probabilities (exact zeros): no row, a note that says why
    assert ("gaussian_nb", "TemperatureScaling") not in rows
    (na,) = [x for x in rep["not_applicable"] if x["model"] == "gaussian_nb"]
    assert na["method"] == "TemperatureScaling" and "needs logits" in na["reason"]
    assert rows[("gaussian_nb", "uncalibrated")]["metrics"]["nll"] == "inf"
    assert len(list((target / "figures").glob("*.png"))) == 3 * 7
    html_text = (target / "report.html").read_text()
    assert html_text.count("data:image/png;base64,") == 3 * 7 and "<table" in html_text


# ----------------------------------------------------------------------------- files


def test_hand_computed_tiny_file(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Numbers worked out by hand, independently of calipers' code.

    Confidences 0.95, 0.85, 0.75, 0.65 (predicted classes 0, 0, 1, 1; labels 0, 1, 1, 1,
    so correct = 1, 0, 1, 1) fall in four different bins of width 1/15, so every bin
    gap is |correct - confidence| = 0.05, 0.85, 0.25, 0.35. In one bin the gap is
    |mean correct - mean confidence| = |0.75 - 0.80|.
    """
    row = run_json(["table", str(tiny)], capsys)["models"][0]
    assert row["model"] == "tiny" and row["n"] == 4 and row["n_classes"] == 2
    assert row["accuracy"] == pytest.approx(0.75, abs=1e-15)
    assert row["ece"] == pytest.approx((0.05 + 0.85 + 0.25 + 0.35) / 4, abs=1e-12)
    assert row["bin_averaged_ece"] == pytest.approx(0.375, abs=1e-12)
    assert row["mce"] == pytest.approx(0.85, abs=1e-12)
    # class-wise: p0 = .95,.85,.25,.35 vs 1,0,0,0 and p1 = .05,.15,.75,.65 vs 0,1,1,1,
    # again one entry per bin with the same four gaps in each class
    assert row["classwise_ece"] == pytest.approx(0.375, abs=1e-12)
    brier = (2 * 0.05**2 + 2 * 0.85**2 + 2 * 0.25**2 + 2 * 0.35**2) / 4
    assert row["brier"] == pytest.approx(brier, abs=1e-12)
    nll = -(math.log(0.95) + math.log(0.15) + math.log(0.75) + math.log(0.65)) / 4
    assert row["nll"] == pytest.approx(nll, abs=1e-12)
    one_bin = run_json(["table", str(tiny), "--bins", "1"], capsys)["models"][0]
    assert one_bin["ece"] == pytest.approx(0.05, abs=1e-12)


def test_npz_file_matches_library(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4) * 0.5, size=300)
    labels = rng.integers(0, 4, size=300)
    f = tmp_path / "model.npz"
    np.savez(f, probs=probs, labels=labels)
    doc = run_json(["table", str(f)], capsys)
    assert "array 'probs' read as probs" in doc["sources"][0]
    row = doc["models"][0]
    for key, value in library_values(cp.check_predictions(probs, labels)).items():
        assert row[key] == value, key


def test_logits_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(1)
    z = rng.normal(size=(50, 3)) * 3
    y = rng.integers(0, 3, size=50)
    np.savez(tmp_path / "z.npz", logits=z, y=y)
    np.save(tmp_path / "z.npy", z)
    np.save(tmp_path / "y.npy", y)
    P = cp.check_predictions(z, y, logits=True)
    expected = library_values(P)
    a = run_json(["table", str(tmp_path / "z.npz")], capsys)["models"][0]
    b = run_json(
        ["table", str(tmp_path / "z.npy"), "--logits", "--labels", str(tmp_path / "y.npy")], capsys
    )["models"][0]
    for row in (a, b):
        for key, value in expected.items():
            assert row[key] == value, key
    # the NLL comes from the logits exactly
    lse = np.log(np.exp(z).sum(axis=1))
    assert a["nll"] == pytest.approx(np.mean(lse - z[np.arange(50), y]), rel=1e-12)


def test_binary_file_matches_library(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = np.array([0.9, 0.2, 0.6, 0.7, 0.05])
    y = np.array([1, 0, 0, 1, 0])
    f = tmp_path / "binary.csv"
    f.write_text("y,p\n" + "".join(f"{a},{float(b)!r}\n" for a, b in zip(y, p, strict=True)))
    doc = run_json(["table", str(f)], capsys)
    row = doc["models"][0]
    assert row["n_classes"] == 2
    for key, value in library_values(cp.check_predictions(p, y)).items():
        assert row[key] == value, key
    assert any("(p - y)^2 for binary" in n for n in doc["notes"])


def test_several_files_one_row_each(tiny: Path, tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "other.npz", probs=[[0.6, 0.4], [0.3, 0.7]], labels=[0, 0])
    doc = run_json(["table", str(tiny), str(tmp_path / "other.npz")], capsys)
    assert [m["model"] for m in doc["models"]] == ["tiny", "other"]
    assert len(doc["sources"]) == 2


def test_keys_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "odd.npz"
    np.savez(f, model_a=[[0.6, 0.4], [0.3, 0.7]], truth=[0, 1])
    code, _, err = run(["table", str(f)], capsys)
    assert code == 3 and "--probs-key" in err
    doc = run_json(["table", str(f), "--probs-key", "model_a", "--labels-key", "truth"], capsys)
    assert doc["models"][0]["accuracy"] == 1.0


def test_renormalize(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = np.array([[0.4, 0.2, 0.2], [0.1, 0.2, 0.1], [0.2, 0.2, 0.4]])
    y = np.array([0, 2, 2])
    f = tmp_path / "raw.npz"
    np.savez(f, probs=raw, labels=y)
    code, out, err = run(["table", str(f)], capsys)
    assert code == 3
    assert "row 0 of probs sums to 0.8" in err and "pass --renormalize" in err
    doc = run_json(["table", str(f), "--renormalize"], capsys)
    expected = library_values(cp.check_predictions(raw / raw.sum(1, keepdims=True), y))
    for key, value in expected.items():
        assert doc["models"][0][key] == pytest.approx(value, abs=1e-15), key
    assert any("renormalised" in n for n in doc["notes"])


# ----------------------------------------------------------------------------- errors -> 3


def _assert_input_error(code: int, err: str, *needles: str) -> None:
    assert code == 3
    assert err.startswith("calipers: error: ")
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err


def test_error_missing_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "x.npz"
    np.savez(f, foo=np.ones((2, 2)) / 2, bar=[0, 1])
    code, _, err = run(["table", str(f)], capsys)
    _assert_input_error(code, err, "no array recognised as predictions", "'foo'", "'bar'")


def test_error_missing_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "x.npz"
    np.savez(f, probs=np.ones((2, 2)) / 2)
    code, _, err = run(["table", str(f)], capsys)
    _assert_input_error(code, err, "holds no labels", "--labels FILE")


def test_error_object_array(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "x.npz"
    np.savez(f, probs=np.array([[0.5, 0.5], None], dtype=object), labels=[0, 1])
    code, _, err = run(["table", str(f)], capsys)
    _assert_input_error(code, err, "contains Python objects; calipers never unpickles files")


def test_error_ragged_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "x.csv"
    f.write_text("label,p0,p1\n0,0.5,0.5\n1,0.2,0.3,0.5\n")
    code, _, err = run(["table", str(f)], capsys)
    _assert_input_error(code, err, "line 3 has 4 fields but the header has 3")


def test_error_labels_length_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(tmp_path / "p.npy", np.full((5, 2), 0.5))
    np.save(tmp_path / "y.npy", np.array([0, 1, 0]))
    code, _, err = run(
        ["table", str(tmp_path / "p.npy"), "--labels", str(tmp_path / "y.npy")], capsys
    )
    _assert_input_error(code, err, "3 labels for 5 rows")


def test_error_label_out_of_range(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tiny.write_text(TINY_CSV.replace("\n1,0.35", "\n2,0.35"))
    code, _, err = run(["table", str(tiny)], capsys)
    _assert_input_error(code, err, "labels must be in [0, 2); found 2 at row 3", str(tiny))


def test_error_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["table", str(tmp_path / "nope.npz")], capsys)
    _assert_input_error(code, err, "does not exist")


def test_clip_and_sum_tol(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "x.csv"
    f.write_text("label,p0,p1\n0,1.001,-0.001\n1,0.3,0.7005\n")
    code, _, err = run(["table", str(f)], capsys)
    _assert_input_error(code, err, "probs must lie in [0, 1]", "pass --clip")
    code, _, err = run(["table", str(f), "--clip"], capsys)
    _assert_input_error(code, err, "row 1 of probs sums to 1.0005", "raise --sum-tol")
    doc = run_json(["table", str(f), "--clip", "--sum-tol", "1e-3"], capsys)
    raw = np.array([[1.001, -0.001], [0.3, 0.7005]])
    P = cp.check_predictions(raw, [0, 1], clip=True, sum_tol=1e-3)
    for key, value in library_values(P).items():
        assert doc["models"][0][key] == value, key
    assert doc["models"][0]["accuracy"] == 1.0
    assert any("clipped into [0, 1]" in n for n in doc["notes"])


def test_error_renormalize_logits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.savez(tmp_path / "z.npz", logits=np.zeros((2, 2)), labels=[0, 1])
    code, _, err = run(["table", str(tmp_path / "z.npz"), "--renormalize"], capsys)
    _assert_input_error(code, err, "--renormalize applies to probabilities")


def test_unexpected_error_exit_1(
    tiny: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> float:
        raise RuntimeError("simulated bug")

    from calipers.metrics import registry

    # the table looks its columns up in the metric registry
    monkeypatch.setitem(
        registry.METRICS, "ece", dataclasses.replace(registry.METRICS["ece"], function=boom)
    )
    code, _, err = run(["table", str(tiny)], capsys)
    assert code == 1
    assert "simulated bug" in err and "unexpected error" in err


# ----------------------------------------------------------------------------- --out


def test_out_atomic_and_format_from_suffix(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "table.json"
    target.write_text("old contents")
    os.chmod(target, 0o640)
    code, out, err = run(["table", str(tiny), "--out", str(target)], capsys)
    assert code == 2 and "exists; pass --force" in err  # never replaced without a word
    assert target.read_text() == "old contents"
    code, out, err = run(["table", str(tiny), "--out", str(target), "--force"], capsys)
    assert code == 0, err
    assert out == ""
    assert f"wrote {target}" in err
    doc = json.loads(target.read_text())  # the format follows the suffix
    assert doc["models"][0]["accuracy"] == 0.75
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # permissions kept
    assert [p.name for p in out_dir.iterdir()] == ["table.json"]  # no temporary left
    md = out_dir / "t.md"
    assert main(["table", str(tiny), "--out", str(md)]) == 0
    assert md.read_text().startswith("**calipers")
    txt = out_dir / "t.txt"
    assert main(["table", str(tiny), "--out", str(txt), "--format", "csv"]) == 0
    assert txt.read_text().startswith("model,n,n_classes,accuracy")
    capsys.readouterr()


def test_out_unwritable(tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["table", str(tiny), "--out", str(tmp_path / "no" / "t.json")], capsys)
    assert code == 1
    assert err.startswith("calipers: error: cannot write") and "Traceback" not in err


def test_write_atomic_failure_leaves_target(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "t.txt"
    target.write_text("old")

    def fail(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(cli._OutputError, match="No space left"):
        cli.write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]


# ----------------------------------------------------------------------------- installed program


def test_python_dash_m_subprocess(tmp_path: Path) -> None:
    """``python -m calipers table`` from another directory: the installed package runs."""
    proc = subprocess.run(
        [sys.executable, "-m", "calipers", "table", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [m["model"] for m in doc["models"]] == list(load_default_predictions().model_names)
    bad = tmp_path / "bad.csv"
    bad.write_text("label,p0,p1\n0,0.5\n")
    proc = subprocess.run(
        [sys.executable, "-m", "calipers", "table", str(bad)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3
    assert proc.stderr.startswith("calipers: error: ") and "Traceback" not in proc.stderr


def test_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "calipers"
    if not script.exists():
        pytest.skip(f"no 'calipers' console script beside {sys.executable}")
    proc = subprocess.run(
        [str(script), "--version"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"calipers {cp.__version__}"


# ----------------------------------------------------------------------------- published numbers


@pytest.mark.skipif(
    not available("densenet40_c10_test.npz"), reason=missing_reason("densenet40_c10_test.npz")
)
def test_densenet_published_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    """Kull et al. 2019 / Rahimi et al. 2020 numbers for DenseNet-40 on CIFAR-10 (test split)."""
    f = SHARED_DATA / "densenet40_c10_test.npz"
    row = run_json(["table", str(f), "--nll-clip", "1e-15"], capsys)["models"][0]
    assert row["n"] == 10000
    assert row["ece"] == pytest.approx(0.055003, abs=5e-7)
    assert 1 - row["accuracy"] == pytest.approx(0.0758, abs=1e-12)
    assert row["nll"] == pytest.approx(0.430059, abs=5e-7)
    assert row["nll_clipped"] == pytest.approx(0.428207, abs=5e-7)
    assert row["brier"] / 10 == pytest.approx(0.012738, abs=5e-7)
    # the class-wise ECE with Kull et al.'s bins, as the README shows it
    with np.load(f, allow_pickle=False) as data:
        z, y = data["logits"], data["labels"]
    kull_bins = cp.FixedEdges(np.r_[np.linspace(0, 1, 15), 1.0], closed="left")
    cw = cp.classwise_ece(z, y, logits=True, estimator=kull_bins, reduction="sum")
    assert cw == pytest.approx(0.114303, abs=5e-7)


@pytest.mark.skipif(
    not available("densenet40_c10_val.npz", "densenet40_c10_test.npz"),
    reason=missing_reason("densenet40_c10_val.npz", "densenet40_c10_test.npz"),
)
def test_report_end_to_end_on_densenet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """calipers report on the DenseNet-40 test split, temperature scaling fitted on its
    validation split: the JSON holds Kull et al.'s numbers (ECE 0.055003 before; test ECE
    0.009464 and NLL 0.225086 after TS)."""
    test, val = SHARED_DATA / "densenet40_c10_test.npz", SHARED_DATA / "densenet40_c10_val.npz"
    code, out, err = run(
        [
            "report",
            str(test),
            "--calibration",
            str(val),
            "--recalibrate",
            "ts",
            "--format",
            "json",
            "--null-resamples",
            "20",
            "--out",
            str(tmp_path / "rep"),
        ],
        capsys,
    )
    assert code == 0, err
    doc = json.loads(out)
    rows = {r["method"]: r["metrics"] for r in doc["rows"]}
    assert rows["uncalibrated"]["ece"] == pytest.approx(0.055003, abs=5e-7)
    assert rows["uncalibrated"]["nll"] == pytest.approx(0.430059, abs=5e-7)
    assert rows["TemperatureScaling"]["ece"] == pytest.approx(0.009464, abs=1.5e-6)
    assert rows["TemperatureScaling"]["nll"] == pytest.approx(0.225086, abs=5e-7)
    assert rows["TemperatureScaling"]["accuracy"] == rows["uncalibrated"]["accuracy"]
    written = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert written["rows"] == doc["rows"]
    assert len(list((tmp_path / "rep" / "figures").glob("*.png"))) == 6


# ----------------------------------------------------------------------------- README


def test_readme_examples_run() -> None:
    """Every ``>>>`` example in README.md runs and prints what the README says."""
    readme = ROOT / "README.md"
    if not readme.exists():
        pytest.skip("README.md is not beside the tests")
    result = doctest.testfile(
        str(readme),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        verbose=False,
    )
    assert result.attempted > 0
    assert result.failed == 0


def test_readme_starts_with_the_two_commands() -> None:
    """A one-line title and a one-sentence description, then, as the first code block, the
    two commands that do all the set-up on a fresh machine."""
    readme = ROOT / "README.md"
    if not readme.exists():
        pytest.skip("README.md is not beside the tests")
    text = readme.read_text()
    head, first_block = text.split("```")[:2]
    lines = [line for line in head.splitlines() if line.strip()]
    assert lines[0] == "# calipers" and len(lines) == 2, "title, one sentence, the commands"
    assert not lines[1].startswith("#") and lines[1].endswith(".") and ". " not in lines[1]
    assert first_block.splitlines()[1:] == [
        "pip install . && calipers demo",
        'pip install ".[test]" && python -m pytest',
    ]


def _readme_synopsis() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## The command line\n") :]
    return section.split("```text\n", 1)[1].split("```", 1)[0]


def test_readme_synopsis_has_every_command_and_option() -> None:
    """The README's synopsis names every subcommand, every long option of each and the
    diagram kinds, as the parser defines them (``--help`` aside)."""
    if not (ROOT / "README.md").exists():
        pytest.skip("README.md is not beside the tests")
    import argparse

    synopsis = _readme_synopsis()
    (commands,) = [
        a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ]
    missing = []
    for name, parser in commands.choices.items():
        if f"calipers {name}" not in synopsis:
            missing.append(f"calipers {name}")
        for action in parser._actions:
            missing += [
                f"calipers {name} {o}"
                for o in action.option_strings
                if o.startswith("--") and o != "--help" and o not in synopsis
            ]
            if not action.option_strings and action.choices:
                missing += [f"calipers {name} {c}" for c in action.choices if c not in synopsis]
    assert "calipers --version" in synopsis
    assert not missing, "missing from the README's synopsis: " + ", ".join(missing)


def test_readme_counts_the_recalibration_methods() -> None:
    """The README's count of recalibration methods is that of the public recalibrators."""
    if not (ROOT / "README.md").exists():
        pytest.skip("README.md is not beside the tests")
    import inspect

    from calipers.recalibration import (
        ForecastRecalibrator,
        Recalibrator,
        RegressionRecalibrator,
    )

    words = (
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
        " fifteen sixteen seventeen eighteen nineteen twenty"
    )
    number = {w: i + 1 for i, w in enumerate(words.split())}
    text = " ".join((ROOT / "README.md").read_text().split())
    m = re.search(r"\((\w+) classification and (\w+) regression methods", text)
    assert m, "the README no longer counts the recalibration methods"
    public = [getattr(cp.recalibration, n) for n in cp.recalibration.__all__]
    classes = [c for c in public if inspect.isclass(c)]
    n_cls = sum(issubclass(c, Recalibrator) and c is not Recalibrator for c in classes)
    # regression: the recalibrators of predictive distributions and those of point
    # forecasts and intervals (conformal, isotonic)
    n_reg = sum(
        issubclass(c, base) and c is not base
        for c in classes
        for base in (RegressionRecalibrator, ForecastRecalibrator)
    )
    assert (number[m.group(1)], number[m.group(2)]) == (n_cls, n_reg)


def test_readme_demo_table_is_current(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The table shown in README.md is what ``calipers demo`` prints today."""
    readme = ROOT / "README.md"
    if not readme.exists():
        pytest.skip("README.md is not beside the tests")
    shown = [
        line
        for line in readme.read_text().splitlines()
        if line.split(" ")[0] in {"model", "gaussian_nb", "random_forest", "logistic_regression"}
    ]
    assert len(shown) == 4
    code, out, _ = run(["demo", "--out", str(tmp_path), "--table-only"], capsys)
    assert code == 0
    printed = out.splitlines()
    for line in shown:
        assert line in printed


def test_report_folder_rules_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A calipers folder is replaced whole; a foreign one is refused without --force."""
    out = tmp_path / "rep"
    assert run(["demo", "--out", str(out), "--table-only"], capsys)[0] == 0
    (out / "stale.png").write_bytes(b"old figure")  # left by an earlier run, say
    assert run(["demo", "--out", str(out), "--table-only"], capsys)[0] == 0
    assert not (out / "stale.png").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    code, _, err = run(["demo", "--out", str(mine), "--table-only"], capsys)
    assert code == 2 and "does not hold a calipers report" in err and "--force" in err
    assert (mine / "notes.txt").read_text() == "keep"
    assert run(["demo", "--out", str(mine), "--table-only", "--force"], capsys)[0] == 0
    assert not (mine / "notes.txt").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_stops_the_program_and_leaves_no_temporaries(tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    out = tmp_path / "rep"
    proc = subprocess.Popen(
        [sys.executable, "-m", "calipers", "demo", "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # the progress lines: wait until the suites are computed
        if ": suite (" in line:
            break
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    assert code == 143, f"exit status {code}; stderr after the signal:\n{proc.stderr.read()}"
    assert list(tmp_path.iterdir()) == []  # no half report, no hidden temporary


def test_report_memory_stays_within_a_few_times_the_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report on float32 logits: no float64 copies of the matrix, one softmax.

    Before: about 15x the input (1.26 GB RSS for an 80 MB file). The logits and their
    softmax are 2x by themselves; the 5000-row kernel estimates add a fixed ~14 MB, which
    weighs more at this test's 20 MB than at 80 MB (2.9x in RSS above the interpreter).
    """
    import tracemalloc

    rng = np.random.default_rng(0)
    z = (rng.standard_normal((50_000, 100)) * 3).astype(np.float32)
    f = tmp_path / "mid.npz"
    np.savez(f, logits=z, labels=rng.integers(0, 100, 50_000))
    assert run(["report", str(f), "--null-resamples", "5"], capsys)[0] == 0  # imports done
    tracemalloc.start()
    try:
        code = main(["report", str(f), "--null-resamples", "50"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    capsys.readouterr()
    assert code == 0
    assert peak < 3.5 * z.nbytes, peak / z.nbytes


def test_report_with_only_a_calibration_file_recalibrates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``calipers report test --calibration cal`` without ``--recalibrate`` fits the
    demo's five methods (it used to ignore the calibration file silently); the
    temperature-scaling row is the NLL of a temperature fitted by hand (scipy)."""
    from scipy.optimize import minimize_scalar
    from scipy.special import log_softmax

    rng = np.random.default_rng(3)
    z = rng.standard_normal((900, 3)) * 3
    y = np.array([rng.choice(3, p=np.exp(r)) for r in log_softmax(z / 2, axis=1)])
    cal, test = tmp_path / "cal.npz", tmp_path / "test.npz"
    np.savez(cal, logits=z[:450], labels=y[:450])
    np.savez(test, logits=z[450:], labels=y[450:])
    doc = run_json(
        ["report", str(test), "--calibration", str(cal), "--null-resamples", "0"], capsys
    )
    methods = [r["method"] for r in doc["rows"]]
    assert methods == [
        "uncalibrated",
        "TemperatureScaling",
        "EnsembleTemperatureScaling",
        "HistogramBinning",
        "IsotonicRegression",
        "MeanReplacement",
    ]

    def nll(t: float, zz: np.ndarray, yy: np.ndarray) -> float:
        return float(-log_softmax(zz / t, axis=1)[np.arange(len(yy)), yy].mean())

    t = minimize_scalar(lambda t: nll(t, z[:450], y[:450]), bounds=(0.05, 20), method="bounded")
    ts_row = doc["rows"][1]["metrics"]
    assert ts_row["nll"] == pytest.approx(nll(t.x, z[450:], y[450:]), abs=1e-5)
    none = run_json(
        ["report", str(test), "--calibration", str(cal), "--recalibrate", "none"], capsys
    )
    assert [r["method"] for r in none["rows"]] == ["uncalibrated"]
