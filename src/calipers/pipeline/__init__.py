"""The parts of the calibration-error pipeline: lenses, selections and divergences.

Kirchenbauer, Oaks & Heim (2022) write every calibration error as one pipeline:
a *lens* says what is measured (the top label, each class, the whole vector), a
*selection* says which rows count, an estimator (:mod:`calipers.estimators`)
estimates E[target | score], and a *divergence* compares that estimate with the
score. This package holds the lens, selection and divergence parts.

The names below are the documented surface of this package; the modules that
implement them are listed in docs/architecture.md.
"""

from __future__ import annotations

from .divergences import (
    KL,
    TVD,
    Bregman,
    Divergence,
    InterInterval,
    Lp,
    Mahalanobis,
    get_divergence,
)
from .lenses import (
    Lens,
    LensSlice,
    auto,
    binary,
    canonical,
    classwise,
    get_lens,
    grouping,
    lens_arrays,
    resolve_lens,
    single_class,
    top_k,
    top_label,
    top_label_arrays,
    top_label_per_class,
)
from .selection import LabelSelection, ScoreInterval, Selection, combine, threshold

__all__ = [
    "LensSlice",
    "Lens",
    "top_label",
    "top_label_arrays",
    "top_label_per_class",
    "top_k",
    "classwise",
    "single_class",
    "canonical",
    "grouping",
    "binary",
    "auto",
    "lens_arrays",
    "resolve_lens",
    "get_lens",
    "Selection",
    "LabelSelection",
    "ScoreInterval",
    "threshold",
    "combine",
    "Divergence",
    "Lp",
    "TVD",
    "KL",
    "Bregman",
    "InterInterval",
    "Mahalanobis",
    "get_divergence",
]
