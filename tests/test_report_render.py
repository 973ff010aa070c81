"""The report's renderings: methods that cannot apply become notes, a p-value at the
resampling floor prints as a bound, LaTeX text is escaped, in every format."""

import html
import json
import math
from pathlib import Path

import numpy as np
import pytest

import calipers as cp
from calipers.cli import main
from calipers.reports._document import COLUMNS, Report, ReportRow, _fmt_p_value, _p_value_bound
from calipers.reports._latex import latex_escape

TS = "TemperatureScaling"


def _overconfident_with_zeros(n=800, seed=0):
    """Probabilities with exact zeros (no logits: temperature scaling cannot apply) of a
    strongly over-confident model (its ECE p-value sits at the resampling floor)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 3)) * 4
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = rng.integers(0, 3, n)  # labels unrelated to p: confident and often wrong
    p[:, 2] = np.where(p[:, 2] < 0.05, 0.0, p[:, 2])
    p /= p.sum(1, keepdims=True)
    return p, y


@pytest.fixture(scope="module")
def rep() -> Report:
    p, y = _overconfident_with_zeros()
    return cp.report(
        {"zeros": (p[400:], y[400:])},
        calibration={"zeros": (p[:400], y[:400])},
        recalibrators=[cp.TemperatureScaling(), cp.HistogramBinning()],
        null_resamples=200,
    )


# ----------------------------------------------------------------------------- not applicable


def test_not_applicable_method_is_a_note_not_a_row_in_every_format(rep: Report) -> None:
    assert [r.method for r in rep.rows] == ["uncalibrated", TS, "HistogramBinning"]
    na = rep.row("zeros", TS)
    reason = rep._na_reason(na)
    assert reason is not None and "needs logits" in reason
    md = rep.to_markdown()
    # the table (its lines start with "|"); the notes are in the appendix after it
    table = "\n".join(line for line in md.splitlines() if line.startswith("|"))
    notes = md.split("## Appendix: notes and verdicts", 1)[1]
    assert f"| zeros | {TS} |" not in table and "| zeros | HistogramBinning |" in table
    assert "nan | nan" not in table
    assert f"- **zeros / {TS}**: not applicable: {reason}" in notes.splitlines()
    page = rep.to_html()
    body = page.split("<tbody>")[1].split("</tbody>")[0]
    assert TS not in body and "HistogramBinning" in body
    assert f"<li><b>zeros / {TS}</b>: not applicable: {html.escape(reason)}</li>" in page
    doc = json.loads(rep.to_json())
    assert doc["calipers_report"] == 2
    assert [(r["model"], r["method"]) for r in doc["rows"]] == [
        ("zeros", "uncalibrated"),
        ("zeros", "HistogramBinning"),
    ]
    assert doc["not_applicable"] == [{"model": "zeros", "method": TS, "reason": reason}]
    tex = rep.to_latex()
    tabular = tex.split(r"\begin{tabular}")[1].split(r"\end{tabular}")[0]
    assert "Temperature" not in tabular and "HistogramBinning" in tabular
    assert rf"\item \textbf{{zeros / {TS}}}: not applicable: " in tex


def test_not_applicable_field_is_used_and_its_flags_are_kept() -> None:
    nan = dict.fromkeys(COLUMNS, math.nan)
    ok = ReportRow("m", "uncalibrated", 10, {**nan, "ece": 0.1}, flags=["a flag"])
    na = ReportRow("m", "X", 0, dict(nan), not_applicable="X needs logits")
    rep = Report([ok, na], {"null_resamples": 0})
    assert rep._table_rows() == [ok]
    md = rep.to_markdown()
    assert "| m | X |" not in md
    assert md.splitlines()[-2:] == [
        "- **m / X**: not applicable: X needs logits",
        "- **m / uncalibrated**: a flag",
    ]
    assert json.loads(rep.to_json())["not_applicable"] == [
        {"model": "m", "method": "X", "reason": "X needs logits"}
    ]
    # a row of NaN without the mark stays a row
    plain = ReportRow("m", "Y", 0, dict(nan))
    assert Report([plain], {})._table_rows() == [plain]


# ----------------------------------------------------------------------------- p-value floor


@pytest.mark.parametrize(
    ("b", "text"),
    [(200, "< 0.005"), (50, "< 0.020"), (99, "≤ 0.010"), (999, "≤ 0.001"), (2000, "< 0.0005")],
)
def test_p_value_bound_rounds_the_floor_up(b: int, text: str) -> None:
    assert _p_value_bound(b) == text
    bound = float(text.split()[1])
    assert bound >= 1 / (b + 1) - 1e-15  # a true statement about p
    assert _fmt_p_value(1 / (b + 1), b) == text
    assert _fmt_p_value(2 / (b + 1), b) == f"{2 / (b + 1):.3f}"  # one draw above: a number
    assert _fmt_p_value(1 / (b + 1), None) == f"{1 / (b + 1):.3f}"  # B unknown: a number


def test_p_value_at_the_floor_prints_as_a_bound_in_every_format(rep: Report) -> None:
    p = rep.row("zeros").metrics["ece_p_value"]
    assert p == pytest.approx(1 / 201)  # no draw of the calibrated null reached its ECE
    md = rep.to_markdown()
    row = next(line for line in md.splitlines() if line.startswith("| zeros | uncalibrated |"))
    assert row.endswith("| < 0.005 |") and "0.005 |" not in row.replace("< 0.005 |", "")
    assert "- ECE p-value < 0.005: none of the 200 draws" in md
    assert "1/(200 + 1) = 0.004975" in md
    page = rep.to_html()
    assert "<td>&lt; 0.005</td>" in page and "<td>0.005</td>" not in page
    tex = rep.to_latex()
    assert r"& \textless{} 0.005 \\" in tex and "& 0.005 " not in tex
    doc = json.loads(rep.to_json())
    assert doc["rows"][0]["metrics"]["ece_p_value"] == pytest.approx(1 / 201, rel=1e-15)
    floor = doc["ece_p_value_floor"]
    assert floor["null_resamples"] == doc["settings"]["null_resamples"] == 200
    assert floor["floor"] == pytest.approx(1 / 201, rel=1e-15)
    assert "< 0.005" in floor["meaning"]


def test_no_floor_note_without_a_p_value_at_the_floor() -> None:
    rng = np.random.default_rng(1)
    z = rng.normal(size=(300, 3))
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = (rng.random(300)[:, None] > p.cumsum(1)).sum(1).clip(0, 2)  # calibrated
    rep = cp.report({"cal": (p, y)}, null_resamples=50)
    assert rep.row("cal").metrics["ece_p_value"] > 1 / 51
    assert "draws of the calibrated null" not in rep.to_markdown()
    rep0 = cp.report({"cal": (p, y)}, null_resamples=0)
    assert json.loads(rep0.to_json())["ece_p_value_floor"] is None
    table = [line for line in rep0.to_markdown().splitlines() if line.startswith("|")]
    assert table[2].endswith("| nan |")


def test_cli_report_prints_the_bound_and_the_note(tmp_path: Path, capsys) -> None:
    p, y = _overconfident_with_zeros()
    f = tmp_path / "zeros.npz"
    np.savez(f, probs=p, labels=y)
    code = main(["report", str(f), "--recalibrate", "ts,hb", "--null-resamples", "200"])
    out = capsys.readouterr().out
    assert code == 0
    assert "| zeros | uncalibrated |" in out and f"| zeros | {TS} |" not in out
    assert f"- **zeros / {TS}**: not applicable: {TS} needs logits" in out
    assert "| < 0.005 |" in out


# ----------------------------------------------------------------------------- LaTeX text


def test_latex_escape_specials_and_unicode() -> None:
    assert latex_escape("_&%#${}~^\\") == (
        r"\_\&\%\#{$\$$}\{\}\textasciitilde{}\textasciicircum{}\textbackslash{}"
    )
    assert latex_escape("Błasiok → ≥ ∞ -∞ ±") == (
        r"B\l{}asiok {$\rightarrow$} {$\geq$} {$\infty$} {$-\infty$} {$\pm$}"
    )
    assert (
        latex_escape("< 0.005, NLL 0.1 -> inf") == r"\textless{} 0.005, NLL 0.1 {$\rightarrow$} inf"
    )
    assert (
        latex_escape("Zoë, ñ, σ, Ω, §6") == r"Zo{\"{e}}, {\~{n}}, {$\sigma$}, {$\Omega$}, {$\S$}6"
    )
    assert latex_escape("a--b") == "a-{}-b"  # not an en dash
    assert latex_escape("[ours]") == "{[}ours{]}"  # not an optional argument of \\ or \item
    assert latex_escape("中") == r"\texttt{[U+4E2D]}"
    for s in ("_&%#${}~^\\", "Błasiok → ≥ ∞", "模型 ą", "x\ny\tz"):
        assert latex_escape(s).isascii() and "\n" not in latex_escape(s)


def test_latex_column_labels_are_math_and_the_fragment_needs_no_package(rep: Report) -> None:
    frag = rep.to_latex(standalone=False)
    head = frag.splitlines()[2]
    assert r"$\mathrm{CE}_{2}^{2}$" in head and r"$\mathrm{CE}_{\mathrm{KL}}$" in head
    assert r"$\mathrm{REF}_{\mathrm{KL}}$" in head and r"ECE $p$-value" in head
    assert "CE_2^2" not in frag and r"CE\_2^2" not in frag
    assert frag.startswith(r"\begin{tabular}") and r"\documentclass" not in frag
    for cmd in (r"\toprule", r"\midrule", r"\bottomrule", r"\usepackage", r"\textbullet"):
        assert cmd not in frag
    doc = rep.to_latex()
    assert doc.startswith("%") and doc.rstrip().endswith(r"\end{document}")
    assert [line for line in doc.splitlines() if line.startswith(r"\usepackage")] == [
        r"\usepackage[landscape,margin=1.5cm]{geometry}",
        r"\usepackage{graphicx}",
    ]
    assert frag == rep._latex_tabular() + rep._latex_notes()
    assert rep._latex_tabular() in doc and rep._latex_notes() in doc
    assert doc.isascii()
    with pytest.raises(ValueError, match="figure_dir"):
        rep.to_latex(figure_dir="my figures")
