"""The report's verdicts (calipers.report + calipers.verdict): on by default, computed
from the calibrated draws, checked against independent computations, shown in every
rendering, and off on request."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import calipers as cp
from calipers.inference._verdict import VERDICTS
from calipers.reports._document import Report
from test_report_latex import _compile


def _binary(n: int, seed: int, power: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    return p, (rng.uniform(size=n) < p**power).astype(np.int64)


@pytest.fixture(scope="module")
def rep() -> Report:
    return cp.report(
        {
            "calibrated": _binary(3000, 51, 1.0),
            "over & confident": _binary(3000, 52, 2.0),
        },
        null_resamples=99,
    )


def test_verdicts_are_on_by_default_with_the_known_answers(rep: Report) -> None:
    cal, bad = rep.row("calibrated"), rep.row("over & confident")
    assert set(cal.verdicts) == set(bad.verdicts) == {"ece", "ce_kl", "ce_l2sq"}
    assert cal.verdicts["ece"].category == "not_distinguishable"
    assert cal.verdicts["ce_kl"].category == "not_distinguishable"
    for key in ("ece", "ce_kl", "ce_l2sq"):
        assert bad.verdicts[key].category == "resolved"
        assert bad.verdicts[key].estimate == bad.metrics[key]
    assert "verdicts" in rep.settings


def test_the_ece_verdict_reads_the_draws_of_the_ece_p_value(rep: Report) -> None:
    for r in rep.rows:
        v = r.verdicts["ece"]
        assert v.p_value == pytest.approx(r.metrics["ece_p_value"])
        assert v.n_resamples == 99 and v.n == 3000
        assert v.bias_corrected == pytest.approx(v.estimate - v.bias)
    # the calibrated row is not distinguishable: corrected by the calibrated draws' mean
    v = rep.row("calibrated").verdicts["ece"]
    assert v.bias == pytest.approx(v.null_distribution.mean())
    # the miscalibrated row is corrected at its fitted calibration curve: the binned ECE
    # of P(y = 1 | p) = p^2 with p ~ U(0.02, 0.98), by quadrature over the 15 bins
    from scipy import integrate

    edges = np.linspace(0, 1, 16)
    truth = sum(
        abs(integrate.quad(lambda x: x * x - x, max(a, 0.02), min(b, 0.98))[0]) / 0.96
        for a, b in zip(edges[:-1], edges[1:], strict=True)
    )
    v = rep.row("over & confident").verdicts["ece"]
    assert v.recommended_method.startswith("bias at the fitted calibration curve")
    assert abs(v.recommended - truth) < 0.02 and v.interval[0] < truth < v.interval[1]
    assert v.bias < v.null_distribution.mean() / 3  # far below the bias at calibration


def test_kernel_null_draws_equal_the_estimator_on_each_draw() -> None:
    p, y = _binary(300, 53, 1.5)
    r = cp.report({"m": (p, y)}, null_resamples=20, kernel_bandwidth=0.05).row("m")
    v = r.verdicts["ce_kl"]
    # the report's kernel null: targets Bernoulli(score) from default_rng([seed, 11]),
    # seed = 0 for the first row of the first model; one column per draw
    rng = np.random.default_rng([0, 11])
    T = (rng.random((300, 20)) < p[:, None]).astype(int)
    direct = [
        cp.proper_calibration_error(p, T[:, j], lens="binary", bandwidth=0.05).value
        for j in range(20)
    ]
    np.testing.assert_allclose(v.null_distribution, direct, rtol=1e-9)
    # bandwidth sensitivity: the estimate at half and twice the bandwidth
    hs = [h for h, _ in v.bandwidth_sensitivity]
    assert hs == pytest.approx([0.025, 0.05, 0.1])
    for h, val in v.bandwidth_sensitivity:
        assert val == pytest.approx(cp.ce_kl(p, y, lens="binary", bandwidth=h), rel=1e-9)


def test_every_rendering_shows_the_verdicts(rep: Report) -> None:
    md = rep.to_markdown()
    assert "**Verdicts**" in md
    for r in rep.rows:
        for v in r.verdicts.values():
            assert v.verdict in md
    assert md.count("**over & confident / uncalibrated**: ") == 3
    html = rep.to_html()
    assert 'class="calipers-verdicts"' in html and VERDICTS["resolved"] in html
    doc = json.loads(rep.to_json())
    row = next(r for r in doc["rows"] if r["model"] == "calibrated")
    assert row["verdicts"]["ece"]["category"] == "not_distinguishable"
    assert row["verdicts"]["ece"]["verdict"] == VERDICTS["not_distinguishable"]
    tex = rep.to_latex()
    assert r"\textbf{Verdicts}" in tex and r"$\mathrm{CE}_{\mathrm{KL}}$ " in tex
    frag = rep.to_latex(standalone=False)
    assert frag == rep._latex_tabular() + rep._latex_notes() and "Verdicts" in frag


def test_the_latex_with_verdicts_compiles(rep: Report, tmp_path: Path) -> None:
    tex = tmp_path / "report.tex"
    tex.write_text(rep.to_latex(), encoding="ascii")
    _compile(tex)


def test_verdicts_can_be_turned_off() -> None:
    data = {"m": _binary(400, 54, 2.0)}
    off = cp.report(data, verdicts=False, null_resamples=50)
    assert off.row("m").verdicts == {} and "verdicts" not in off.settings
    assert "Verdicts" not in off.to_markdown() + off.to_html() + off.to_latex()
    assert json.loads(off.to_json())["rows"][0]["verdicts"] == {}
    on = cp.report(data, null_resamples=50)
    assert on.row("m").metrics == off.row("m").metrics  # the numbers do not change
    assert cp.report(data, null_resamples=0).row("m").verdicts == {}  # no draws, no verdict
