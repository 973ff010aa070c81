"""The report's clinical section (``report(..., clinical=True)``, ``calipers report --clinical``).

Its numbers are those of :func:`calipers.clinical.calibration_hierarchy` on each row's
test probabilities (one-vs-rest per class for multiclass), computed here directly;
off by default, the report has none of it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.cli import main
from calipers.clinical import calibration_hierarchy, calibration_hierarchy_by_class

HEAD = "Calibration hierarchy (Van Calster et al. 2016)"


def _overfit(n: int = 500, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-z))).astype(np.int64)
    return 1 / (1 + np.exp(-2 * z)), y


def _json_ready(v: Any) -> Any:
    """What ``to_json`` writes of a value (non-finite numbers as strings)."""
    if isinstance(v, dict):
        return {str(k): _json_ready(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_ready(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def _quick(models: dict[str, Any], **kw: Any) -> cp.Report:
    return cp.report(models, null_resamples=20, verdicts=False, **kw)


def test_off_by_default_the_report_has_no_clinical_part() -> None:
    p, y = _overfit()
    rep = _quick({"m": (p, y)})
    assert rep.clinical == [] and "clinical" not in rep.settings
    assert "clinical" not in json.loads(rep.to_json())
    for text in (rep.to_markdown(), rep.to_html(), rep.to_latex(), rep.to_summary()):
        assert "Calibration hierarchy" not in text
    on = _quick({"m": (p, y)}, clinical=True)
    # the rest of the report is unchanged by the section
    assert on.to_markdown().startswith(rep.to_markdown().split("\n## Appendix")[0])
    assert on.rows[0].metrics == rep.rows[0].metrics


def test_binary_block_is_the_hierarchy_of_the_rows_probabilities() -> None:
    p, y = _overfit()
    rep = _quick({"m": (p, y)}, clinical=True)
    h = calibration_hierarchy(p, y)
    (block,) = rep.clinical
    assert (block.model, block.method, block.class_name) == ("m", "uncalibrated", None)
    assert block.hierarchy.to_dict() == h.to_dict()
    doc = json.loads(rep.to_json())
    (entry,) = doc["clinical"]
    assert entry["hierarchy"] == _json_ready(h.to_dict())
    assert entry["summary"] == [" ".join(s.split()) for s in h.summary()]
    md = rep.to_markdown()
    section = md[md.index(f"## {HEAD}") :]
    for sentence in h.summary():
        assert f"- {' '.join(sentence.split())}" in section
    w = h.weak
    slope = f"| calibration slope | {w.slope:.3f} | [{w.slope_interval[0]:.3f}, {w.slope_interval[1]:.3f}] |"
    assert slope in section
    assert f"| ICI (mean absolute difference) | {h.index.ici:.3f} |" in section
    assert f"| C-statistic | {h.c_statistic:.3f} |" in section
    for name, t, stat in (
        (
            f"Hosmer-Lemeshow chi-square ({int(h.hosmer_lemeshow.df)} df)",
            h.hosmer_lemeshow,
            "statistic",
        ),
        ("Spiegelhalter z", h.spiegelhalter, "z"),
    ):
        pv = "p < 0.001" if t.p_value < 0.001 else f"p = {t.p_value:.3f}"
        assert f"| {name} | {getattr(t, stat):.3f} | {pv} |" in section
    # the overview line, in the short summary too (what calipers report --out prints)
    line = next(x for x in rep.to_summary().splitlines() if x.startswith("| m / uncalibrated"))
    assert f"{w.slope:.2f} [{w.slope_interval[0]:.2f}, {w.slope_interval[1]:.2f}]" in line
    assert f"| {len(p)} | {int(y.sum())} |" in line
    assert HEAD in rep.to_html() and HEAD.replace("&", "\\&") in rep.to_latex()


def test_multiclass_gets_one_block_per_class_one_vs_rest() -> None:
    rng = np.random.default_rng(1)
    z = rng.normal(size=(300, 3)) * 1.5
    P = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in P])
    rep = _quick({"m": (P, y)}, clinical=True)
    by_class = calibration_hierarchy_by_class(P, y)
    assert [b.class_name for b in rep.clinical] == ["0", "1", "2"]
    for c, b in enumerate(rep.clinical):
        direct = calibration_hierarchy(P[:, c], (y == c).astype(int))
        assert b.hierarchy.to_dict() == direct.to_dict() == by_class[c].to_dict()
    assert "### m / uncalibrated, class 2" in rep.to_markdown()


def test_recalibrated_rows_get_the_hierarchy_of_their_own_probabilities() -> None:
    p, y = _overfit(n=800, seed=2)
    cal, test = slice(0, 400), slice(400, 800)
    rep = _quick(
        {"m": (p[test], y[test])},
        calibration={"m": (p[cal], y[cal])},
        recalibrators=[cp.PlattScaling()],
        clinical=True,
    )
    assert [b.method for b in rep.clinical] == ["uncalibrated", "PlattScaling"]
    fitted = cp.PlattScaling().fit(p[cal], y[cal])
    q = np.asarray(fitted.predict_proba(p[test]), dtype=float)
    q = q[:, 1] if q.ndim == 2 else q
    h = calibration_hierarchy(q, y[test])
    assert rep.clinical[1].hierarchy.to_dict() == h.to_dict()
    # Platt scaling on a logit-linear miscalibration: the slope moves to about 1
    assert abs(h.weak.slope - 1) < abs(rep.clinical[0].hierarchy.weak.slope - 1)


def test_figures_the_diagram_sits_in_the_section_after_the_report_figures(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    p, y = _overfit(n=300, seed=3)
    rep = _quick({"m": (p, y)}, clinical=True, figures=True)
    assert rep.clinical[0].figure == "m__uncalibrated__clinical"
    assert rep.figures["m__uncalibrated__clinical"].startswith(b"\x89PNG")
    # the grid of figures keeps its three kinds; the diagram is in the section
    (group,) = rep._figure_groups().values()
    assert [k for _, k, _ in group] == [
        "Reliability diagram",
        "Smooth reliability diagram",
        "Calibration-sharpness diagram",
    ]
    md = rep.to_markdown(figure_dir="figures")
    assert md.index("| model | method |") < md.index("## Figures") < md.index(f"## {HEAD}")
    assert md.index(f"## {HEAD}") < md.index("## Appendix")
    assert "(figures/m__uncalibrated__clinical.png)" in md.split(f"## {HEAD}")[1]
    page = rep.to_html()
    assert page.index("<h2>Figures</h2>") < page.index(HEAD)
    assert page.count("<img") == 4
    tex = rep.to_latex(figure_dir="figures")
    assert "figures/m__uncalibrated__clinical.png" in tex
    written = rep.save(tmp_path / "rep")
    assert any(str(w).endswith("figures/m__uncalibrated__clinical.png") for w in written)


def test_cli_report_clinical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p, y = _overfit(n=300, seed=4)
    f = tmp_path / "risks.csv"
    np.savetxt(f, np.c_[p, y], delimiter=",", header="probs,labels", comments="", fmt="%.17g")
    args = ["report", str(f), "--null-resamples", "20", "--format", "json"]
    assert main([*args, "--clinical"]) == 0
    doc = json.loads(capsys.readouterr().out)
    p_read = np.loadtxt(f, delimiter=",", skiprows=1)
    h = calibration_hierarchy(p_read[:, 0], p_read[:, 1].astype(int))
    assert doc["clinical"][0]["hierarchy"] == _json_ready(h.to_dict())
    assert main(args) == 0
    assert "clinical" not in json.loads(capsys.readouterr().out)
    # a streamed report has no rows in memory, a regression file no risks: refused in one line
    assert main(["report", str(f), "--chunk-rows", "100", "--clinical"]) == 3
    err = capsys.readouterr().err
    assert "--clinical" in err and "Traceback" not in err
    rng = np.random.default_rng(0)
    mean = rng.normal(size=50)
    reg = tmp_path / "regression.npz"
    np.savez(reg, mean=mean, variance=np.ones(50), targets=mean + rng.normal(size=50))
    assert main(["report", str(reg), "--clinical"]) == 3
    err = capsys.readouterr().err
    assert "regression predictions" in err and "Traceback" not in err


def test_class_names_are_the_models_in_every_row() -> None:
    rng = np.random.default_rng(5)
    z = rng.normal(size=(450, 3)) * 2
    e = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in e])
    names = np.array(["flu", "cold", "covid"])
    rep = _quick(
        {"m": (z[:300], names[y[:300]])},
        logits=True,
        classes=names,
        calibration={"m": (z[300:], names[y[300:]])},
        recalibrators=[cp.TemperatureScaling()],
        clinical=True,
    )
    assert [(b.method, b.class_name) for b in rep.clinical] == [
        (m, c) for m in ("uncalibrated", "TemperatureScaling") for c in names
    ]


def test_a_row_with_risks_of_exactly_0_or_1_says_why_it_has_no_hierarchy() -> None:
    from calipers.validation import CalibrationInputError

    p, y = _overfit(n=300, seed=6)
    p = p.copy()
    p[:5] = 0.0  # rounded output: a logit of -inf
    with pytest.raises(CalibrationInputError) as refused:
        calibration_hierarchy(p, y)
    rep = _quick({"m": (p, y)}, clinical=True)
    (block,) = rep.clinical
    assert block.hierarchy is None and block.reason == str(refused.value)
    md = rep.to_markdown()
    assert f"Not computed: {' '.join(str(refused.value).split())}" in md
    assert json.loads(rep.to_json())["clinical"][0]["not_computed"] == str(refused.value)
    # the rest of the report is computed as without the section
    assert rep.rows[0].metrics == _quick({"m": (p, y)}).rows[0].metrics
