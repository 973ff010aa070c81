"""Diagrams of calibration, ready for a paper (drawn with matplotlib).

matplotlib is imported only when a diagram is drawn, and a missing matplotlib
raises an :class:`ImportError` that says ``pip install matplotlib``. Every function returns a
:class:`matplotlib.figure.Figure` (created with pyplot, never shown: call
``fig.savefig("x.pdf")`` or ``plt.show()``; ``plt.close(fig)`` when done) or
draws into the Axes given with ``ax=``. All share one look: 8 pt text, a
single-column width of 3.5 in (7 in for grids and rows of panels), the
Okabe-Ito colour-blind-safe palette, constrained layout, and a metrics note
placed where it hides the least data.

=====================================  ==================================================
function                               shows
=====================================  ==================================================
:func:`reliability_diagram`            binned accuracy per confidence bin, the gap to the
                                       diagonal, a histogram, optional Wilson/bootstrap
                                       intervals, ECE (Guo et al. 2017; Chidambaram & Ge (2024) Fig. 2)
:func:`classwise_reliability_grid`     one reliability diagram per class (class-wise lens)
:func:`calibration_sharpness_diagram`  kernel calibration curve, density-scaled sharpness
                                       band, density, d_CAL / d_TOT (Chidambaram & Ge (2024) §4.2, App. D)
:func:`smooth_reliability_diagram`     SmoothECE curve with density-weighted width
                                       (Błasiok & Nakkiran 2023)
:func:`top_k_bar_chart`                top-k ECE per k (Kirchenbauer, Oaks & Heim (2022) Fig. 1)
:func:`group_bar_chart`                grouping lens, per true group (Kirchenbauer, Oaks & Heim (2022) Fig. 3)
:func:`interval_diagram`               per-interval (Likert) errors and counts (Kirchenbauer, Oaks & Heim (2022)
                                       Figs. 5-6)
:func:`sweep_diagram`                  estimates vs test-set size (Gruber & Buettner (2022) Figs. 1, 3),
                                       vs bins, k-d tree gamma, bandwidth or kernel with
                                       intervals (Kirchenbauer, Oaks & Heim (2022) Fig. 7;
                                       Chidambaram & Ge (2024) App. H)
:func:`pit_histogram_diagram`          PIT histogram of Gaussian regression predictions with
                                       a binomial band (Kuleshov et al. 2018)
:func:`quantile_reliability_diagram`   coverage of central intervals vs nominal level
                                       (Kuleshov et al. 2018)
:func:`variance_error_diagram`         RMSE vs root mean predicted variance per bin, ENCE
                                       (Levi et al. 2022; Gruber & Buettner 2022)
:func:`t_reliability_diagram`          isotonic recalibrated point forecast (mean, quantile,
                                       expectile) vs forecast, bootstrap band, MCB/DSC/UNC
                                       (Gneiting & Resin 2023; Dimitriadis, Gneiting & Jordan 2021)
:func:`calibration_band_diagram`       isotonic calibration curve of binary predictions with the
                                       honest simultaneous band, the ranges where it excludes
                                       the diagonal (Dimitriadis, Dümbgen, Henzi, Puke & Ziegel
                                       2023); its compute step is
                                       :func:`calipers.inference.honest_calibration_band`
:func:`clinical_calibration_diagram`   the val.prob-style plot of the calibration hierarchy:
                                       flexible curve with band or belt, risk groups, risks
                                       by outcome, intercept, slope, C, Brier, ICI, E90, Emax
                                       (Van Calster et al. 2016; Austin & Steyerberg 2019)
:func:`group_reliability_diagram`      reliability curves per group with Wilson intervals,
                                       each group's size, error and noise level (fairness
                                       audits; Hébert-Johnson et al. 2018)
=====================================  ==================================================

Computing and drawing are two steps, as in relplot and scikit-learn's
``CalibrationDisplay.from_predictions``. Every diagram above keeps its one-call form,
and those below also have a compute step of the same name ending in ``_data``: it
takes the diagram's computing parameters (the predictions, the estimator, the
intervals; not ``ax``, ``title``, ``legend`` or what is shown), imports no
matplotlib, and returns a frozen dataclass (``...Data``) holding the arrays and
numbers the diagram draws, its metrics note included. The
diagram function is that compute step followed by drawing, so the figure shows
exactly these numbers. :func:`sweep_diagram` needs none: it draws the results of
:mod:`calipers.inference.sweeps`, computed beforehand.

==========================================  ==========================================
compute step                                returns
==========================================  ==========================================
:func:`reliability_diagram_data`            :class:`ReliabilityDiagramData`: bins, mean
                                            score, observed frequency, counts,
                                            intervals, ECE, accuracy
:func:`classwise_reliability_grid_data`     :class:`ClasswiseReliabilityGridData`: one
                                            :class:`ReliabilityDiagramData` per class
:func:`smooth_reliability_diagram_data`     :class:`SmoothReliabilityDiagramData`: the
                                            smoothed curve, density, line widths, band,
                                            smECE, bandwidth
:func:`calibration_sharpness_diagram_data`  :class:`CalibrationSharpnessDiagramData`:
                                            per model the curve, band, density, notes
:func:`top_k_bar_chart_data`                :class:`BarChartData`: per model, the
                                            traditional, top-k and full ECE
:func:`group_bar_chart_data`                :class:`BarChartData`: per model, the
                                            grouping lens's error, overall and per group
:func:`interval_diagram_data`               :class:`IntervalDiagramData`: errors per
                                            category, counts per interval
:func:`pit_histogram_diagram_data`          :class:`PITHistogramDiagramData`: the PIT
                                            histograms before and after, the band
:func:`quantile_reliability_diagram_data`   :class:`QuantileReliabilityDiagramData`:
                                            coverage per level, the band
:func:`variance_error_diagram_data`         :class:`VarianceErrorDiagramData`: RMV and
                                            RMSE per bin, before and after
:func:`t_reliability_diagram_data`          :class:`TReliabilityDiagramData`: the
                                            isotonic curve, band, score decomposition
:func:`clinical_calibration_diagram_data`   :class:`ClinicalCalibrationDiagramData`:
                                            the hierarchy, risk groups, risks by outcome
==========================================  ==========================================

Examples
--------
>>> import matplotlib.pyplot as plt
>>> from calipers.datasets import load_default_predictions
>>> from calipers.diagrams import reliability_diagram
>>> d = load_default_predictions()
>>> fig = reliability_diagram(d.probs["logistic_regression"], d.labels)
>>> fig.axes[1].get_xlabel(), float(fig.get_figwidth())
('Confidence', 3.5)
>>> plt.close(fig)
"""

from __future__ import annotations

from .bars import (
    DEFAULT_LIKERT,
    BarChartData,
    IntervalDiagramData,
    group_bar_chart,
    group_bar_chart_data,
    interval_diagram,
    interval_diagram_data,
    top_k_bar_chart,
    top_k_bar_chart_data,
)
from .calibration_band import band_note, band_outline, calibration_band_diagram
from .clinical_calibration import (
    ClinicalCalibrationDiagramData,
    clinical_calibration_diagram,
    clinical_calibration_diagram_data,
    clinical_note,
)
from .group_reliability import group_reliability_diagram
from .pit_histogram import (
    PITHistogramDiagramData,
    pit_histogram_diagram,
    pit_histogram_diagram_data,
)
from .quantile_reliability import (
    QuantileReliabilityDiagramData,
    quantile_reliability_diagram,
    quantile_reliability_diagram_data,
)
from .reliability import (
    ClasswiseReliabilityGridData,
    ReliabilityDiagramData,
    classwise_reliability_grid,
    classwise_reliability_grid_data,
    reliability_diagram,
    reliability_diagram_data,
    wilson_interval,
)
from .sharpness import (
    CalibrationSharpnessDiagramData,
    calibration_sharpness_diagram,
    calibration_sharpness_diagram_data,
    sharpness_caption,
    sharpness_note,
)
from .smooth import (
    SmoothReliabilityDiagramData,
    smooth_linewidths,
    smooth_reliability_diagram,
    smooth_reliability_diagram_data,
)
from .sweep import sweep_diagram
from .t_reliability import (
    TReliabilityDiagramData,
    t_reliability_diagram,
    t_reliability_diagram_data,
)
from .variance_error import (
    VarianceErrorDiagramData,
    variance_error_diagram,
    variance_error_diagram_data,
)

__all__ = [
    "reliability_diagram",
    "classwise_reliability_grid",
    "calibration_sharpness_diagram",
    "smooth_reliability_diagram",
    "top_k_bar_chart",
    "group_bar_chart",
    "interval_diagram",
    "sweep_diagram",
    "pit_histogram_diagram",
    "quantile_reliability_diagram",
    "variance_error_diagram",
    "calibration_band_diagram",
    "group_reliability_diagram",
    "band_outline",
    "band_note",
    "reliability_diagram_data",
    "ReliabilityDiagramData",
    "classwise_reliability_grid_data",
    "ClasswiseReliabilityGridData",
    "smooth_reliability_diagram_data",
    "SmoothReliabilityDiagramData",
    "calibration_sharpness_diagram_data",
    "CalibrationSharpnessDiagramData",
    "top_k_bar_chart_data",
    "group_bar_chart_data",
    "BarChartData",
    "interval_diagram_data",
    "IntervalDiagramData",
    "pit_histogram_diagram_data",
    "PITHistogramDiagramData",
    "quantile_reliability_diagram_data",
    "QuantileReliabilityDiagramData",
    "variance_error_diagram_data",
    "VarianceErrorDiagramData",
    "t_reliability_diagram",
    "t_reliability_diagram_data",
    "TReliabilityDiagramData",
    "clinical_calibration_diagram",
    "clinical_calibration_diagram_data",
    "ClinicalCalibrationDiagramData",
    "clinical_note",
    "wilson_interval",
    "sharpness_note",
    "sharpness_caption",
    "smooth_linewidths",
    "DEFAULT_LIKERT",
]
