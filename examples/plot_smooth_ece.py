"""
SmoothECE and the smooth reliability diagram
============================================

Błasiok & Nakkiran (2023) replace the bins of the reliability diagram by a
Gaussian kernel: the accuracy at confidence ``t`` is the kernel-weighted
accuracy of the predictions near ``t`` (the kernel reflected at 0 and 1), and
SmoothECE is the density-weighted mean distance of that curve from the
diagonal. The bandwidth is not a free choice: it is the fixed point
``sigma* = smECE(sigma*)``, the bandwidth equal to the error it measures.
calipers computes it with the discretisation of the authors' package
``relplot``, to rounding.
"""

import matplotlib.pyplot as plt
import numpy as np

import calipers as cp
from calipers.datasets import load_default_predictions

data = load_default_predictions()
y = data.labels

# %%
# The smooth reliability diagram
# ------------------------------
# The curve is drawn thicker where more predictions lie (their density is the
# shaded area, right axis) and only where there are predictions to average.
# The note gives SmoothECE and the bandwidth ``sigma*``. The two miscalibrated
# models get wide kernels and smooth curves; the logistic regression gets a
# narrow one (``sigma*`` = 0.015), which resolves its small gaps and also
# shows the noise of the few predictions below 0.9.

fig, axes = plt.subplots(1, 3, figsize=(13, 4.6), layout="constrained")
for ax, name in zip(axes, data.model_names, strict=True):
    cp.smooth_reliability_diagram(data.probs[name], y, ax=ax, title=name)

# %%
# The fixed-point bandwidth
# -------------------------
# SmoothECE at a fixed bandwidth ``sigma`` (``cp.smece(p, y, bandwidth=s)``)
# hardly depends on ``sigma`` for the two miscalibrated models, whose gaps have
# one sign everywhere, and falls as ``sigma`` grows for the logistic
# regression, whose small gaps of both signs a wider kernel averages out. The
# default bandwidth is where the curve crosses the diagonal ``smECE = sigma``
# (:func:`calipers.smece_bandwidth`, found by bisection as in relplot): a badly
# calibrated model gets a wide kernel, a well calibrated one a narrow kernel.

sigmas = np.geomspace(0.002, 0.5, 40)
colors = dict(zip(data.model_names, ["tab:red", "tab:blue", "tab:green"], strict=True))
fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
for name in data.model_names:
    p = data.probs[name]
    ax.plot(sigmas, [cp.smece(p, y, bandwidth=s) for s in sigmas], color=colors[name], label=name)
    s_star = cp.smece_bandwidth(p, y)
    ax.plot([s_star], [cp.smece(p, y)], "o", color=colors[name])
    print(f"{name:20s} sigma* = {s_star:.4f}   SmoothECE = {cp.smece(p, y):.4f}")
ax.plot(sigmas, sigmas, "k--", linewidth=1, label="smECE = sigma")
ax.set(xscale="log", yscale="log", xlabel="bandwidth sigma", ylabel="SmoothECE at sigma")
ax.set_ylim(1e-3, 0.5)
ax.legend(fontsize=8)

# %%
# Smaller samples
# ---------------
# Neither estimate is free of the sample size. For 100, 300 and 1000 images
# drawn without replacement (30 draws each) from the logistic regression's
# predictions, both grow as the sample shrinks: on 100 images both are about
# 0.03, two to four times their value on all 1797 images (dotted), and the
# binned ECE (15 bins) varies more from draw to draw. On a small test set a
# calibration error is mostly noise; :func:`calipers.consistency_test` says
# whether a value is larger than the noise of a calibrated model of the same
# predictions.

rng = np.random.default_rng(0)
p = data.probs["logistic_regression"]
sizes = (100, 300, 1000)
ece = {n: [] for n in sizes}
smooth = {n: [] for n in sizes}
for n in sizes:
    for _ in range(30):
        rows = rng.choice(len(y), size=n, replace=False)
        ece[n].append(cp.ece(p[rows], y[rows]))
        smooth[n].append(cp.smece(p[rows], y[rows]))

fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
positions = np.arange(len(sizes))
ax.boxplot([ece[n] for n in sizes], positions=positions - 0.17, widths=0.3)
ax.boxplot([smooth[n] for n in sizes], positions=positions + 0.17, widths=0.3)
ax.axhline(cp.ece(p, y), color="tab:blue", linestyle=":", label="ECE, all images")
ax.axhline(cp.smece(p, y), color="tab:orange", linestyle=":", label="SmoothECE, all images")
ax.set_xticks(positions, [f"n = {n}\nECE | smECE" for n in sizes])
ax.set_ylabel("estimate")
ax.set_title("logistic regression, 30 subsamples per size")
ax.legend(fontsize=8)

plt.show()
