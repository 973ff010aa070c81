"""report.tex compiles with a real TeX engine (pdflatex from Debian's texlive-latex-base,
or tectonic), with hostile model names, non-finite numbers, flags, notes and figures."""

import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import calipers as cp
from calipers.cli import main
from calipers.reports._document import Report, ReportRow
from calipers.reports._latex import latex_escape

SPECIALS = "_ & % # $ { } ~ ^ \\"


def _engine() -> tuple[str, str]:
    for name in ("pdflatex", "tectonic"):
        path = shutil.which(name)
        if path:
            return name, path
    pytest.skip(
        "no TeX engine on this machine (neither pdflatex nor tectonic); "
        "Debian: apt-get install texlive-latex-base"
    )


def _compile(tex: Path) -> tuple[bytes, str]:
    """Compile ``tex`` in its folder; returns the PDF's bytes and the log. With pdflatex a
    character missing from its font is an error (``\\tracinglostchars=3``) and the PDF's
    objects are left uncompressed, so that its fonts can be read."""
    name, path = _engine()
    env = {**os.environ, "max_print_line": "100000"}  # one log line per message
    if name == "pdflatex":
        cmd = [
            path,
            "-interaction=nonstopmode",
            "-halt-on-error",
            "-no-shell-escape",
            "-jobname",
            tex.stem,
            rf"\pdfobjcompresslevel=0\relax\tracinglostchars=3\relax\input{{{tex.name}}}",
        ]
    else:
        cmd = [path, "--keep-logs", "--outdir", str(tex.parent), str(tex)]
    res = subprocess.run(cmd, cwd=tex.parent, capture_output=True, text=True, timeout=300, env=env)
    log_file = tex.with_suffix(".log")
    log = log_file.read_text(errors="replace") if log_file.exists() else ""
    assert res.returncode == 0, f"{name} failed on {tex}:\n{res.stdout[-3000:]}\n{log[-3000:]}"
    pdf = tex.with_suffix(".pdf").read_bytes()
    assert pdf.startswith(b"%PDF")
    if name == "pdflatex":
        # only the Type 1 fonts of texlive-latex-base/texlive-base; a TS1 glyph (e.g. the
        # default \textbullet) would be drawn with a bitmap (Type 3) font made by METAFONT
        assert re.search(rb"/Subtype\s*/Type1", pdf)
        assert not re.search(rb"/Subtype\s*/Type3", pdf), "a bitmap font was used"
        assert "LaTeX Error" not in log and "Missing character" not in log
    return pdf, log


def _hostile_report() -> Report:
    rng = np.random.default_rng(0)
    n = 300
    z = rng.normal(size=(2 * n, 3)) * 4
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = rng.integers(0, 3, 2 * n)
    p[:, 2] = np.where(p[:, 2] < 0.05, 0.0, p[:, 2])  # exact zeros: NLL = inf, no TS
    p /= p.sum(1, keepdims=True)
    names = [f"net {SPECIALS} v1", "[ours] Błasiok → ≥ ∞ é ø"]
    rep = cp.report(
        {names[0]: (p[n:], y[n:]), names[1]: (p[n:][:, [1, 0, 2]], y[n:])},
        calibration={names[0]: (p[:n], y[:n]), names[1]: (p[:n][:, [1, 0, 2]], y[:n])},
        recalibrators=[cp.TemperatureScaling(), cp.HistogramBinning()],
        n_bootstrap=3,
        null_resamples=200,
        figures=True,
    )
    # a hand-made row with NaN, -inf and +inf cells and a flag full of specials
    m = dict(rep.rows[0].metrics)
    m.update(accuracy=math.nan, ece=-math.inf, nll=math.inf)
    rep.rows.append(
        ReportRow(names[0], "Hand_made #2 模型", 10, m, flags=[f"{SPECIALS} 50% -> ∞ < 0.005 ±"])
    )
    rep.settings["note " + SPECIALS] = "Błasiok & Nakkiran; x ≥ 1 → ∞"
    return rep


def test_hostile_report_tex_compiles(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    _engine()
    rep = _hostile_report()
    md = rep.to_markdown()
    assert "∞" in md and "nan" in md and "-∞" in md and "< 0.005" in md  # all there to render
    assert any(rep._na_reason(r) for r in rep.rows) and any(r.flags for r in rep._table_rows())
    assert any(r.intervals for r in rep.rows)
    rep.save(tmp_path)
    tex = tmp_path / "report.tex"
    source = tex.read_text()
    assert source.isascii()
    escaped = r"\_ \& \% \# {$\$$} \{ \} \textasciitilde{} \textasciicircum{} \textbackslash{}"
    assert f"net {escaped} v1" in source
    assert r"B\l{}asiok" in source and r"\texttt{[U+6A21]}" in source
    pdf, log = _compile(tex)
    if _engine()[0] == "pdflatex":
        shown = set(re.findall(r"<(figures/[^,>]+\.png)", log))
        ascii_keys = {k for k in rep.figures if k.isascii()}
        assert ascii_keys and len(ascii_keys) < len(rep.figures)
        assert shown == {f"figures/{k}.png" for k in ascii_keys}
        # a file name LaTeX cannot read (not ASCII) is named in the text instead
        for k in set(rep.figures) - ascii_keys:
            assert latex_escape(f"figures/{k}.png") in source
    # the fragment alone, inside a minimal document of the user's, needs no package
    frag = tmp_path / "fragment.tex"
    frag.write_text(
        "\\documentclass{article}\\begin{document}\n"
        + rep.to_latex(standalone=False)
        + "\\end{document}\n"
    )
    _compile(frag)


def test_demo_report_tex_compiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What `calipers demo` writes as report.tex is a document pdflatex compiles."""
    pytest.importorskip("matplotlib")
    _engine()
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0
    capsys.readouterr()
    tex = out / "report.tex"
    source = tex.read_text()
    assert source.startswith("%") and r"\documentclass" in source
    assert r"\textless{} 0.005" in source  # p-values at the resampling floor
    pdf, log = _compile(tex)
    assert len(pdf) > 10_000
    if _engine()[0] == "pdflatex":
        n_figs = len(list((out / "figures").glob("*.png")))
        assert len(set(re.findall(r"<(figures/[^,>]+\.png)", log))) == n_figs > 0
