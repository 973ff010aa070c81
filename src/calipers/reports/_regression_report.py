"""The report of probabilistic regression models: proper scores and calibration together.

The regression counterpart of :func:`calipers.report`: for every model that
predicts a Gaussian N(mu_i, sigma_i**2) per row (Gruber & Buettner 2022, §5
and App. G.5), and for the same model after each regression recalibrator,
one row of

==========================  ==================================================
column                      what (function)
==========================  ==================================================
``nll``                     Gaussian negative log-likelihood, nats
                            (:func:`calipers.regression.gaussian_nll`)
``dss``                     Dawid-Sebastiani score (Gneiting & Raftery 2007;
                            :func:`calipers.regression.dawid_sebastiani`)
``crps``                    continuous ranked probability score, target units
                            (Gneiting et al. 2005;
                            :func:`calipers.regression.crps_gaussian`)
``pit_ks``                  Kolmogorov-Smirnov distance of the PIT values from
                            uniform (Kuleshov et al. 2018;
                            :func:`calipers.regression.pit_histogram`)
``interval_ce``             interval coverage error: mean ``|coverage - level|``
                            of the central intervals at levels 0.05, 0.10,
                            ..., 0.95 (Kuleshov et al. 2018;
                            :func:`calipers.regression.interval_coverage_error`;
                            not the one-sided
                            :func:`~calipers.regression.quantile_calibration_error`;
                            called ``quantile_ce`` until
                            calipers 0.1)
``ence``                    ENCE over equal-mass bins of predicted variance
                            (Levi et al. 2022;
                            :func:`calipers.regression.variance_calibration`)
``mse_over_avg_var``        MSE / average predicted variance (Gruber &
                            Buettner 2022, Table 1)
``se_var_ratio``            mean of (y - mu)^2 / sigma^2 over rows (Gruber &
                            Buettner 2022, Table 2)
``skce``                    unbiased Gaussian SKCE (Widmann et al. 2021;
                            :func:`calipers.regression.skce.gaussian_skce`) on
                            a seeded subsample of at most ``skce_max_n`` rows,
                            kernel length scales = std of the test targets
``nll_improvement``, ...    for a recalibrated row, score before minus score
                            after on the test rows (positive: recalibration
                            helped; Gruber & Buettner 2022, Thm 4.3 and
                            Prop. 4.5), of NLL, DSS and CRPS
==========================  ==================================================

Predictions of other kinds (quantile sets, ensembles, parametric families;
:class:`calipers.regression.PredictiveDistribution`) get the columns their
kind has (CRPS, PIT KS and interval CE always; NLL with a density; the
variance columns with a variance) and NaN elsewhere, with a note.

Lower is better for the scores and the errors; ``mse_over_avg_var`` and
``se_var_ratio`` are best at 1. A recalibrator whose output is not Gaussian
(the quantile recalibration of Kuleshov et al. 2018) has no predicted
variance: its ``ence``, ``mse_over_avg_var``, ``se_var_ratio`` and ``skce``
are NaN, with a note saying so; its scores and PIT columns come from its own
CDF (``scores``, ``predict_cdf``, ``predict_interval``).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..regression import (
    GaussianPredictions,
    PredictiveDistribution,
    ProbabilisticPredictions,
    check_gaussian,
    check_predictive,
    crps_gaussian,
    crps_gaussian_per_row,
    crps_per_row,
    dawid_sebastiani,
    dawid_sebastiani_per_row,
    gaussian_nll,
    gaussian_nll_per_row,
    interval_coverage_error,
    log_score_per_row,
    pit_histogram,
    quantile_calibration,
    variance_calibration,
)
from ..regression.skce import gaussian_skce
from ..validation import CalibrationInputError, check_integer, check_positive
from ._document import REGRESSION_COLUMNS, UNCALIBRATED, Report, ReportRow, _slug
from ._report import _diff_text, _paired_t, _subsample

__all__ = ["regression_report"]

#: The columns of a regression report, in order (the improvements only with recalibrators).
_COLUMNS: tuple[str, ...] = (
    "nll",
    "dss",
    "crps",
    "pit_ks",
    "interval_ce",
    "ence",
    "mse_over_avg_var",
    "se_var_ratio",
    "skce",
    "nll_improvement",
    "dss_improvement",
    "crps_improvement",
)

_IMPROVEMENTS = ("nll_improvement", "dss_improvement", "crps_improvement")
_VARIANCE_COLUMNS = ("ence", "mse_over_avg_var", "se_var_ratio", "skce")

_INTRO = (
    "Proper scores and calibration errors of probabilistic regression reported together "
    "(Chidambaram & Ge (2024) §6; Gruber & Buettner (2022) §5). Lower is better for the "
    "scores and errors; MSE/AvgVar and SE/Var ratio are best at 1; the Δ columns are "
    "score before minus score after recalibration (higher is better)."
)


#: A model's test or calibration rows: Gaussian arrays, or a distribution of any kind.
Model = GaussianPredictions | ProbabilisticPredictions

#: The keys of a model's dict in :func:`regression_report`: the keywords of check_gaussian.
_MODEL_KEYS = ("mean", "variance", "std", "targets", "sample_weight")


def _as_gaussian(name: str, value: Any, what: str) -> Model:
    """A model's dict (mean, variance or std, targets, sample_weight) or GaussianPredictions;
    or predictions of any kind (ProbabilisticPredictions, or a dict with a ``distribution``).

    The spread must be named (``"variance"`` or ``"std"``): a tuple cannot say
    which one its second item is, and a standard deviation read as a variance
    gives wrong scores silently, so tuples are refused.
    """
    if isinstance(value, GaussianPredictions | ProbabilisticPredictions):
        return value
    if isinstance(value, PredictiveDistribution):
        raise CalibrationInputError(
            f"{what} of model {name!r}: a {type(value).__name__} holds no targets; give "
            "calipers.regression.check_predictive(distribution, targets=y) (a "
            "ProbabilisticPredictions) or a dict {'distribution': d, 'targets': y}"
        )
    if isinstance(value, Mapping) and "distribution" in value:
        extra = [k for k in value if k not in ("distribution", "targets", "sample_weight")]
        if extra:
            raise CalibrationInputError(
                f"{what} of model {name!r}: unknown key(s) {', '.join(map(repr, extra))} beside "
                "'distribution'; the keys are 'distribution', 'targets', 'sample_weight'"
            )
        try:
            return check_predictive(
                value["distribution"],
                targets=value.get("targets"),
                sample_weight=value.get("sample_weight"),
            )
        except CalibrationInputError as exc:
            raise CalibrationInputError(f"{what} of model {name!r}: {exc}") from None
    if hasattr(value, "as_kwargs") and callable(value.as_kwargs):  # a calipers.io.RegressionFile
        value = value.as_kwargs()
    example = (
        "{'mean': mu, 'std': sd, 'targets': y} (standard deviations, e.g. from "
        "scikit-learn's predict(X, return_std=True)) or {'mean': mu, 'variance': var, "
        "'targets': y}"
    )
    if isinstance(value, tuple | list):
        raise CalibrationInputError(
            f"{what} of model {name!r}: a {type(value).__name__} of {len(value)} items cannot "
            "say whether its spread is a variance or a standard deviation (read as the other, "
            f"every score is wrong); name it: {example}, or a "
            "calipers.regression.GaussianPredictions from check_gaussian(...)"
        )
    if not isinstance(value, Mapping):
        raise CalibrationInputError(
            f"{what} of model {name!r}: give a dict such as {example}, or a "
            f"calipers.regression.GaussianPredictions; got {type(value).__name__}"
        )
    unknown = [k for k in value if k not in _MODEL_KEYS]
    if unknown:
        raise CalibrationInputError(
            f"{what} of model {name!r}: unknown key(s) {', '.join(map(repr, unknown))}; the keys "
            f"are {', '.join(map(repr, _MODEL_KEYS))} (exactly one of 'variance' and 'std')"
        )
    if "mean" not in value:
        raise CalibrationInputError(f"{what} of model {name!r}: the dict has no 'mean'")
    try:
        return check_gaussian(
            value["mean"],
            variance=value.get("variance"),
            std=value.get("std"),
            targets=value.get("targets"),
            sample_weight=value.get("sample_weight"),
        )
    except CalibrationInputError as exc:
        raise CalibrationInputError(f"{what} of model {name!r}: {exc}") from None


def _check_recalibrator(rc: Any) -> None:
    need = (
        "fit",
        "get_params",
        "predict_cdf",
        "predict_interval",
        "scores",
        "scores_per_row",
        "improvement",
    )
    missing = [m for m in need if not callable(getattr(rc, m, None))]
    if missing:
        raise TypeError(
            "recalibrators must be regression recalibrators (e.g. "
            "calipers.recalibration.VarianceScaling()); "
            f"{type(rc).__name__} has no {', '.join(missing)}"
        )


def _gaussian_row(
    G: GaussianPredictions,
    n_bins: int,
    skce_rows: np.ndarray | None,
    with_skce: bool,
    length_scale: float = 1.0,
) -> dict[str, float]:
    """The columns of Gaussian predictions, by the functions of :mod:`calipers.regression`."""
    v = variance_calibration(G, n_bins=n_bins)
    m = {
        "nll": gaussian_nll(G),
        "dss": dawid_sebastiani(G),
        "crps": crps_gaussian(G),
        "pit_ks": pit_histogram(G).ks_statistic,
        "interval_ce": interval_coverage_error(G),
        "ence": v.ence,
        "mse_over_avg_var": v.mse_over_avg_var,
        "se_var_ratio": v.se_var_ratio,
    }
    if with_skce:
        idx = slice(None) if skce_rows is None else skce_rows
        m["skce"] = gaussian_skce(
            G.mean[idx], variance=G.variance[idx], targets=G.targets[idx], length_scale=length_scale
        )
    return m


def _first(G: Model) -> tuple[Any, dict[str, Any]]:
    """A recalibrator's first argument (and spread) for ``G``: the Gaussian's means and
    variances, as before, or the distribution."""
    if isinstance(G, GaussianPredictions):
        return G.mean, {"variance": G.variance}
    return G.distribution, {}


def _has_density(P: ProbabilisticPredictions) -> bool:
    return P.distribution.kind in ("gaussian", "parametric")


def _distribution_row(
    P: ProbabilisticPredictions, n_bins: int, with_skce: bool
) -> dict[str, float]:
    """The columns of a predictive distribution of any kind (NaN where one does not apply)."""
    d = P.distribution
    m = dict.fromkeys(_COLUMNS[:9], math.nan)
    if _has_density(P):
        m["nll"] = P.weighted_mean(log_score_per_row(P))
    m["crps"] = P.weighted_mean(crps_per_row(P))
    m["pit_ks"] = pit_histogram(P).ks_statistic
    m["interval_ce"] = interval_coverage_error(P)
    if d.variance() is not None:
        v = variance_calibration(P, n_bins=n_bins)
        m.update(ence=v.ence, mse_over_avg_var=v.mse_over_avg_var, se_var_ratio=v.se_var_ratio)
    if not with_skce:
        del m["skce"]
    return {k: float(x) for k, x in m.items()}


def _not_gaussian_note(P: ProbabilisticPredictions, with_skce: bool) -> str:
    d = P.distribution
    missing = ["DSS"] + ([] if _has_density(P) else ["NLL"])
    if d.variance() is None:
        missing += ["ENCE", "MSE/AvgVar", "SE/Var ratio"]
    missing += ["SKCE"] if with_skce else []
    return (
        f"the predictions are a {type(d).__name__} ({d.kind}), not Gaussian arrays: "
        + ", ".join(missing)
        + " are nan (no density, mean-variance score, variance or Gaussian kernel); CRPS, PIT "
        "and coverage come from its own distribution function"
    )


def _recalibrated_row(
    rc: Any,
    G: Model,
    n_bins: int,
    skce_rows: np.ndarray | None,
    with_skce: bool,
    length_scale: float = 1.0,
) -> tuple[dict[str, float], list[str]]:
    """The columns after the fitted recalibrator ``rc`` on the test rows ``G``, and notes."""
    from ..diagrams._regression import histogram_of_pit, recalibrated_coverage, recalibrated_pit

    first, spread = _first(G)
    if getattr(rc, "gaussian", False) and isinstance(G, GaussianPredictions):
        var = np.asarray(rc.predict_variance(G.mean, variance=G.variance), dtype=np.float64)
        G2 = check_gaussian(G.mean, variance=var, targets=G.targets, sample_weight=G.sample_weight)
        m = _gaussian_row(G2, n_bins, skce_rows, with_skce, length_scale)
        notes: list[str] = []
    else:
        w = np.ones(G.n_samples) if G.sample_weight is None else G.sample_weight
        sc = rc.scores(first, targets=G.targets, sample_weight=G.sample_weight, **spread)
        levels = quantile_calibration(G).levels
        cov = recalibrated_coverage(rc, G, levels)
        m = {
            "nll": float(sc.get("nll", math.nan)),
            "dss": float(sc.get("dss", math.nan)),
            "crps": float(sc["crps"]),
            "pit_ks": histogram_of_pit(recalibrated_pit(rc, G), w, 10).ks_statistic,
            "interval_ce": float(np.mean(np.abs(cov - levels))),
            **dict.fromkeys(_VARIANCE_COLUMNS, math.nan),
        }
        if not with_skce:
            del m["skce"]
        notes = [
            "the recalibrated distribution is not Gaussian (no predicted variance): "
            "ENCE, MSE/AvgVar, SE/Var ratio" + (" and SKCE" if with_skce else "") + " are nan"
        ]
        if isinstance(G, ProbabilisticPredictions) and G.distribution.kind == "samples":
            notes.append(
                "the recalibrated distribution is the ensemble read as the quantile set of its "
                "sorted members, recalibrated; ΔCRPS compares its CRPS with the uncalibrated "
                "row's ensemble CRPS (standard estimator), the number in that row"
            )
    # before minus after; the recalibrator's "before" of a distribution is its own score,
    # the number in the uncalibrated row (for an ensemble the standard ensemble CRPS)
    imp = rc.improvement(first, targets=G.targets, sample_weight=G.sample_weight, **spread)
    for k in ("nll", "dss", "crps"):
        m[f"{k}_improvement"] = float(imp.get(k, math.nan))
    return m, notes


def _distribution_befores(G: ProbabilisticPredictions) -> dict[str, Callable[[], np.ndarray]]:
    """The per-row scores of the uncalibrated distribution, as its row of the report shows
    them: the CRPS of its own kind (the standard estimator for an ensemble) and the log
    score where a density or mass exists."""
    befores: dict[str, Callable[[], np.ndarray]] = {"crps": lambda: crps_per_row(G)}
    if _has_density(G):
        befores["nll"] = lambda: log_score_per_row(G)
    return befores


_PER_ROW = {
    "nll": gaussian_nll_per_row,
    "dss": dawid_sebastiani_per_row,
    "crps": crps_gaussian_per_row,
}


def _differences(rc: Any, G: Model) -> dict[str, tuple[float, float, float]]:
    """Per score: (after - before, low, high), the 95 % paired t-interval over the test rows
    (the scores both sides have: NLL, DSS and CRPS of a Gaussian; CRPS, and NLL where a
    density exists, of other kinds)."""
    first, spread = _first(G)
    after = rc.scores_per_row(first, targets=G.targets, **spread)
    out = {}
    if isinstance(G, GaussianPredictions):
        for k, per_row in _PER_ROW.items():
            before = per_row(G.mean, variance=G.variance, targets=G.targets)
            out[k] = _paired_t(after[k] - before, G.sample_weight)
        return out
    for k, score in _distribution_befores(G).items():
        if k in after:
            out[k] = _paired_t(np.asarray(after[k], dtype=np.float64) - score(), G.sample_weight)
    return out


def _flags(base: ReportRow, row: ReportRow) -> list[str]:
    """The report's warnings for a recalibrated row (Chidambaram & Ge (2024) §3).

    A score counts as worse only when its paired interval lies above 0."""
    worse = [k for k in _PER_ROW if k in row.differences and row.differences[k][1] > 0]
    if not worse:
        return []
    what = "; ".join(_diff_text(k, base, row) for k in worse)
    fell = [c for c in ("pit_ks", "interval_ce") if row.metrics[c] < base.metrics[c]]
    if fell:
        errors = ", ".join(
            f"{REGRESSION_COLUMNS[c]} {base.metrics[c]:.4f} -> {row.metrics[c]:.4f}" for c in fell
        )
        return [
            f"calibration error fell ({errors}) but the proper score got worse beyond the noise "
            f"({what}): the Chidambaram & Ge (2024) pitfall"
        ]
    return [
        f"recalibration made the proper score worse beyond the noise ({what}): the method "
        "does not help on this split (overfitting a small calibration split is the usual cause)"
    ]


def regression_report(
    models: Mapping[str, Any],
    *,
    calibration: Mapping[str, Any] | None = None,
    recalibrators: Sequence[Any] = (),
    n_bins: int = 15,
    skce: bool = True,
    skce_max_n: int = 5000,
    skce_length_scale: float | None = None,
    figures: bool = False,
    seed: int = 0,
) -> Report:
    """Proper scores and calibration errors of Gaussian regression models, before and after recalibration.

    One row per model and, with ``recalibrators``, one more per model and
    recalibrator (the layout of Chidambaram & Ge (2024) Table 1, who ask for
    calibration errors never to be reported without a proper score, §6). The
    columns are those of the module docstring: NLL, Dawid-Sebastiani score
    and CRPS (Gneiting & Raftery 2007; Gneiting et al. 2005), the PIT
    Kolmogorov-Smirnov distance and the interval coverage error (mean absolute
    coverage error of central intervals, Kuleshov et al. 2018), the ENCE (Levi et al. 2022),
    MSE/AvgVar and the SE/Var ratio (Gruber & Buettner 2022, Tables 1-2) and
    the Gaussian SKCE (Widmann et al. 2021), each computed by the function of
    :mod:`calipers.regression` or :mod:`calipers.regression.skce` named
    there; with recalibrators also the improvement of NLL, DSS and CRPS (score
    before minus score after on the test rows, ``rc.improvement``; Gruber &
    Buettner 2022, Thm 4.3 and Prop. 4.5), NaN on the uncalibrated rows.

    A recalibrated row's ``differences`` hold, per score (``nll``, ``dss``,
    ``crps``), the mean per-row difference after minus before and its 95 %
    paired t-interval over the test rows; when the interval lies above 0 the
    row is flagged ("made the proper score worse beyond the noise"; "the
    Chidambaram & Ge (2024) pitfall" when the PIT KS distance or the interval
    coverage error fell at the same time), so a change within the noise of
    the test rows never raises a flag.

    Parameters
    ----------
    models : mapping of str to dict, GaussianPredictions or RegressionFile
        The test predictions of each model, as a dict whose keys are the
        keywords of :func:`calipers.regression.check_gaussian`: ``"mean"``
        (target units), exactly one of ``"variance"`` (squared target units)
        and ``"std"`` (target units, e.g. from scikit-learn's
        ``predict(X, return_std=True)``), ``"targets"`` and optionally
        ``"sample_weight"``; or a
        :class:`calipers.regression.GaussianPredictions`, or a
        :class:`calipers.io.RegressionFile`. A tuple is refused: it cannot
        say whether its spread is a variance or a standard deviation. Or
        predictions of any other kind: a
        :class:`calipers.regression.ProbabilisticPredictions` (from
        :func:`calipers.regression.check_predictive`) or a dict
        ``{"distribution": d, "targets": y, "sample_weight": w}`` with a
        :class:`~calipers.regression.QuantileSet`,
        :class:`~calipers.regression.SampleEnsemble` or
        :class:`~calipers.regression.Parametric` ``d``: its CRPS, PIT KS and
        interval CE come from its own distribution function (Gneiting &
        Raftery 2007), its NLL where it has a density, its ENCE, MSE/AvgVar and
        SE/Var ratio where it has a variance; the other columns (DSS, SKCE)
        are NaN, with a note.
    calibration : mapping of str to dict, GaussianPredictions or RegressionFile, optional
        Each model's calibration split, in the same forms; needed for
        ``recalibrators``.
    recalibrators : sequence of regression recalibrators, default ()
        Unfitted recalibrators (e.g.
        ``calipers.recalibration.VarianceScaling()``); each is cloned
        (``type(rc)(**rc.get_params())``), fitted on the model's calibration
        split and evaluated on its test rows. One that cannot be fitted
        (a :class:`~calipers.validation.CalibrationInputError`) gives a
        not-applicable note instead of a row.
    n_bins : int, default 15
        Equal-mass bins of predicted variance for the ENCE (at most the number
        of test rows).
    skce : bool, default True
        Compute the ``skce`` column (O(m^2) in the rows used).
    skce_max_n : int, default 5000
        At most this many test rows for the SKCE: a seeded subsample without
        replacement beyond it, the same rows for every method of a model. The
        SKCE ignores row weights.
    skce_length_scale : float, optional
        Length scale (target units) of both kernels of the SKCE (``length_scale``
        and ``prediction_length_scale`` of
        :func:`~calipers.regression.skce.gaussian_skce`). Default: the standard
        deviation of the model's test targets, so that the column does not
        depend on the targets' units (with the fixed length scale 1 of Widmann
        et al. 2021, targets in the hundreds make every kernel value about 0
        and the SKCE about 0 for any model); the same for every method of a
        model, and stated in the settings.
    figures : bool, default False
        Also draw, per row, the PIT histogram, the quantile reliability diagram
        and the variance-error diagram (:func:`calipers.diagrams.pit_histogram_diagram`,
        :func:`~calipers.diagrams.quantile_reliability_diagram`,
        :func:`~calipers.diagrams.variance_error_diagram`; a recalibrated row
        draws before and after on the same axes, and has no variance-error
        diagram when its output is not Gaussian) as PNG bytes in
        ``Report.figures``; needs matplotlib.
    seed : int, default 0
        Seed of the SKCE subsample.

    Returns
    -------
    calipers.reports.Report
        Rendered like the classification report (``to_markdown``,
        ``to_html``, ``to_json``, ``to_latex``, ``to_dataframe``, ``save``);
        its ``columns`` are the regression columns.

    Raises
    ------
    CalibrationInputError
        No models, a model value of the wrong form (a tuple among them) or with bad numbers,
        recalibrators without a calibration split, or bad ``n_bins`` /
        ``skce_max_n``.
    TypeError
        A recalibrator without the regression recalibrator's methods.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.regression import gaussian_nll
    >>> from calipers.reports import regression_report
    >>> rng = np.random.default_rng(0)
    >>> mu = rng.normal(size=400); y = mu + rng.normal(scale=2.0, size=400)
    >>> rep = regression_report({"net": {"mean": mu, "std": np.ones(400), "targets": y}})
    >>> rep.row("net").metrics["nll"] == gaussian_nll(mu, std=np.ones(400), targets=y)
    True
    >>> print(next(r for r in rep.to_markdown().splitlines() if r.startswith("| model"))[:62])
    | model | method | n | NLL | DSS | CRPS | PIT KS | Interval CE
    """
    for arg, value in (("models", models), ("calibration", calibration)):
        if value is not None and not isinstance(value, Mapping):
            raise CalibrationInputError(
                f"{arg} must be a mapping of model name to predictions, e.g. {{'net': "
                "{'mean': mu, 'std': sd, 'targets': y}} (one model too: a one-entry dict); got a "
                f"{type(value).__name__}"
            )
    if not models:
        raise CalibrationInputError("regression_report needs at least one model")
    B = check_integer(n_bins, "n_bins", minimum=1)
    max_n = check_integer(skce_max_n, "skce_max_n", minimum=2)
    seed = check_integer(seed, "seed", minimum=0)
    if recalibrators and not calibration:
        raise CalibrationInputError(
            "recalibrators need a calibration split per model (calibration=...)"
        )
    for rc in recalibrators:
        _check_recalibrator(rc)
    with_skce = bool(skce)
    columns = tuple(
        c
        for c in _COLUMNS
        if (with_skce or c != "skce") and (recalibrators or c not in _IMPROVEMENTS)
    )
    rows: list[ReportRow] = []
    figs: dict[str, bytes] = {}
    subsampled = False
    scales: list[str] = []
    kinds: set[str] = set()  # the kinds of the models that are not Gaussian arrays
    gaussians = False
    if skce_length_scale is not None:
        skce_length_scale = check_positive(skce_length_scale, "skce_length_scale")
    for mi, (name, value) in enumerate(models.items()):
        G = _as_gaussian(name, value, "test predictions")
        gaussians |= isinstance(G, GaussianPredictions)
        if B > G.n_samples:
            raise CalibrationInputError(
                f"n_bins must be at most the number of test rows; model {name!r} has "
                f"{G.n_samples} rows and n_bins is {B}"
            )
        if with_skce and G.n_samples < 2:
            raise CalibrationInputError(
                f"the SKCE needs at least 2 test rows; model {name!r} has {G.n_samples} "
                "(pass skce=False)"
            )
        skce_rows = _subsample(G.n_samples, max_n, np.random.default_rng(seed + 1000 * mi))
        subsampled |= skce_rows is not None
        ls = skce_length_scale
        if ls is None:
            ls = float(np.std(G.targets)) if np.ptp(G.targets) > 0 else 1.0
        scales.append(f"{name}: {ls:.4g}")
        if isinstance(G, GaussianPredictions):
            metrics = _gaussian_row(G, B, skce_rows, with_skce, ls)
            base_flags: list[str] = []
        else:
            metrics = _distribution_row(G, B, with_skce)
            base_flags = [_not_gaussian_note(G, with_skce)]
            kinds.add(f"{type(G.distribution).__name__} ({G.distribution.kind})")
        metrics.update(dict.fromkeys((c for c in columns if c in _IMPROVEMENTS), math.nan))
        base_index = len(rows)
        rows.append(ReportRow(str(name), UNCALIBRATED, G.n_samples, metrics, flags=base_flags))
        if figures:
            figs.update(_figures(str(name), UNCALIBRATED, G, None, B))
        if not recalibrators:
            continue
        if name not in calibration:  # type: ignore[operator]
            raise CalibrationInputError(f"no calibration split for model {name!r}")
        C = _as_gaussian(name, calibration[name], "calibration split")  # type: ignore[index]
        for rc in recalibrators:
            method = type(rc).__name__
            try:
                c_first, c_spread = _first(C)
                fitted = type(rc)(**rc.get_params()).fit(
                    c_first, targets=C.targets, sample_weight=C.sample_weight, **c_spread
                )
            except CalibrationInputError as exc:
                rows.append(
                    ReportRow(
                        str(name),
                        method,
                        0,
                        dict.fromkeys(columns, math.nan),
                        not_applicable=str(exc),
                    )
                )
                continue
            m, notes = _recalibrated_row(fitted, G, B, skce_rows, with_skce, ls)
            row = ReportRow(str(name), method, G.n_samples, m, flags=notes)
            row.differences = _differences(fitted, G)
            row.flags.extend(_flags(rows[base_index], row))
            rows.append(row)
            if figures:
                figs.update(_figures(str(name), method, G, fitted, B))
    settings: dict[str, Any] = {
        "predictions": "Gaussian N(mean, variance) per row"
        if not kinds
        else "per row: "
        + ", ".join(sorted(kinds | ({"Gaussian N(mean, variance)"} if gaussians else set()))),
        "nll": "Gaussian negative log-likelihood, nats; DSS and CRPS as means over rows "
        "(weighted by sample_weight)",
        "pit_ks": "Kolmogorov-Smirnov distance of the PIT values from uniform",
        "interval_ce": "interval coverage error: mean |coverage - level| of central intervals "
        "at levels 0.05, 0.10, ..., 0.95",
        "ence": f"{B} equal-mass bins of predicted variance (Levi et al. 2022)",
        "seed": seed,
    }
    if with_skce:
        settings["skce"] = (
            "unbiased Gaussian SKCE (Widmann et al. 2021) with both kernel length scales "
            + (
                "the standard deviation of the test targets"
                if skce_length_scale is None
                else "set by skce_length_scale"
            )
            + " ("
            + ", ".join(scales)
            + ", target units) on "
            + (
                f"a seeded subsample of at most {max_n} rows without replacement (same rows "
                "for every method of a model)"
                if subsampled
                else "all test rows"
            )
            + "; row weights ignored"
        )
    if recalibrators:
        settings["recalibration"] = (
            "each recalibrator cloned, fitted on the model's calibration split and "
            "evaluated on its test rows; Δ columns: score before minus score after"
        )
    return Report(rows, settings, columns=columns, figures=figs, intro=_INTRO)


def _figures(model: str, method: str, G: Model, rc: Any, n_bins: int) -> dict[str, bytes]:
    """The three diagrams of one row as PNG bytes, keyed ``model__method__kind``."""
    import matplotlib.pyplot as plt

    from ..diagrams import (
        pit_histogram_diagram,
        quantile_reliability_diagram,
        variance_error_diagram,
    )
    from ..diagrams._style import plain_text

    makers: dict[str, Any] = {
        "pit": pit_histogram_diagram,
        "quantile": quantile_reliability_diagram,
    }
    has_variance = isinstance(G, GaussianPredictions) or G.distribution.variance() is not None
    if has_variance and (rc is None or getattr(rc, "gaussian", False)):
        makers["variance"] = lambda G_, **kw: variance_error_diagram(G_, n_bins=n_bins, **kw)
    out = {}
    for kind, make in makers.items():
        fig = make(G, recalibrator=rc, title=plain_text(f"{model} / {method}"))
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=150)
        plt.close(fig)
        out[f"{_slug(model)}__{_slug(method)}__{kind}"] = buf.getvalue()
    return out
