"""
Calibration-sharpness diagrams
==============================

A calibration error alone can be gamed. Predict for every image the same top
probability, the accuracy measured on a calibration split, and the ECE is
nearly 0 while the predictions have become useless. Chidambaram & Ge (2024)
therefore draw calibration and sharpness together. Their diagram shows

- the calibration curve: a kernel estimate (Nadaraya-Watson, Gaussian kernel of
  width 0.05) of the accuracy at each confidence, against the diagonal;
- a band around the curve whose length is the density-weighted sharpness gap:
  the part of the Brier score that recalibration cannot remove. A larger band is
  worse;
- the density of the confidences.

The note gives ``d_CAL``, the data-weighted divergence of the curve from the
diagonal, and ``d_TOT``, the Brier score, both times 100 as in the paper.
"""

import matplotlib.pyplot as plt

import calipers as cp
from calipers.datasets import load_default_predictions

data = load_default_predictions()
y = data.labels

# %%
# Three models
# ------------
# One call draws the three panels with aligned axes. Naive Bayes: its curve
# lies below the diagonal and its band is wide (a high Brier score at high
# confidence). The random forest: above the diagonal, under-confident. The
# logistic regression: on the diagonal with a thin band.

fig = cp.calibration_sharpness_diagram({name: data.probs[name] for name in data.model_names}, y)
fig.set_size_inches(13, 5.2)

# %%
# Mean replacement: calibrated and useless
# ----------------------------------------
# :class:`calipers.MeanReplacement`, the cautionary baseline of
# Chidambaram & Ge (2024) and the "flawed" recalibration of
# Gruber & Buettner (2022), is fitted on the calibration half of the logistic
# regression's predictions and applied to the test half. Every image now gets the same confidence: the curve shrinks
# to a flat segment at that confidence (as wide as the kernel) lying on the
# diagonal, ``d_CAL`` is 0, and the band, the sharpness gap, grows: the Brier
# score and the NLL are worse than before.

cal, test = data.is_calibration, ~data.is_calibration
p = data.probs["logistic_regression"]
mean_replacement = cp.MeanReplacement().fit(p[cal], y[cal])
models = {
    "logistic regression": p[test],
    "mean replacement": mean_replacement.predict_proba(p[test]),
}
fig = cp.calibration_sharpness_diagram(models, y[test])
fig.set_size_inches(10, 5.2)

# %%
# The ECE and SmoothECE fall by a factor of more than ten; the proper scores
# say the predictions got worse.

print(f"{'':20s}     ECE  SmoothECE     NLL   Brier   d_CAL x 100")
for name, q in models.items():
    cs = cp.calibration_sharpness(q, y[test])
    print(
        f"{name:20s}  {cp.ece(q, y[test]):.4f}     {cp.smece(q, y[test]):.4f}  "
        f"{cp.nll(q, y[test]):.4f}  {cp.brier(q, y[test]):.4f}"
        f"   {100 * cs.calibration_error_sharpcal:.3f}"
    )

# %%
# :func:`calipers.report` runs such comparisons and flags, in words, a
# recalibration whose calibration error fell while its proper score got
# worse beyond the noise.

plt.show()
