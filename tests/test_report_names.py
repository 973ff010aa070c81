"""Names of models, methods and files become figure files and titles as written.

Two names that read alike once made safe for a file name ("a b" and "a-b") keep
their own figures, and names with matplotlib's mathtext characters ("$")
are shown, not parsed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import calipers as cp
from calipers.cli import main
from calipers.reports._document import _slug

pytest.importorskip("matplotlib")

NAMES = ["a b", "a-b", "a$^$b", "x$\\frac{$y", "m__x", "_lead", "trail_", ".hidden", ""]


def _binary(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    return p, (rng.uniform(size=n) < p).astype(np.int64)


def test_slugs_are_distinct_and_keep_the_parts_of_a_figure_name_apart() -> None:
    slugs = [_slug(n) for n in NAMES]
    assert len(set(slugs)) == len(NAMES)
    for name, s in zip(NAMES, slugs, strict=True):
        assert s and "__" not in s and not s.startswith((".", "_")) and not s.endswith("_")
        assert all(c.isalnum() or c in "-._" for c in s), s
        key = f"{s}__{_slug('method_')}__reliability"
        assert key.rsplit("__", 2) == [s, _slug("method_"), "reliability"], name
    assert _slug("resnet50") == "resnet50" and _slug("logistic_regression") == "logistic_regression"
    assert len(_slug("x" * 300)) < 100 and _slug("x" * 300) != _slug("x" * 301)


def test_report_keeps_every_figure_of_models_whose_names_read_alike() -> None:
    models = {name: _binary(i) for i, name in enumerate(["a b", "a-b", "a$^$b"])}
    rep = cp.report(models, figures=True, verdicts=False)
    assert len(rep.figures) == 3 * 3  # reliability, smooth and sharpness of each model
    groups = rep._figure_groups()
    titles = sorted(rep._figure_row_title(g) for g in groups)
    assert titles == sorted(f"{m} / uncalibrated" for m in models)


def test_cli_report_of_two_files_whose_names_read_alike_writes_all_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = []
    for i, stem in enumerate(["a b", "a-b", "a$^$b", "x$\\frac{$y"]):
        p, y = _binary(i)
        f = tmp_path / f"{stem}.csv"
        np.savetxt(f, np.c_[p, y], delimiter=",", header="probs,labels", comments="", fmt="%.6g")
        files.append(str(f))
    out = tmp_path / "rep"
    assert main(["report", *files, "--recalibrate", "none", "--out", str(out)]) == 0
    pngs = sorted((out / "figures").glob("*.png"))
    assert len(pngs) == 4 * 3
    page = (out / "report.html").read_text()
    assert page.count("<img") == 4 * 3
    capsys.readouterr()


@pytest.mark.parametrize("stem", ["a$^$b", "x$\\frac{$y"])
@pytest.mark.parametrize("kind", ["reliability", "smooth", "sharpness"])
def test_cli_diagram_of_a_file_named_like_mathtext(tmp_path: Path, stem: str, kind: str) -> None:
    p, y = _binary(3)
    f = tmp_path / f"{stem}.csv"
    np.savetxt(f, np.c_[p, y], delimiter=",", header="probs,labels", comments="", fmt="%.6g")
    out = tmp_path / "d.png"
    assert main(["diagram", kind, str(f), "--out", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG")


def test_cli_streamed_report_of_a_file_named_like_mathtext(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p, y = _binary(4)
    f = tmp_path / "a$^$b.csv"
    np.savetxt(f, np.c_[p, y], delimiter=",", header="probs,labels", comments="", fmt="%.6g")
    out = tmp_path / "rep"
    assert main(["report", str(f), "--chunk-rows", "100", "--out", str(out)]) == 0
    assert len(list((out / "figures").glob("*.png"))) == 1
    capsys.readouterr()


def test_wilson_interval_contains_the_proportion_exactly() -> None:
    """At p = 0 rounding put the lower end at 2.8e-17 > p (a negative error bar)."""
    from calipers.diagrams import wilson_interval

    p = np.array([0.0, 1e-17, 0.5, 1.0 - 1e-16, 1.0])
    for n in (1, 3, 7, 10.5, 1000):
        lo, hi = wilson_interval(p, np.full(p.shape, n))
        assert np.all(lo <= p) and np.all(p <= hi) and lo[0] == 0.0 and hi[-1] == 1.0
