"""
Reliability diagrams and the reliability table
==============================================

A reliability diagram sorts the predictions into bins by their confidence and
compares, bin by bin, how often the prediction was right with how confident it
was (DeGroot & Fienberg 1983; Guo et al. 2017). The bars of a calibrated model
reach the diagonal; the hatched gaps between bar and diagonal are what the
expected calibration error (ECE) averages, each weighted by the share of the
predictions in its bin.

calipers ships out-of-fold predictions of three scikit-learn models on the
handwritten-digits data set (1797 images, 10 classes): Gaussian naive Bayes
(over-confident), a random forest (under-confident) and a logistic regression
(close to calibrated). Everything below runs offline on them.
"""

import matplotlib.pyplot as plt
import numpy as np

import calipers as cp
from calipers.datasets import load_default_predictions

data = load_default_predictions()
y = data.labels
print(data.model_names, data.probs["random_forest"].shape)

# %%
# One diagram per model
# ---------------------
# Top-label reading of a 10-class model: the confidence is the largest
# probability and a prediction is right when its arg-max is the label. 15
# equal-width bins, as in Guo et al. (2017). Naive Bayes puts nearly all its
# predictions in the last bin with an accuracy well below its confidence; the
# random forest's bars stand above the diagonal (it is right more often than it
# says); the logistic regression follows the diagonal.

fig, axes = plt.subplots(1, 3, figsize=(13, 4.6), layout="constrained")
for ax, name in zip(axes, data.model_names, strict=True):
    cp.reliability_diagram(data.probs[name], y, ax=ax, title=name)

# %%
# Intervals and the histogram
# ---------------------------
# A bar computed from a handful of predictions says little. Wilson score
# intervals (Wilson 1927) on every bin's accuracy, and the histogram of the
# confidences under the diagram, show which bars to trust: the random forest's
# lowest bins hold a few images each, and above 0.5 the diagonal lies far
# outside the intervals of its bins.

p = data.probs["random_forest"]
fig = cp.reliability_diagram(p, y, intervals="wilson", title="random forest, 95 % Wilson intervals")
fig.set_size_inches(6, 6)

# %%
# The numbers behind the bars
# ---------------------------
# :func:`calipers.reliability_table` returns one row per non-empty bin: its
# edges, count, mean confidence, accuracy (``observed``), their gap (positive:
# under-confident) and the interval. It is a pandas DataFrame when pandas is
# installed; ``as_frame=False`` gives a NumPy record array with the same
# columns.

table = cp.reliability_table(p, y, as_frame=False)
print(" bin          count  confidence  accuracy     gap   95 % interval")
for row in table:
    print(
        f"({row.lower:.3f}, {row.upper:.3f}]  {row['count']:4d}"
        f"      {row.mean_score:.3f}     {row.observed:.3f}  {row.gap:+.3f}"
        f"   [{row.ci_lower:.3f}, {row.ci_upper:.3f}]"
    )

# %%
# The count-weighted mean of the absolute gaps is the ECE of the same bins:

ece_from_table = np.sum(table.weight * np.abs(table.gap)) / np.sum(table.weight)
print(f"from the table: {ece_from_table:.4f}   cp.ece: {cp.ece(p, y):.4f}")

# %%
# An ECE is not reported alone: a model can be calibrated and useless. The
# accuracy and a proper score (NLL, Brier) belong next to it. Naive Bayes'
# NLL is infinite: it gives probability exactly 0 to the true class of a few
# images, and calipers does not clip unless asked.

for name in data.model_names:
    q = data.probs[name]
    print(
        f"{name:20s} accuracy {cp.accuracy(q, y):.4f}  ECE {cp.ece(q, y):.4f}"
        f"  NLL {cp.nll(q, y):.4f}  Brier {cp.brier(q, y):.4f}"
    )

plt.show()
