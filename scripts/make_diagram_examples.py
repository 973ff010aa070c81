"""Render one example of every calipers diagram into ``docs/images/``.

All examples use the embedded default data set
(:func:`calipers.datasets.load_default_predictions`: out-of-fold predictions of
three scikit-learn models on the handwritten digits, 1797 samples, 10 classes),
so the pictures are reproducible without downloads:

``reliability_diagram.png``
    Gaussian naive Bayes (over-confident), 15 equal-width bins, Wilson intervals.
``calibration_sharpness_diagram.png``
    The three models side by side with aligned y axes (Chidambaram & Ge (2024) Fig. 2).
``smooth_reliability_diagram.png``
    Random forest (under-confident), SmoothECE bandwidth, bootstrap band.
``classwise_reliability_grid.png``
    Random forest, one panel per digit.
``top_k_bar_chart.png``
    Top-k ECE of the three models (Kirchenbauer, Oaks & Heim (2022) Fig. 1).
``group_bar_chart.png``
    The digits grouped by shape (Kirchenbauer, Oaks & Heim (2022) Fig. 3).
``interval_diagram.png``
    Low / medium / high confidence categories (Kirchenbauer, Oaks & Heim (2022) Figs. 5-6).
``reliability_vs_sharpness.png``
    Reliability and calibration-sharpness diagrams of two models, aligned
    (Chidambaram & Ge (2024) Fig. 2), composed with ``ax=``.

Usage::

    python scripts/make_diagram_examples.py [--out docs/images] [--dpi 150]

Needs matplotlib (``pip install matplotlib``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from calipers.datasets import load_default_predictions  # noqa: E402
from calipers.diagrams import (  # noqa: E402
    calibration_sharpness_diagram,
    classwise_reliability_grid,
    group_bar_chart,
    interval_diagram,
    reliability_diagram,
    smooth_reliability_diagram,
    top_k_bar_chart,
)

#: Digits grouped by the strokes that draw them (for the grouping lens).
DIGIT_GROUPS = ([0, 6, 8, 9], [1, 4, 7], [2, 3, 5])
DIGIT_GROUP_NAMES = ("loops", "straight", "curves")

NICE = {
    "gaussian_nb": "Naive Bayes",
    "random_forest": "Random forest",
    "logistic_regression": "Logistic regr.",
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    parser.add_argument("--dpi", type=int, default=150)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    d = load_default_predictions()
    y = d.labels
    models = {NICE[m]: d.probs[m] for m in d.model_names}

    figures = {
        "reliability_diagram": reliability_diagram(
            d.probs["gaussian_nb"], y, intervals="wilson", title="Naive Bayes (digits)"
        ),
        "calibration_sharpness_diagram": calibration_sharpness_diagram(models, y),
        "smooth_reliability_diagram": smooth_reliability_diagram(
            d.probs["random_forest"], y, intervals="bootstrap", title="Random forest (digits)"
        ),
        "classwise_reliability_grid": classwise_reliability_grid(
            d.probs["random_forest"], y, title="Random forest: class-wise reliability"
        ),
        "top_k_bar_chart": top_k_bar_chart(models, y, ks=(1, 2, 3, 5), show_full=True),
        "group_bar_chart": group_bar_chart(models, y, DIGIT_GROUPS, group_names=DIGIT_GROUP_NAMES),
        "interval_diagram": interval_diagram(models, y),
    }

    # Chidambaram & Ge (2024) Fig. 2: reliability diagrams above calibration-sharpness diagrams
    pair = {NICE[m]: d.probs[m] for m in ("random_forest", "logistic_regression")}
    fig, axs = plt.subplots(2, 2, figsize=(7.0, 6.0), layout="constrained")
    for col, (name, p) in enumerate(pair.items()):
        reliability_diagram(p, y, ax=axs[0, col], title=name, legend=col == 0)
    # legend in the first panel; the caption (d_CAL, d_TOT, the band) under the figure
    calibration_sharpness_diagram(pair, y, ax=axs[1], caption=True)
    figures["reliability_vs_sharpness"] = fig

    for name, fig in figures.items():
        path = args.out / f"{name}.png"
        fig.savefig(path, dpi=args.dpi, metadata={"Software": None})
        plt.close(fig)
        print(f"{path}  {path.stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
