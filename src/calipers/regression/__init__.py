"""Calibration of probabilistic regression: Gaussian predictive distributions.

A regression model that predicts a mean ``mu`` and a variance ``sigma**2`` for
every row states a full predictive distribution N(mu, sigma**2). Gruber &
Buettner 2022 (§2, §5 and App. G.5) score such predictions with proper scores
(the Dawid-Sebastiani score) and compare the predicted variance with the
squared error (their Tables 1 and 2). This package holds:

* :func:`check_gaussian` and :class:`GaussianPredictions`: the one input form;
* proper scores per row and as (weighted) means: :func:`gaussian_nll`,
  :func:`dawid_sebastiani` (Gneiting & Raftery 2007) and :func:`crps_gaussian`
  (Gneiting et al. 2005);
* calibration diagnostics: :func:`pit_values`, :func:`pit_histogram`,
  :func:`quantile_calibration` (coverage of central intervals, Kuleshov et
  al. 2018) with its mean absolute error :func:`interval_coverage_error`, and
  :func:`variance_calibration` (Levi et al. 2022; Gruber & Buettner 2022),
  and the one-sided :func:`quantile_calibration_error` of Kuleshov et al. 2018
  (a different quantity: one-sided coverage, squared gaps summed);
* predictive distributions of any kind (:class:`PredictiveDistribution`:
  :class:`Gaussian`, :class:`Parametric`, :class:`QuantileSet`,
  :class:`SampleEnsemble`; :func:`check_predictive`), which every calibration
  diagnostic takes as its first argument, with the randomised PIT of Czado,
  Gneiting & Held 2009 where a distribution jumps, uncertainty-toolbox's
  :func:`miscalibration_area` (Chung et al. 2021) and calibration within
  groups (:func:`calibration_by_group`, :func:`adversarial_group_calibration`);
* decompositions: :func:`crps_decomposition` (threshold-wise Brier
  decomposition, Hersbach 2000) and :func:`gaussian_score_decomposition`
  (DSS and Gaussian NLL, Gruber & Buettner 2022, Lemma 4.1).

Importing this package imports NumPy only; SciPy is imported by the functions
that need the normal distribution function.

Examples
--------
>>> from calipers.regression import gaussian_nll
>>> round(gaussian_nll([0.0], variance=[1.0], targets=[0.0]), 6)
0.918939
"""

from __future__ import annotations

from ._interval_score import (
    interval_coverage,
    interval_score,
    interval_score_per_row,
    interval_width,
    weighted_interval_score,
    weighted_interval_score_per_row,
)
from ._score_decomposition import (
    SCORING_FUNCTIONS,
    ScoreDecomposition,
    TReliabilityCurve,
    isotonic_recalibration,
    score_decomposition,
    t_reliability_curve,
)
from .consistent_scores import (
    bregman_score,
    bregman_score_per_row,
    expectile_score,
    expectile_score_per_row,
    pinball_loss,
    pinball_loss_per_row,
    squared_error,
    squared_error_per_row,
)
from .crps_estimators import (
    crps_ensemble,
    crps_ensemble_per_row,
    crps_quantiles,
    crps_quantiles_per_row,
)
from .decomposition import (
    CRPSDecomposition,
    GaussianScoreDecomposition,
    crps_decomposition,
    gaussian_score_decomposition,
    gini_half_mean_difference,
)
from .distributions import (
    PARAMETRIC_FAMILIES,
    Gaussian,
    Parametric,
    PredictiveDistribution,
    ProbabilisticPredictions,
    QuantileSet,
    SampleEnsemble,
    central_interval,
    check_predictive,
)
from .group_calibration import (
    AdversarialGroupCalibration,
    GroupCalibration,
    adversarial_group_calibration,
    calibration_by_group,
)
from .inputs import GaussianPredictions, check_gaussian
from .miscalibration import (
    CalibrationProportions,
    calibration_proportions,
    mean_absolute_calibration_error,
    miscalibration_area,
    root_mean_squared_calibration_error,
)
from .pit import (
    PITHistogram,
    QuantileCalibration,
    VarianceCalibration,
    interval_coverage_error,
    pit_histogram,
    pit_values,
    quantile_calibration,
    variance_calibration,
)
from .point_forecast import (
    FUNCTIONALS,
    BiasByGroup,
    GeneralizedBias,
    PointForecasts,
    bias,
    bias_by_group,
    check_point_forecast,
    identification_function,
)
from .predictive_scores import crps, crps_per_row, log_score, log_score_per_row
from .quantile_error import (
    QuantileCalibrationCurve,
    quantile_calibration_curve,
    quantile_calibration_error,
)
from .scores import (
    crps_gaussian,
    crps_gaussian_per_row,
    dawid_sebastiani,
    dawid_sebastiani_per_row,
    gaussian_nll,
    gaussian_nll_per_row,
)
from .skce import gaussian_skce, gaussian_skce_test

__all__ = [
    "crps_ensemble",
    "crps_ensemble_per_row",
    "crps_quantiles",
    "crps_quantiles_per_row",
    "pinball_loss",
    "pinball_loss_per_row",
    "squared_error",
    "squared_error_per_row",
    "bregman_score",
    "bregman_score_per_row",
    "expectile_score",
    "expectile_score_per_row",
    "interval_score",
    "interval_score_per_row",
    "weighted_interval_score",
    "weighted_interval_score_per_row",
    "interval_coverage",
    "interval_width",
    "gaussian_skce",
    "gaussian_skce_test",
    "GaussianPredictions",
    "check_gaussian",
    "PredictiveDistribution",
    "Gaussian",
    "Parametric",
    "PARAMETRIC_FAMILIES",
    "QuantileSet",
    "SampleEnsemble",
    "central_interval",
    "ProbabilisticPredictions",
    "check_predictive",
    "calibration_proportions",
    "CalibrationProportions",
    "miscalibration_area",
    "mean_absolute_calibration_error",
    "root_mean_squared_calibration_error",
    "adversarial_group_calibration",
    "AdversarialGroupCalibration",
    "calibration_by_group",
    "GroupCalibration",
    "crps",
    "crps_per_row",
    "log_score",
    "log_score_per_row",
    "gaussian_nll",
    "gaussian_nll_per_row",
    "dawid_sebastiani",
    "dawid_sebastiani_per_row",
    "crps_gaussian",
    "crps_gaussian_per_row",
    "pit_values",
    "pit_histogram",
    "PITHistogram",
    "quantile_calibration",
    "QuantileCalibration",
    "interval_coverage_error",
    "variance_calibration",
    "VarianceCalibration",
    "quantile_calibration_error",
    "quantile_calibration_curve",
    "QuantileCalibrationCurve",
    "crps_decomposition",
    "CRPSDecomposition",
    "gini_half_mean_difference",
    "gaussian_score_decomposition",
    "GaussianScoreDecomposition",
    "FUNCTIONALS",
    "PointForecasts",
    "check_point_forecast",
    "identification_function",
    "bias",
    "GeneralizedBias",
    "bias_by_group",
    "BiasByGroup",
    "isotonic_recalibration",
    "t_reliability_curve",
    "TReliabilityCurve",
    "score_decomposition",
    "ScoreDecomposition",
    "SCORING_FUNCTIONS",
]
