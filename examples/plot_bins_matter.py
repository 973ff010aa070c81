"""
How the bins change the ECE
===========================

The binned ECE depends on choices that have nothing to do with the model: how
many bins, whether they have equal widths or equal counts ("adaptive" bins), and
on which side of an edge a score on the edge goes. Nixon et al. (2019) showed
that these choices can change the value, and even the ranking of models. This
example measures the three effects on the predictions calipers ships.
"""

import matplotlib.pyplot as plt
import numpy as np

import calipers as cp
from calipers.datasets import load_default_predictions

data = load_default_predictions()
y = data.labels
n_bins = np.unique(np.round(np.geomspace(2, 300, 30)).astype(int))

# %%
# The number of bins, equal width and equal mass
# ----------------------------------------------
# Top-label ECE with 2 to 300 equal-width bins (:func:`calipers.ece`) and
# equal-mass bins (:class:`calipers.EqualMass`, the rule of Nixon et al.'s
# code), next to SmoothECE (Błasiok & Nakkiran 2023), which has no bins. The
# two strongly miscalibrated models hardly move: their gaps have the same sign
# in every bin, so finer bins do not cancel anything. The logistic regression,
# nearly calibrated, goes from 0.005 to 0.037: for a good model most of a
# fine-binned ECE is estimation noise.

colors = dict(zip(data.model_names, ["tab:red", "tab:blue", "tab:green"], strict=True))
fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
for name in data.model_names:
    p = data.probs[name]
    width = [cp.ece(p, y, n_bins=b) for b in n_bins]
    mass = [cp.calibration_error(p, y, estimator=cp.EqualMass(b)) for b in n_bins]
    c = colors[name]
    ax.plot(n_bins, width, color=c, label=f"{name}, equal width")
    ax.plot(n_bins, mass, color=c, linestyle="--", label=f"{name}, equal mass")
    ax.axhline(cp.smece(p, y), color=c, linestyle=":", linewidth=1)
ax.set(xscale="log", xlabel="number of bins", ylabel="top-label ECE")
ax.set_title("ECE against the number of bins (dotted: SmoothECE)")
ax.legend(fontsize=8, ncols=2)

# %%
# A calibrated model does not score 0
# -----------------------------------
# Draw the labels from the logistic regression's own probabilities: that model
# is then perfectly calibrated by construction, and its true calibration error
# is 0. The binned ECE is not: it estimates ``E|acc - conf|`` from a few
# hundred predictions per bin, and the absolute value turns every fluctuation
# into a positive error that grows as the bins get smaller. The debiased
# estimate of Kumar et al. (2019) (:func:`calipers.debiased_calibration_error`,
# an L2 error with the variance of each bin subtracted) stays near 0. Ten
# draws of the labels give the bands.

rng = np.random.default_rng(0)
p = data.probs["logistic_regression"]
width, mass, debiased = [], [], []
for _ in range(10):
    y_star = np.minimum((rng.random(len(p))[:, None] > p.cumsum(axis=1)).sum(axis=1), 9)
    width.append([cp.ece(p, y_star, n_bins=b) for b in n_bins])
    mass.append([cp.calibration_error(p, y_star, estimator=cp.EqualMass(b)) for b in n_bins])
    debiased.append(
        [cp.debiased_calibration_error(p, y_star, estimator=cp.EqualWidth(b)) for b in n_bins]
    )

fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
for values, label, c in (
    (width, "ECE, equal width", "tab:blue"),
    (mass, "ECE, equal mass", "tab:orange"),
    (debiased, "debiased L2 error (Kumar et al.), equal width", "tab:gray"),
):
    v = np.array(values)
    ax.fill_between(n_bins, v.min(axis=0), v.max(axis=0), color=c, alpha=0.2, linewidth=0)
    ax.plot(n_bins, np.median(v, axis=0), color=c, label=label)
ax.axhline(0, color="black", linewidth=0.8)
ax.set(xscale="log", xlabel="number of bins", ylabel="estimate (true value: 0)")
ax.set_title("a perfectly calibrated model, ten draws of its labels")
ax.legend(fontsize=8)

# %%
# Which side of an edge
# ---------------------
# Predictions stored with two decimals, as many CSV files hold them, put many
# confidences exactly on bin edges such as 0.7 or 0.95. calipers' bins are
# ``(lo, hi]`` (Guo et al. 2017); other libraries use ``[lo, hi)``, which moves
# every such confidence one bin up. For the nearly calibrated model the two
# readings of the same ten bins differ by a fifth:

rounded = np.round(p, 2)
for b in (5, 10, 20):
    right = cp.ece(rounded, y, n_bins=b)
    left = cp.ece(rounded, y, n_bins=b, edge_rule="left")
    print(f"{b:2d} bins: (lo, hi] {right:.4f}   [lo, hi) {left:.4f}")

# %%
# The page "Coming from another library" of the documentation gives, for
# scikit-learn, torchmetrics, netcal, relplot, uncertainty-calibration, MAPIE
# and pycalib, the calipers call that reproduces each of their numbers, edge
# rule included.

plt.show()
