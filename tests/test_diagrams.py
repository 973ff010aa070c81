"""Diagrams: what is drawn must be the data, not just "a figure".

Every test reads back what a figure holds - bar rectangles (positions and
heights), line and polygon vertices, text - or renders it (PNG pixels, SVG
elements) and compares with values computed here, independently of calipers:
bin indices from ``ceil(15 c) - 1``, per-bin means with ``np.bincount``, the
Nadaraya-Watson curve, KDE and sharpness band of Chidambaram & Ge (2024) App. D as direct
double sums, Wilson intervals from ``scipy.stats.binomtest``, SmoothECE from
the SmoothECE worked numbers of docs/how-calipers-computes.md §6 and a reflected-kernel sum,
top-1/grouped/interval errors by hand. Pixel and SVG checks
are statistics (ink fraction, bar colour, element counts), not snapshots.
"""

from __future__ import annotations

import io
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import calipers as cp  # noqa: E402
from calipers.datasets import load_default_predictions  # noqa: E402
from calipers.diagrams import (  # noqa: E402
    calibration_sharpness_diagram,
    classwise_reliability_grid,
    group_bar_chart,
    interval_diagram,
    reliability_diagram,
    smooth_reliability_diagram,
    top_k_bar_chart,
    wilson_interval,
)
from calipers.validation import CalibrationInputError  # noqa: E402

BLUE = "#0072B2"  # Okabe-Ito blue: the accuracy bars
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# ----------------------------------------------------------------------------- data


def _top_label_data(n: int = 600, seed: int = 0):
    """3-class probabilities with confidence c (class 0 predicted), correct w.p. c^2.

    Confidences live in [0.45, 1) and keep a margin of 0.05/15 from every bin
    edge j/15, so the bin of each sample is ``ceil(15 c) - 1`` unambiguously.
    """
    rng = np.random.default_rng(seed)
    raw = rng.uniform(0.45, 0.999, n)
    j = np.floor(raw * 15)
    c = (j + rng.uniform(0.05, 0.95, n)) / 15
    c = np.minimum(c, 0.995)
    probs = np.stack([c, (1 - c) / 2, (1 - c) / 2], axis=1)
    correct = rng.random(n) < c**2
    labels = np.where(correct, 0, rng.integers(1, 3, n))
    return probs, labels, c, correct.astype(float)


def _bins_by_hand(c, r, n_bins=15):
    b = np.clip(np.ceil(c * n_bins).astype(int) - 1, 0, n_bins - 1)
    cnt = np.bincount(b, minlength=n_bins).astype(float)
    ne = cnt > 0
    acc = np.full(n_bins, np.nan)
    conf = np.full(n_bins, np.nan)
    acc[ne] = np.bincount(b, r, n_bins)[ne] / cnt[ne]
    conf[ne] = np.bincount(b, c, n_bins)[ne] / cnt[ne]
    ece = float(np.sum(cnt[ne] * np.abs(acc[ne] - conf[ne])) / len(c))
    return b, cnt, ne, acc, conf, ece


def _patches(fig, prefix):
    out = {}
    for a in fig.axes:
        for p in a.patches:
            gid = p.get_gid() or ""
            if gid.startswith(prefix):
                out[gid[len(prefix) :]] = p
    return out


def _texts(fig):
    return [t.get_text() for t in fig.findobj(Text)]


def _drawn_texts(fig):
    """Visible Text artists, without the labels of ticks outside the view limits."""
    undrawn = set()
    for a in fig.axes:
        if not a.get_visible():
            undrawn.update(id(t) for t in a.findobj(Text))
            continue
        for axis in (a.xaxis, a.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            eps = 1e-9 * max(1.0, abs(hi - lo))
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - eps <= tick.get_loc() <= hi + eps:
                    undrawn.update({id(tick.label1), id(tick.label2)})
    out = []
    for t in fig.findobj(Text):
        if id(t) in undrawn or not t.get_visible():
            continue
        if any(not p.get_visible() for p in _ancestors(t)):
            continue
        out.append(t)
    return out


def _ancestors(artist):
    """Containing Axes (a hidden Axes hides its texts)."""
    ax = getattr(artist, "axes", None)
    return [ax] if ax is not None else []


def _png(fig, dpi=80):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    buf.seek(0)
    return plt.imread(buf)


def _ink_fraction(img):
    """Fraction of pixels that are not (near) white."""
    return float(np.mean(np.any(img[..., :3] < 0.93, axis=-1)))


def _svg(fig):
    buf = io.StringIO()
    with mpl.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg")
    return buf.getvalue()


def _ids(svg_text):
    root = ET.fromstring(svg_text)
    return [el.get("id") for el in root.iter() if el.get("id")]


def _lines(fig, gid):
    return [ln for a in fig.axes for ln in a.lines if ln.get_gid() == gid]


def _collections(fig, gid):
    return [c for a in fig.axes for c in a.collections if c.get_gid() == gid]


# ----------------------------------------------------------------------------- image sanity


def test_ink_fraction_detects_an_empty_figure():
    """The pixel statistic used below does fail on empty pictures."""
    blank = plt.figure(figsize=(3.5, 3.0))
    assert _ink_fraction(_png(blank)) < 0.005
    frame_only = plt.figure(figsize=(3.5, 3.0))
    frame_only.add_subplot()
    assert _ink_fraction(_png(frame_only)) < 0.06  # a diagram must beat this (below)


# ----------------------------------------------------------------------------- reliability diagram


def test_reliability_bars_are_the_bin_accuracies():
    probs, labels, c, r = _top_label_data()
    b, cnt, ne, acc, conf, _ = _bins_by_hand(c, r)
    fig = reliability_diagram(probs, labels)
    bars = _patches(fig, "reliability-bar-")
    assert sorted(int(k) for k in bars) == np.flatnonzero(ne).tolist()
    assert (~ne).sum() >= 6  # confidences below 0.45 never occur: those bins have no bar
    for j, p in bars.items():
        j = int(j)
        assert p.get_x() == pytest.approx(j / 15, abs=1e-12)
        assert p.get_width() == pytest.approx(1 / 15, abs=1e-12)
        assert p.get_y() == 0.0
        assert p.get_height() == pytest.approx(acc[j], abs=1e-12)
    gaps = _patches(fig, "gap-bar-")
    assert sorted(gaps) == sorted(bars)
    for j, p in gaps.items():
        j = int(j)
        assert p.get_y() == pytest.approx(min(acc[j], conf[j]), abs=1e-12)
        assert p.get_height() == pytest.approx(abs(acc[j] - conf[j]), abs=1e-12)
    hist = _patches(fig, "histogram-bar-")
    assert {int(k): p.get_height() for k, p in hist.items()} == {
        j: cnt[j] for j in np.flatnonzero(ne)
    }
    # the histogram shares the x axis and sits below the diagram
    ax_main, ax_hist = fig.axes
    assert ax_main.get_shared_x_axes().joined(ax_main, ax_hist)
    assert ax_hist.get_position().y1 <= ax_main.get_position().y0


def test_reliability_svg_elements_labels_and_ece_text():
    probs, labels, c, r = _top_label_data()
    *_, ne, _, _, ece_hand = _bins_by_hand(c, r)
    assert cp.ece(probs, labels) == pytest.approx(ece_hand, abs=1e-12)
    fig = reliability_diagram(probs, labels, title="toy model")
    svg = _svg(fig)
    ids = _ids(svg)
    assert sum(i.startswith("reliability-bar-") for i in ids) == int(ne.sum())
    assert sum(i.startswith("gap-bar-") for i in ids) == int(ne.sum())
    assert sum(i.startswith("histogram-bar-") for i in ids) == int(ne.sum())
    for label in ("Confidence", "Accuracy", "Count", "toy model", "Gap", "Perfect calibration"):
        assert f">{label}<" in svg
    note = f"ECE = {100 * ece_hand:.2f}%"
    assert note in svg
    acc_note = f"Accuracy = {100 * r.mean():.1f}%"
    assert [t for t in _texts(fig) if t.startswith("ECE")] == [f"{note}\n{acc_note}"]


def test_reliability_png_has_bars_in_the_bar_colour():
    probs, labels, c, r = _top_label_data()
    _, cnt, ne, acc, conf, _ = _bins_by_hand(c, r)
    fig = reliability_diagram(probs, labels)
    img = _png(fig, dpi=fig.dpi)
    frac = _ink_fraction(img)
    assert 0.12 < frac < 0.6
    ax = fig.axes[0]
    h = img.shape[0]
    checked = 0
    for j in np.flatnonzero(ne & (np.minimum(acc, conf) > 0.25)):
        x, y = ax.transData.transform(((j + 0.5) / 15, min(acc[j], conf[j]) / 2))
        px = img[int(round(h - y)), int(round(x)), :3]
        assert np.allclose(px, to_rgb(BLUE), atol=0.06), (j, px)
        checked += 1
    assert checked >= 5
    # above the highest bar and gap of a bin, and left of the diagonal: background
    x, y = ax.transData.transform((0.05, 0.6))
    assert np.all(img[int(round(h - y)), int(round(x)), :3] > 0.95)


def test_wilson_intervals_match_scipy():
    binomtest = pytest.importorskip("scipy.stats").binomtest
    for k, n in [(0, 7), (3, 10), (10, 10), (41, 57)]:
        lo, hi = wilson_interval(k / n, n)
        ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
        assert float(lo) == pytest.approx(ci.low, abs=1e-12)
        assert float(hi) == pytest.approx(ci.high, abs=1e-12)
    probs, labels, c, r = _top_label_data(n=300, seed=3)
    b, cnt, ne, acc, _, _ = _bins_by_hand(c, r)
    fig = reliability_diagram(probs, labels, intervals="wilson", confidence_level=0.9)
    (lc,) = _collections(fig, "intervals")
    segs = lc.get_segments()
    assert len(segs) == int(ne.sum())
    for seg, j in zip(segs, np.flatnonzero(ne), strict=True):
        k = int(round(acc[j] * cnt[j]))
        ci = binomtest(k, int(cnt[j])).proportion_ci(0.9, method="wilson")
        assert seg[0][0] == pytest.approx((j + 0.5) / 15)
        assert sorted([seg[0][1], seg[1][1]]) == pytest.approx([ci.low, ci.high], abs=1e-9)


def test_bootstrap_intervals_are_reproducible_and_bracket_the_bars():
    probs, labels, c, r = _top_label_data(n=300, seed=4)
    _, _, ne, acc, _, _ = _bins_by_hand(c, r)

    def segments(seed):
        fig = reliability_diagram(probs, labels, intervals="bootstrap", n_bootstrap=80, seed=seed)
        (lc,) = _collections(fig, "intervals")
        return np.array([[s[0][1], s[1][1]] for s in lc.get_segments()])

    a, b, other = segments(1), segments(1), segments(2)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, other)
    lo, hi = a.min(axis=1), a.max(axis=1)
    assert np.all((lo >= 0) & (hi <= 1))
    assert np.all((lo <= acc[ne] + 1e-12) & (acc[ne] <= hi + 1e-12))
    assert np.mean(hi - lo) > 0.05


def test_equal_mass_bins_are_contiguous_with_chunk_accuracies():
    rng = np.random.default_rng(5)
    p = rng.uniform(0.02, 0.98, 400)  # distinct values
    y = (rng.random(400) < p).astype(int)
    fig = reliability_diagram(p, y, lens="binary", estimator=cp.EqualMass(5))
    bars = sorted(_patches(fig, "reliability-bar-").values(), key=lambda q: q.get_x())
    assert len(bars) == 5
    order = np.argsort(p)
    chunks = np.split(order, 5)  # Nixon's rule: 80 sorted scores per bin
    for q, idx in zip(bars, chunks, strict=True):
        assert q.get_height() == pytest.approx(y[idx].mean(), abs=1e-12)
    assert bars[0].get_x() == 0.0
    assert bars[-1].get_x() + bars[-1].get_width() == pytest.approx(1.0)
    for left, right in zip(bars[:-1], bars[1:], strict=True):
        assert left.get_x() + left.get_width() == pytest.approx(right.get_x())
    assert [a.get_ylabel() for a in fig.axes] == ["Observed frequency", "Count"]
    assert fig.axes[1].get_xlabel() == "Predicted probability"


def test_reliability_axes_modes():
    probs, labels, *_ = _top_label_data(n=200)
    fig, ax = plt.subplots()
    assert reliability_diagram(probs, labels, ax=ax) is fig
    assert len(fig.axes) == 1 and ax.get_xlabel() == "Confidence"
    with pytest.raises(CalibrationInputError, match="second Axes"):
        reliability_diagram(probs, labels, ax=ax, show_histogram=True)
    fig2, (a1, a2) = plt.subplots(2, 1)
    reliability_diagram(probs, labels, ax=(a1, a2))
    assert _patches(fig2, "histogram-bar-")
    fig3 = reliability_diagram(probs, labels, show_histogram=False)
    assert len(fig3.axes) == 1 and not _patches(fig3, "histogram-bar-")
    with pytest.raises(CalibrationInputError, match="intervals"):
        reliability_diagram(probs, labels, intervals="normal")
    with pytest.raises(CalibrationInputError, match="classwise_reliability_grid"):
        reliability_diagram(probs, labels, lens="classwise")


def test_missing_matplotlib_gives_a_clear_error(monkeypatch):
    probs, labels, *_ = _top_label_data(n=50)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install matplotlib"):
        reliability_diagram(probs, labels)


def test_importing_diagrams_does_not_import_matplotlib():
    code = "import sys, calipers, calipers.diagrams; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------- class-wise grid


def test_classwise_grid_panels_are_per_class_reliability():
    rng = np.random.default_rng(6)
    logits = rng.normal(size=(500, 4)) * 2
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = np.array([rng.choice(4, p=q) for q in probs**1.5 / (probs**1.5).sum(1, keepdims=True)])
    names = ["cat", "dog", "owl", "fox"]
    fig = classwise_reliability_grid(probs, labels, panels=[1, 3], class_names=names, ncols=2)
    shown = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in shown] == ["dog", "fox"]
    for a, k in zip(shown, [1, 3], strict=True):
        c = probs[:, k]
        r = (labels == k).astype(float)
        _, cnt, ne, acc, conf, ece_k = _bins_by_hand(c, r)
        bars = {
            int(p.get_gid().rsplit("-", 1)[1]): p.get_height()
            for p in a.patches
            if (p.get_gid() or "").startswith("reliability-bar-")
        }
        assert sorted(bars) == np.flatnonzero(ne).tolist()
        assert np.allclose([bars[j] for j in sorted(bars)], acc[ne], atol=1e-12)
        assert [n.get_title().get_text() for n in a.artists] == [f"ECE {100 * ece_k:.1f}%"]
    assert fig.get_supxlabel() if hasattr(fig, "get_supxlabel") else True
    assert "Predicted probability" in _texts(fig)
    assert "Observed frequency" in _texts(fig)
    with pytest.raises(CalibrationInputError, match="panels"):
        classwise_reliability_grid(probs, labels, panels=[4])


# ----------------------------------------------------------------------------- calibration-sharpness


def _nw_by_hand(h, c, brier, x, s=0.05):
    """Chidambaram & Ge (2024) eq. (4.8) and App. D by direct double sums (Gaussian kernel)."""
    K = np.exp(-0.5 * ((x[:, None] - h[None, :]) / s) ** 2)
    m = K @ c / K.sum(1)
    cond = K @ brier / K.sum(1)
    dens = K.sum(1) / (len(h) * s * np.sqrt(2 * np.pi))
    rho = cond - (m - x) ** 2
    return m, dens, np.maximum(m - dens * rho / 2, 0), m + dens * rho / 2


def test_calibration_sharpness_curve_band_and_note_match_direct_sums():
    probs, labels, c, r = _top_label_data(n=400, seed=7)
    y1 = np.eye(3)[labels]
    brier = ((probs - y1) ** 2).sum(1)
    x = np.linspace(0, 1, 201)
    m, dens, lower, upper = _nw_by_hand(c, r, brier, x)
    fig = calibration_sharpness_diagram(probs, labels, n_points=201, title="toy")
    (full,) = _lines(fig, "calibration-curve-unsupported")
    (solid,) = _lines(fig, "calibration-curve")
    assert np.allclose(full.get_xdata(), x) and np.allclose(full.get_ydata(), m, atol=1e-8)
    ys = np.asarray(solid.get_ydata(), dtype=float)
    shown = np.isfinite(ys)
    assert np.allclose(ys[shown], m[shown], atol=1e-8)
    # solid exactly where at least one effective sample is under the kernel
    support = dens * len(c) * 0.05 * np.sqrt(2 * np.pi)
    assert np.array_equal(shown, support >= 1.0)
    assert not shown[0] and shown[-1]  # no confidences near 0, many near 1
    (band,) = _collections(fig, "sharpness-band")
    verts = np.concatenate([p.vertices for p in band.get_paths()])
    for i in range(0, 201, 10):
        at = verts[np.isclose(verts[:, 0], x[i]), 1]
        assert at.min() == pytest.approx(lower[i], abs=1e-7)
        assert at.max() == pytest.approx(upper[i], abs=1e-7)
    (dens_fill,) = _collections(fig, "density")
    dv = np.concatenate([p.vertices for p in dens_fill.get_paths()])
    assert dv[:, 1].max() == pytest.approx(dens.max(), rel=1e-6)
    m_i = _nw_by_hand(c, r, brier, c)[0]
    d_cal = np.mean((m_i - c) ** 2)  # the authors' code's d_CAL (Chidambaram & Ge (2024) App. D)
    (note,) = [t for t in _texts(fig) if "CAL}}$ = " in t]  # the note, not the caption
    # the note prints 100 d_CAL and 100 d_TOT, as the paper's figures (x 100)
    assert note.splitlines()[0] == f"$100\\,d_{{\\mathrm{{CAL}}}}$ = {100 * d_cal:.2f}"
    assert note.splitlines()[1] == f"$100\\,d_{{\\mathrm{{TOT}}}}$ = {100 * brier.mean():.2f}"
    assert note.splitlines()[2] == f"Accuracy = {100 * r.mean():.1f}%"
    # plug-in (C.3) form on request
    fig2 = calibration_sharpness_diagram(probs, labels, n_points=51, calibration_form="plugin")
    plug = np.mean(m_i**2 - c**2 - 2 * c * (r - c))
    (note2,) = [t for t in _texts(fig2) if "CAL}}$ = " in t]
    assert note2.splitlines()[0].endswith(f"= {100 * plug:.2f}")
    labels_txt = _texts(fig)
    for s in ("Confidence", "E[correct | confidence]", "Density", "toy"):
        assert s in labels_txt


def test_calibration_sharpness_band_clipped_below_not_above_and_aligned_axes():
    d = load_default_predictions()
    models = {m: d.probs[m][:600] for m in ("gaussian_nb", "logistic_regression")}
    y = d.labels[:600]
    fig = calibration_sharpness_diagram(models, y, n_points=301)
    main = [a for a in fig.axes if a.get_ylabel() == "E[correct | confidence]"]
    assert [a.get_title() for a in main] == list(models)
    assert main[0].get_ylim() == main[1].get_ylim()
    bands = _collections(fig, "sharpness-band")
    assert len(bands) == 2
    v = np.concatenate([p.vertices for p in bands[0].get_paths()])
    assert v[:, 1].min() >= 0.0  # lower edge clipped at 0
    assert v[:, 1].max() > 1.05  # upper edge not clipped at 1 (App. D)
    assert main[0].get_ylim()[1] >= v[:, 1].max()
    fig2 = calibration_sharpness_diagram(models, y, n_points=301, align_axes=False)
    main2 = [a for a in fig2.axes if a.get_ylabel() == "E[correct | confidence]"]
    assert main2[0].get_ylim()[1] > 1.05 * main2[1].get_ylim()[1]
    with pytest.raises(CalibrationInputError, match="no labels"):
        calibration_sharpness_diagram(models)
    fig3 = calibration_sharpness_diagram({k: (v_, y) for k, v_ in models.items()}, n_points=51)
    assert len([a for a in fig3.axes if a.get_ylabel() == "E[correct | confidence]"]) == 2


# ----------------------------------------------------------------------------- smooth diagram


def _worked_smooth_data():
    """docs/how-calipers-computes.md §6 worked check: n = 2000, f ~ Beta(5, 2), P(y = 1 | f) = f^1.5,
    ``np.random.default_rng(1)``; as a 20-class top-label problem with confidence f
    (the other 19 classes share 1 - f, which is below f for every f > 0.05)."""
    rng = np.random.default_rng(1)
    f = rng.beta(5, 2, 2000)
    y = (rng.random(2000) < f**1.5).astype(int)
    assert f.min() > 0.05
    probs = np.column_stack([f] + [(1 - f) / 19] * 19)
    return probs, np.where(y == 1, 0, 1), f, y


def test_smooth_diagram_note_is_the_worked_smece():
    probs, labels, f, y = _worked_smooth_data()
    fig = smooth_reliability_diagram(probs, labels)
    (note,) = [t for t in _texts(fig) if t.startswith("smECE")]
    # worked numbers: smECE = 0.107238 at sigma* = 0.107422 (relplot 1.0.3)
    assert note.splitlines() == [
        "smECE = 10.72%",
        "σ* = 0.107",
        f"Accuracy = {100 * y.mean():.1f}%",
    ]
    fig2 = smooth_reliability_diagram(probs, labels, bandwidth=0.05, show_density=False)
    (note2,) = [t for t in _texts(fig2) if t.startswith("smECE")]
    assert note2.splitlines()[:2] == ["smECE = 10.73%", "σ = 0.050"]  # smooth_ece(0.05) = 0.107256
    assert not _collections(fig2, "density")


def test_smooth_diagram_widths_follow_density_and_curve_is_reflected_nw():
    probs, labels, f, y = _worked_smooth_data()
    fig = smooth_reliability_diagram(probs, labels, bandwidth=0.05)
    (lc,) = _collections(fig, "smooth-curve")
    lw = np.asarray(lc.get_linewidths())
    segs = lc.get_segments()
    assert lw.max() == pytest.approx(4.0, abs=0.05) and lw.min() >= 0.4
    assert lw.max() / lw.min() > 3
    t = np.array([s_[0, 0] for s_ in segs])

    def phi(u):
        return np.exp(-0.5 * (u / 0.05) ** 2)

    # reflected Gaussian kernel (mirror images of every point about 0 and 1)
    K = phi(t[:, None] - f) + phi(t[:, None] + f) + phi(t[:, None] - (2 - f))
    dens = K.sum(1)
    nw = K @ y / dens
    # thickest where the confidences concentrate; widths affine in the density
    assert abs(t[lw.argmax()] - t[dens.argmax()]) < 0.02
    rel = (lw - 0.4) / 3.6
    assert np.allclose(rel, dens / dens.max(), atol=0.02)
    inner = (t > 0.3) & (t < 0.97)
    ys = np.array([s_[0, 1] for s_ in segs])
    assert np.allclose(ys[inner], nw[inner], atol=0.01)
    # not drawn where no data: the curve starts above 0 (no confidence below 0.05)
    assert t.min() > 0.0


def test_smooth_bootstrap_band_is_reproducible():
    rng = np.random.default_rng(10)
    f = rng.uniform(0.5, 1.0, 400)
    y = (rng.random(400) < f).astype(int)
    probs = np.stack([f, 1 - f], axis=1)
    lab = np.where(y == 1, 0, 1)
    kw = {"intervals": "bootstrap", "n_bootstrap": 10, "bandwidth": 0.08, "seed": 3}
    a = _collections(smooth_reliability_diagram(probs, lab, **kw), "bootstrap-band")[0]
    b = _collections(smooth_reliability_diagram(probs, lab, **kw), "bootstrap-band")[0]
    va = np.concatenate([p.vertices for p in a.get_paths()])
    vb = np.concatenate([p.vertices for p in b.get_paths()])
    assert np.array_equal(va, vb) and va[:, 1].max() - va[:, 1].min() > 0.1


# ----------------------------------------------------------------------------- bar charts


def _bar_heights(fig, prefix):
    return {k: p.get_height() for k, p in _patches(fig, prefix).items()}


def test_top_k_bar_chart_heights():
    probs, labels, c, r = _top_label_data(n=500, seed=11)
    *_, ece_hand = _bins_by_hand(c, r)
    fig = top_k_bar_chart(probs, labels, ks=(1, 2), estimator=cp.EqualWidth(15))
    hts = _bar_heights(fig, "topk-bar-")
    assert sorted(hts) == ["0-0", "0-1", "0-2"]
    assert hts["0-0"] == pytest.approx(ece_hand, abs=1e-12)  # Trad.
    assert hts["0-1"] == pytest.approx(ece_hand, abs=1e-12)  # top-1 with the same bins
    assert hts["0-2"] == pytest.approx(
        float(cp.top_k_ece(probs, labels, k=2, estimator=cp.EqualWidth(15))), abs=1e-12
    )
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["Trad.", "Top-1", "Top-2"]
    d = load_default_predictions()
    fig2 = top_k_bar_chart(d.probs, d.labels, ks=(1, 3), show_full=True)
    pats = _patches(fig2, "topk-bar-")
    assert len(pats) == 3 * 4
    for i, name in enumerate(d.model_names):
        assert {p.get_facecolor()[:3] for k, p in pats.items() if k.startswith(f"{i}-")} == {
            to_rgb(OKABE_ITO[i])
        }
        assert pats[f"{i}-2"].get_height() == pytest.approx(
            float(cp.top_k_ece(d.probs[name], d.labels, k=3)), abs=1e-12
        )
        assert pats[f"{i}-3"].get_height() == pytest.approx(
            float(cp.full_ece(d.probs[name], d.labels)), abs=1e-12
        )
    assert [t.get_text() for t in fig2.legends[0].get_texts()] == list(d.model_names)
    with pytest.raises(CalibrationInputError, match="k < 3"):
        top_k_bar_chart(probs, labels, ks=(1, 3))


def test_group_bar_chart_heights_by_hand():
    rng = np.random.default_rng(12)
    logits = rng.normal(size=(600, 4)) * 1.5
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = rng.integers(0, 4, 600)
    groups = [[0, 2], [1, 3]]
    fig = group_bar_chart(
        probs, labels, groups, group_names=["even", "odd"], estimator=cp.EqualWidth(15)
    )
    hts = _bar_heights(fig, "group-bar-")
    q = probs[:, 0] + probs[:, 2]  # group-0 probability; group 1 is its complement
    t = np.isin(labels, groups[0]).astype(float)

    def binned_l1(qq, tt):  # TVD of 2-vectors = |q_bar - t_bar|, bins on the first column
        return _bins_by_hand(qq, tt)[-1]

    assert hts["0-1"] == pytest.approx(binned_l1(q, t), abs=1e-12)
    for g in (0, 1):
        sel = np.isin(labels, groups[g])
        assert hts[f"0-{2 + g}"] == pytest.approx(binned_l1(q[sel], t[sel]), abs=1e-12)
    assert [x.get_text() for x in fig.axes[0].get_xticklabels()] == ["Trad.", "All", "even", "odd"]


def test_interval_diagram_counts_and_errors_by_hand():
    probs, labels, c, r = _top_label_data(n=500, seed=13)
    ivs = [(0.0, 0.4), (0.4, 0.7), (0.7, 1.0)]
    fig = interval_diagram(probs, labels, ivs, estimator=cp.EqualWidth(1), show_full=False)
    errs = _bar_heights(fig, "interval-bar-")
    counts = _bar_heights(fig, "count-bar-")
    assert "0-1" not in errs  # interval [0, 0.4] holds no sample: no bar ...
    assert any(t == "n/a" for t in _texts(fig))  # ... but a note
    assert counts["0-0"] == 0.0
    for i, (lo, hi) in enumerate(ivs[1:], start=1):
        sel = (c >= lo) & (c <= hi)
        assert counts[f"0-{i}"] == float(sel.sum())
        ybar = r[sel].mean()  # one bin: the interval's accuracy
        assert errs[f"0-{1 + i}"] == pytest.approx(max(0.0, lo - ybar, ybar - hi), abs=1e-12)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == [
        "Trad.",
        "0\u20130.4",
        "0.4\u20130.7",
        "0.7\u20131",
    ]
    d = load_default_predictions()
    fig2 = interval_diagram(d.probs, d.labels)
    assert [t.get_text() for t in fig2.axes[1].get_xticklabels()] == [
        "Low\n0\u20130.33",
        "Medium\n0.33\u20130.66",
        "High\n0.66\u20131",
    ]
    conf = d.probs["random_forest"].max(1)
    n_high = float(((conf >= 0.66) & (conf <= 1.0)).sum())
    assert _bar_heights(fig2, "count-bar-")["1-2"] == n_high
    per = cp.interval_calibration_error(d.probs["random_forest"], d.labels)
    assert _bar_heights(fig2, "interval-bar-")["1-3"] == pytest.approx(per[1], abs=1e-12)


# ----------------------------------------------------------------------------- every kind


def _every_kind():
    d = load_default_predictions()
    p, y = d.probs["random_forest"][:500], d.labels[:500]
    return {
        "reliability": lambda: reliability_diagram(p, y, intervals="wilson"),
        "sharpness": lambda: calibration_sharpness_diagram(p, y, n_points=201),
        "smooth": lambda: smooth_reliability_diagram(p, y),
        "classwise": lambda: classwise_reliability_grid(p, y, panels=[0, 1, 2]),
        "topk": lambda: top_k_bar_chart(p, y, ks=(1, 2)),
        "group": lambda: group_bar_chart(p, y, [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]),
        "interval": lambda: interval_diagram(p, y),
    }


@pytest.mark.parametrize("kind", list(_every_kind()))
def test_every_kind_renders_with_readable_text(kind):
    fig = _every_kind()[kind]()
    assert fig.get_figwidth() <= 7.01
    img = _png(fig, dpi=fig.dpi)  # at the figure's dpi: text extents below match the render
    assert 0.06 < _ink_fraction(img) < 0.7
    if kind == "sharpness":  # mathtext note, twin axes, fills: also vector formats
        svg = _svg(fig)
        ids = _ids(svg)
        for gid in ("sharpness-band", "density", "calibration-curve", "metrics"):
            assert gid in ids
        for label in ("Confidence", "E[correct | confidence]", "Density"):
            assert f">{label}<" in svg
        buf = io.BytesIO()
        fig.savefig(buf, format="pdf")
        assert buf.getvalue().startswith(b"%PDF") and len(buf.getvalue()) > 5000
    # no two texts overlap (labels, tick labels, titles, notes, legends); drawn again on
    # the Agg canvas first: a vector save lays the figure out at 72 dpi, and text
    # positions are those of the last draw
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in _drawn_texts(fig) if t.get_text().strip()]
    boxes = [t.get_window_extent(renderer).padded(-1.0) for t in texts]
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert not boxes[i].overlaps(boxes[j]), (texts[i].get_text(), texts[j].get_text())
    # fonts >= 8 pt everywhere (ticks included: drawn above)
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_text() and t.get_visible()]
    assert sizes and min(sizes) >= 8
    # every visible Axes has labelled axes
    for a in fig.axes:
        if a.get_visible() and a.get_label() != "<colorbar>":
            assert a.get_xlabel() or a.get_ylabel() or kind == "classwise"
