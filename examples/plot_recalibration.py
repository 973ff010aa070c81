"""
Recalibration: temperature scaling, histogram binning, isotonic regression
==========================================================================

A recalibration method is a map from a model's scores to new probabilities,
fitted on a calibration split and judged on a separate test split. This example
fits three classic methods to the under-confident random forest of calipers'
default predictions and compares them before and after: reliability diagrams,
the ECE, and the proper scores (NLL, Brier) that say whether the predictions got
better or only better-looking.

- Temperature scaling (Guo et al. 2017) divides the logits by one fitted number
  ``T``; it keeps the arg-max, so the accuracy does not change.
- Histogram binning (Zadrozny & Elkan 2001) replaces every score by the
  frequency of its class among the calibration scores of the same bin.
- Isotonic regression (Zadrozny & Elkan 2002) fits a non-decreasing map per
  class.
"""

import matplotlib.pyplot as plt
import numpy as np

import calipers as cp
from calipers.datasets import load_default_predictions

data = load_default_predictions()
p, y = data.probs["random_forest"], data.labels
cal, test = data.is_calibration, ~data.is_calibration  # the shipped split, half and half
print(f"calibration: {cal.sum()} images, test: {test.sum()} images")

# %%
# Fit on the calibration half
# ---------------------------
# Temperature scaling works on logits. The forest gives probabilities, some of
# them exactly 0 (no tree voted for the class), so it gets log-probabilities
# with the zeros floored at 1e-4: ``softmax(log p)`` is ``p`` again, and the
# floor does not change the fitted temperature here. The two other methods take
# the probabilities themselves. All three are fitted on the calibration half
# only.

log_p = np.log(np.clip(p, 1e-4, None))
ts = cp.TemperatureScaling().fit(log_p[cal], y[cal], logits=True)
# the exact forms (netcal's and scikit-learn's bin frequencies); calipers' defaults
# smooth them, (k + 1) / (n + 2), and keep every probability above 0
hb = cp.HistogramBinning(n_bins=15, smoothing="none").fit(p[cal], y[cal])
ir = cp.IsotonicRegression(smoothing="none").fit(p[cal], y[cal])
print(f"fitted temperature T = {ts.temperature_:.3f} (T < 1 sharpens an under-confident model)")

recalibrated = {
    "uncalibrated": p[test],
    "temperature scaling": ts.predict_proba(log_p[test], logits=True),
    "histogram binning": hb.predict_proba(p[test]),
    "isotonic regression": ir.predict_proba(p[test]),
}

# %%
# Reliability diagrams on the test half
# -------------------------------------
# All three methods bring the bars to the diagonal. After recalibration about
# nine test images in ten sit in the top bin; the bins below hold a few images
# each, hence their scatter around the diagonal (their counts are in
# :func:`calipers.reliability_table`).

fig, axes = plt.subplots(2, 2, figsize=(9, 8.5), layout="constrained")
for ax, (name, q) in zip(axes.flat, recalibrated.items(), strict=True):
    cp.reliability_diagram(q, y[test], ax=ax, title=name)

# %%
# The numbers
# -----------
# The ECE falls for every method, but the NLL tells them apart: temperature
# scaling divides it by four and a half, while exact histogram binning and
# isotonic regression produce probabilities of exactly 0 and an infinite NLL as
# soon as one test image belongs to a class they rule out (their default,
# Laplace-smoothed forms do not). calipers reports that as
# ``inf`` instead of clipping; the Brier score, bounded, still ranks them. A
# lower ECE alone does not make a better model (Chidambaram & Ge 2024).

print(f"{'':22s} accuracy      NLL    Brier      ECE  SmoothECE")
for name, q in recalibrated.items():
    yt = y[test]
    print(
        f"{name:22s}   {cp.accuracy(q, yt):.4f}  {cp.nll(q, yt):7.4f}  {cp.brier(q, yt):.4f}"
        f"   {cp.ece(q, yt):.4f}     {cp.smece(q, yt):.4f}"
    )

# %%
# How many test images make the NLL infinite:

for name, q in recalibrated.items():
    zero = q[np.arange(test.sum()), y[test]] == 0
    print(f"{name:22s} true class given probability 0: {zero.sum()} images")

# %%
# :func:`calipers.report` runs this comparison for several models and methods
# at once and flags a recalibration whose proper score got worse beyond the
# noise.

plt.show()
