"""The CQR reproduction examples/reproduce_romano2019.py (Romano, Patterson & Candès 2019).

The script runs once in ``--quick`` mode (a module-scoped fixture) into a
temporary folder. The tests check its data generator against the law written
out here (conditional mean and variance), its saved intervals against the
summaries it prints (recomputed here), the shape of each method's intervals
(split conformal: one width; CQR: the quantile pair moved out by one Q), and
the paper's statements.
"""

from __future__ import annotations

import importlib.util
import json
import runpy
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn")

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "reproduce_romano2019.py"


@pytest.fixture(scope="module")
def script() -> dict:
    return runpy.run_path(str(SCRIPT), run_name="reproduce_under_test")


@pytest.fixture(scope="module")
def quick(script: dict, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("romano2019")
    return script["main"](["--quick", "--out", str(out)]), out


def test_outputs_exist(quick: tuple[dict, Path]) -> None:
    res, out = quick
    doc = json.loads((out / "romano2019.json").read_text())
    assert doc["seeds"] == res["seeds"] == 3 and doc["level"] == 0.9
    assert len(doc["per_seed"]) == 3
    with np.load(out / "romano2019_first_seed.npz", allow_pickle=False) as f:
        assert set(f.files) == {"x", "y", "split_conformal", "cqr", "quantile_model"}
        assert f["cqr"].shape == (res["n_test"], 2)
    if importlib.util.find_spec("matplotlib") is not None:  # the figure is optional
        png = out / "fig1_romano2019.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_data_law(script: dict) -> None:
    # E[Y | x] = sin(x)^2 + 0.1 (the noise terms have mean 0);
    # Var[Y | x] = sin(x)^2 + 0.1 + (0.03 x)^2 + 0.01 * 25^2
    x, y = script["draw"](600_000, np.random.default_rng(1))
    assert x.min() >= 0 and x.max() <= 5
    for lo in (0.2, 1.5, 3.0, 4.6):
        rows = (x >= lo) & (x < lo + 0.1)
        xm = x[rows]
        lam = np.sin(xm) ** 2 + 0.1
        assert y[rows].mean() == pytest.approx(lam.mean(), abs=0.1)
        var = np.mean(lam + (0.03 * xm) ** 2) + 6.25
        assert y[rows].var() == pytest.approx(var, rel=0.15)
    # 1 % outliers 25 eps2: the counts stay below 10 and the small noise below 0.2, so
    # |Y| > 10 comes from the outliers alone, with probability about
    # 0.01 P(|25 eps2| > 10) = 0.01 * 2 (1 - Phi(0.4)) = 0.00689
    frac = np.mean(np.abs(y) > 10)
    assert frac == pytest.approx(0.00689, abs=0.0007)


def test_saved_intervals_give_the_printed_numbers(quick: tuple[dict, Path]) -> None:
    res, out = quick
    first = res["per_seed"][0]
    with np.load(out / "romano2019_first_seed.npz", allow_pickle=False) as f:
        y = f["y"]
        for m in ("split_conformal", "cqr", "quantile_model"):
            lo, hi = f[m][:, 0], f[m][:, 1]
            assert first[m]["coverage"] == np.mean((lo <= y) & (y <= hi))
            assert first[m]["length"] == pytest.approx(np.mean(hi - lo), rel=1e-12)
        # split conformal: one width 2 d; CQR: the quantile pair moved out by Q
        sc = f["split_conformal"]
        np.testing.assert_allclose(
            sc[:, 1] - sc[:, 0], 2 * first["split_conformal"]["d"], rtol=1e-12
        )
        moved = np.broadcast_to(np.array([-1.0, 1.0]) * first["cqr"]["Q"], f["cqr"].shape)
        np.testing.assert_allclose(f["cqr"] - f["quantile_model"], moved, atol=1e-12)


def test_the_papers_statements(quick: tuple[dict, Path]) -> None:
    res, _ = quick
    s = res["summary"]
    assert all(s["statements"].values()), s["statements"]
    for m in ("split_conformal", "cqr"):
        assert 0.86 <= s[m]["coverage_mean"] <= 0.94
    assert s["cqr"]["length_mean"] < s["split_conformal"]["length_mean"]
