"""The calibration-sharpness diagram says what it plots: axis labels, tick labels and the
caption explaining d_CAL, d_TOT and the band (Chidambaram & Ge (2024) §4.2, App. D)."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from calipers import CalibrationInputError  # noqa: E402
from calipers.datasets import load_default_predictions  # noqa: E402
from calipers.diagrams import calibration_sharpness_diagram, sharpness_caption  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _main_axes(fig):
    return [a for a in fig.axes if a.get_ylabel() and a.get_ylabel() != "Density"]


def _caption(fig):
    (leg,) = [lg for lg in fig.legends if lg.get_gid() == "caption"]
    return leg


def test_axis_labels_ticks_and_caption_of_a_model_whose_band_passes_1() -> None:
    d = load_default_predictions()
    fig = calibration_sharpness_diagram(d.probs["gaussian_nb"], d.labels, title="nb")
    (ax,) = _main_axes(fig)
    assert ax.get_ylabel() == "E[correct | confidence]"
    assert ax.get_xlabel() == "Confidence"
    (band,) = [c for c in ax.collections if c.get_gid() == "sharpness-band"]
    top = np.concatenate([p.vertices for p in band.get_paths()])[:, 1].max()
    assert top > 1.3  # naive Bayes: the band passes 1 (not clipped, App. D) ...
    assert ax.get_ylim()[1] >= top  # ... and the axis shows all of it
    # ... but the tick labels, in the units of the curve, stop at 1, marked by a line
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["0", "0.2", "0.4", "0.6", "0.8", "1"]
    (unit,) = [ln for ln in ax.lines if ln.get_gid() == "unit-line"]
    assert list(unit.get_ydata()) == [1.0, 1.0]
    text = _caption(fig).get_title().get_text()
    lines = [ln.strip() for ln in text.splitlines()]
    joined = " ".join(lines)
    assert lines[0].startswith(r"$100\,d_{\mathrm{CAL}}$: calibration error")
    assert r"mean (curve $-$ diagonal)$^2$ at the samples' confidences" in joined
    assert r"$100\,d_{\mathrm{TOT}}$: Brier score (sum over classes)" in joined
    assert "Band: sharpness gap" in joined and "not clipped at 1" in joined
    # one caption item per line start (continuation lines are indented)
    starts = [ln for ln in text.splitlines() if not ln.startswith(" ")]
    assert len(starts) == 3
    # the caption lies under the panel, within the figure
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    cap = _caption(fig).get_window_extent(r)
    assert cap.y1 <= ax.xaxis.label.get_window_extent(r).y0
    assert cap.y0 >= 0 and cap.x0 >= 0 and cap.x1 <= fig.bbox.x1


def test_caption_follows_divergence_form_and_lens() -> None:
    kl = sharpness_caption("kl", "plugin", "top_label")
    assert "consistent estimate (eq. C.3)" in kl[0] and "binary KL divergence" in kl[0]
    assert "NLL, nats" in kl[1]
    binary = sharpness_caption("brier", "sharpcal", "binary")
    assert "P(y = 1)" in binary[0] and "Brier score of P(y = 1)" in binary[1]
    for bad in ({"divergence": "l1"}, {"calibration_form": "x"}, {"lens": "classwise"}):
        with pytest.raises(CalibrationInputError):
            sharpness_caption(**bad)
    d = load_default_predictions()
    p, y = d.probs["logistic_regression"][:400], d.labels[:400]
    fig = calibration_sharpness_diagram(p, y, divergence="kl", calibration_form="plugin")
    assert "NLL, nats" in _caption(fig).get_title().get_text()


def test_binary_input_is_labelled_as_the_positive_class_problem() -> None:
    rng = np.random.default_rng(0)
    q = rng.random(500)
    y = (rng.random(500) < q).astype(int)
    fig = calibration_sharpness_diagram(q, y)
    (ax,) = _main_axes(fig)
    assert ax.get_xlabel() == "Predicted P(y = 1)" and ax.get_ylabel() == "E[y | P(y = 1)]"
    assert "Brier score of P(y = 1)" in _caption(fig).get_title().get_text()
    fig2 = calibration_sharpness_diagram(q, y, lens="top_label")
    assert _main_axes(fig2)[0].get_ylabel() == "E[correct | confidence]"
    with pytest.raises(CalibrationInputError, match="mix"):
        calibration_sharpness_diagram({"a": (q, y), "b": (np.stack([1 - q, q], 1), y)})


def test_caption_on_given_axes_only_on_request() -> None:
    d = load_default_predictions()
    p, y = d.probs["random_forest"][:400], d.labels[:400]
    fig, ax = plt.subplots(layout="constrained")
    calibration_sharpness_diagram(p, y, ax=ax)
    assert not [lg for lg in fig.legends if lg.get_gid() == "caption"]
    fig2, ax2 = plt.subplots(layout="constrained")
    size = tuple(fig2.get_size_inches())
    calibration_sharpness_diagram(p, y, ax=ax2, caption=True)
    assert "d_{\\mathrm{TOT}}" in _caption(fig2).get_title().get_text()
    assert tuple(fig2.get_size_inches()) == size  # the caller's figure keeps its size
    fig3 = calibration_sharpness_diagram(p, y, caption=False)
    assert not fig3.legends or all(lg.get_gid() != "caption" for lg in fig3.legends)
