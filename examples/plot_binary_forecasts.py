"""
Binary forecasts: P(y = 1) or the top label
===========================================

A binary forecast is one number per case, the probability of the event: rain
tomorrow, a loan defaulting. calipers reads a 1-D array as P(y = 1) and scores
it against the outcome, as scikit-learn, torchmetrics, netcal and relplot do.
The other reading, the confidence ``max(p, 1 - p)`` of the predicted class
against whether that class occurred, is one argument away
(``lens="top_label"``), and it can hide what the first shows: errors on the two
sides of 0.5 cancel.

Here 5000 simulated rain forecasts ``p`` are too high: it rains with
probability ``p ** 1.5``.
"""

import matplotlib.pyplot as plt
import numpy as np

import calipers as cp

rng = np.random.default_rng(0)
p = rng.random(5000)
rain = (rng.random(5000) < p**1.5).astype(int)

# %%
# Two readings of the same forecasts
# ----------------------------------
# Left, P(rain) against the frequency of rain (the default for 1-D input):
# every bar is below the diagonal, the forecasts are too wet. Right, the
# top-label reading: below 0.5 the forecast predicts "dry" with confidence
# ``1 - p``, and a too-wet forecast is then under-confident about "dry"; above
# 0.5 it is over-confident about "rain". Folded onto one axis, the two errors
# cancel and the top-label ECE is small.

fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), layout="constrained")
cp.reliability_diagram(p, rain, ax=axes[0], n_bins=10, title="P(rain) vs rain")
cp.reliability_diagram(
    p, rain, ax=axes[1], n_bins=10, lens="top_label", title="top label: max(p, 1 - p) vs correct"
)
print(f"ECE of P(rain):    {cp.ece(p, rain):.4f}")
print(f"top-label ECE:     {cp.ece(p, rain, lens='top_label'):.4f}")
print(f"SmoothECE P(rain): {cp.smece(p, rain):.4f}")

# %%
# Decompositions of the Brier score
# ---------------------------------
# Forecast verification splits the Brier score ``mean (p - y)^2`` into a
# calibration term, a resolution (or discrimination) term and the
# uncertainty of the outcome. Murphy's (1973) decomposition uses bins (here
# calipers' 15 equal-width bins, with the two within-bin terms of
# Stephenson et al. (2008) that make it exact); the CORP decomposition of
# Dimitriadis, Gneiting & Jordan (2021) uses the isotonic regression of the
# outcome on the forecast and needs no bins.

murphy = cp.murphy_decomposition(p, rain)
corp = cp.corp_decomposition(p, rain)
print(f"Brier score {murphy.brier:.4f}")
print(
    f"Murphy: reliability {murphy.reliability:.4f}  resolution {murphy.resolution:.4f}"
    f"  uncertainty {murphy.uncertainty:.4f}"
)
print(
    f"CORP:   miscalibration {corp.miscalibration:.4f}  discrimination {corp.discrimination:.4f}"
    f"  uncertainty {corp.uncertainty:.4f}"
)

# %%
# Recalibrated forecasts
# ----------------------
# The isotonic regression that CORP uses is also a recalibration of binary
# forecasts. Fitted on the first half of the forecasts and applied to the
# second, it removes most of the calibration error. The smooth reliability
# diagrams (Błasiok & Nakkiran 2023) compare the two on the second half.

half = len(p) // 2
iso = cp.IsotonicRegression().fit(p[:half], rain[:half])
p_new = iso.predict_proba(p[half:])
fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), layout="constrained")
cp.smooth_reliability_diagram(p[half:], rain[half:], ax=axes[0], title="forecasts")
cp.smooth_reliability_diagram(p_new, rain[half:], ax=axes[1], title="after isotonic regression")
for name, q in (("forecasts", p[half:]), ("isotonic", p_new)):
    print(f"{name:10s} Brier {cp.brier(q, rain[half:]):.4f}  ECE {cp.ece(q, rain[half:]):.4f}")

# %%
# Labels as they come
# -------------------
# With ``classes=`` the outcome can stay in its own words; for 1-D input the
# two classes are ``[negative, positive]``.

words = np.array(["dry", "rain"])[rain]
print(words[:5], cp.ece(p, words, classes=["dry", "rain"]) == cp.ece(p, rain))

plt.show()
