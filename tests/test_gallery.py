"""The gallery (examples/plot_*.py): every script runs, draws, warns of nothing, writes nothing.

Sphinx-gallery executes these scripts when the documentation is built; this
runs each one with ``runpy`` under matplotlib's Agg backend (and
``CALIPERS_GALLERY_QUICK=1``, which the slowest one reads to shrink its data),
with every warning turned into an error except the known ones below, and checks
that it creates at least one figure, leaves no file behind and has the layout
sphinx-gallery expects (a module docstring that starts with an underlined
title, ``# %%`` cells).
"""

from __future__ import annotations

import ast
import contextlib
import io
import runpy
import time
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(EXAMPLES.glob("plot_*.py"))

#: warnings a script may raise, and why they are harmless: (category, message regex)
KNOWN_WARNINGS: list[tuple[type[Warning], str]] = [
    # plt.show() at the end of a script, under the non-interactive Agg backend
    (UserWarning, r".*non-interactive, and thus cannot be shown"),
]

#: seconds one script may take here (it runs again when the documentation is built)
TIME_LIMIT = 20.0

#: optional dependencies a script needs (skipped here, and left out of the docs, without them)
NEEDS: dict[str, tuple[str, ...]] = {
    "plot_training_monitoring.py": ("torch", "torchmetrics"),
    # statsmodels ships the data set of the audit (Fair 1978)
    "plot_subgroup_calibration.py": ("statsmodels",),
}


def test_the_gallery_has_its_scripts_and_header() -> None:
    names = {p.name for p in SCRIPTS}
    assert {
        "plot_reliability_diagram.py",
        "plot_bins_matter.py",
        "plot_recalibration.py",
        "plot_smooth_ece.py",
        "plot_calibration_sharpness.py",
        "plot_proper_calibration_error.py",
    } <= names
    header = (EXAMPLES / "README.rst").read_text(encoding="utf-8").splitlines()
    assert header[:2] == ["Gallery", "======="]
    assert header[3].startswith("Runnable examples")


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_has_the_sphinx_gallery_layout(script: Path) -> None:
    source = script.read_text(encoding="utf-8")
    doc = ast.get_docstring(ast.parse(source), clean=False)
    assert doc, f"{script.name}: no module docstring"
    lines = doc.strip("\n").splitlines()
    title, underline = lines[0], lines[1]
    assert title.strip() and set(underline) == {"="} and len(underline) >= len(title), (
        f"{script.name}: the docstring must start with an RST title underlined with '='"
    )
    assert len(lines) > 3 and lines[2] == "", f"{script.name}: a paragraph must follow the title"
    assert "\n# %%\n" in source, f"{script.name}: no '# %%' cell separator"
    for banned in ("savefig", "to_csv", "open("):
        assert banned not in source, f"{script.name} writes files ({banned})"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_runs_and_draws(
    script: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in NEEDS.get(script.name, ()):
        pytest.importorskip(module)
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg", force=True)
    import matplotlib.pyplot as plt

    monkeypatch.setenv("CALIPERS_GALLERY_QUICK", "1")
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in EXAMPLES.iterdir())
    plt.close("all")
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()) as out:
            warnings.simplefilter("error")
            for category, message in KNOWN_WARNINGS:
                warnings.filterwarnings("ignore", message=message, category=category)
            runpy.run_path(str(script), run_name="__main__")
        seconds = time.perf_counter() - start
        figures = [plt.figure(n) for n in plt.get_fignums()]
        assert figures, f"{script.name} drew no figure"
        for fig in figures:
            assert fig.axes, f"{script.name}: a figure without axes"
    finally:
        plt.close("all")
    assert out.getvalue().strip(), f"{script.name} printed nothing"
    assert not list(tmp_path.iterdir()), f"{script.name} wrote files: {list(tmp_path.iterdir())}"
    assert sorted(p.name for p in EXAMPLES.iterdir()) == before, f"{script.name} wrote files"
    assert seconds < TIME_LIMIT, f"{script.name} took {seconds:.1f} s"
