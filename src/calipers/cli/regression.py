"""Regression files on the command line: ``calipers table``, ``report`` and ``diagram`` for them.

A file whose columns (or arrays) name regression predictions and a target
(:func:`calipers.io.predictive_file_kinds`), or any file when one of the
regression options below is given, holds regression predictions of one of
four kinds (:func:`calipers.io.read_predictive_file`): a Gaussian N(mean,
variance) (Gruber & Buettner 2022, §5), quantiles at stated levels, a central
interval at a stated level, or samples. ``calipers table`` then prints the
regression table below instead of the classification one; mixing regression
and classification files in one call is refused. Each file is read once and
its values validated once, by :func:`calipers.regression.check_gaussian` (a
Gaussian, exactly as before) or by the predictive distributions of
:mod:`calipers.regression` (:class:`~calipers.regression.QuantileSet`,
:func:`~calipers.regression.central_interval`,
:class:`~calipers.regression.SampleEnsemble`). Every number comes from
:mod:`calipers.regression`; each column of the table says which kinds it
applies to (:data:`REGRESSION_COLUMNS`), and a table shows the columns that
apply to at least one of its files (``n/a`` where a column does not apply).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..io import PredictiveFile, predictive_file_kinds, read_predictive_file
from ..io.predictive_file import PREDICTIVE_KINDS
from ..regression import (
    GaussianPredictions,
    ProbabilisticPredictions,
    QuantileSet,
    SampleEnsemble,
    central_interval,
    check_gaussian,
    check_predictive,
    crps_gaussian,
    crps_per_row,
    dawid_sebastiani,
    gaussian_nll,
    interval_coverage,
    interval_coverage_error,
    interval_score,
    interval_width,
    log_score,
    miscalibration_area,
    pinball_loss,
    pit_histogram,
    quantile_calibration_curve,
    variance_calibration,
)
from ..validation import CalibrationInputError
from .formatting import _Column, _format_markdown, _format_text, _json_value, _resolve_format
from .formatting import _Table as _TextTable
from .outputs import _info, write_report, write_table

#: The regression options: flag -> (attribute, keyword of read_predictive_file, help).
REGRESSION_OPTIONS: dict[str, tuple[str, str, str]] = {
    "--mean-key": ("mean_key", "mean_key", "column or array of predicted means"),
    "--variance-key": ("variance_key", "variance_key", "column or array of predicted variances"),
    "--std-key": ("std_key", "std_key", "column or array of predicted standard deviations"),
    "--targets-key": ("targets_key", "targets_key", "column or array of observed targets"),
    "--weight-key": ("weight_key", "weight_key", "column or array of row weights"),
    "--kind": (
        "regression_kind",
        "kind",
        "the kind of regression prediction to read when a file's names allow several: "
        "gaussian, quantiles, interval or samples",
    ),
    "--quantile-columns": (
        "quantile_columns",
        "quantile_columns",
        "comma-separated quantile columns (levels from their names or --quantile-levels)",
    ),
    "--quantile-levels": (
        "quantile_levels",
        "quantile_levels",
        "comma-separated levels in (0, 1), one per quantile column (or per column of the "
        "--quantiles-key array), e.g. 0.05,0.5,0.95",
    ),
    "--quantiles-key": (
        "quantiles_key",
        "quantiles_key",
        "(n, m) array or Parquet list column of quantiles",
    ),
    "--samples-key": (
        "samples_key",
        "samples_key",
        "(n, k) array or list column of samples, or the prefix of numbered sample columns",
    ),
    "--lower-key": ("lower_key", "lower_key", "column of the lower ends of central intervals"),
    "--upper-key": ("upper_key", "upper_key", "column of the upper ends of central intervals"),
    "--interval-level": (
        "interval_level",
        "interval_level",
        "level of the central intervals of lower/upper columns, e.g. 0.9",
    ),
}

#: The row numbers of messages count from 0; the note says so.
_ROW = re.compile(r"\brow \d+\b")

#: What ``--crossing`` passes to :class:`calipers.regression.QuantileSet`.
CROSSING_CHOICES = ("raise", "sort")


@dataclass(frozen=True)
class RegressionModel:
    """One file's predictions, validated: the input of every regression column.

    ``gaussian`` is set for a Gaussian file (the columns of a Gaussian are
    computed from it exactly as before); ``predictions`` is the predictive
    distribution of every kind (for a Gaussian, built from ``gaussian`` when
    a column needs it); ``level`` is a central interval's level.
    """

    kind: str  # "gaussian", "quantiles", "interval", "samples"
    predictions: ProbabilisticPredictions | None
    gaussian: GaussianPredictions | None = None
    levels: np.ndarray | None = None  # quantile levels (quantiles, interval)
    level: float | None = None  # the interval's level

    @property
    def n_samples(self) -> int:
        """Number of rows."""
        if self.gaussian is not None:
            return self.gaussian.n_samples
        assert self.predictions is not None
        return self.predictions.n_samples

    @property
    def P(self) -> ProbabilisticPredictions:
        """The predictions as a :class:`~calipers.regression.ProbabilisticPredictions`."""
        if self.predictions is not None:
            return self.predictions
        G = self.gaussian
        assert G is not None
        return check_predictive(
            G.mean, variance=G.variance, targets=G.targets, sample_weight=G.sample_weight
        )

    @property
    def quantile_matrix(self) -> np.ndarray:
        """``(n, m)`` the stated quantiles (quantiles and interval kinds)."""
        d = self.P.distribution
        assert isinstance(d, QuantileSet)
        return np.asarray(d.to_arrays()["quantiles"], dtype=np.float64)


def _mean_pinball(M: RegressionModel) -> float:
    """Mean over the stated levels of the (weighted) mean pinball loss."""
    assert M.levels is not None
    P, Q = M.P, M.quantile_matrix
    return float(
        np.mean(
            [
                pinball_loss(Q[:, j], P.targets, level=float(t), sample_weight=P.sample_weight)
                for j, t in enumerate(M.levels)
            ]
        )
    )


def _interval(M: RegressionModel, f: Callable[..., float], **kw: Any) -> float:
    Q = M.quantile_matrix
    return float(f(Q[:, 0], Q[:, 1], sample_weight=M.P.sample_weight, **kw))


def _crps(M: RegressionModel) -> float:
    if M.gaussian is not None:
        return crps_gaussian(M.gaussian)
    P = M.P
    return float(P.weighted_mean(crps_per_row(P)))


def _own(M: RegressionModel) -> Any:
    """The Gaussian itself (for the Gaussian functions, as before) or the distribution."""
    return M.gaussian if M.gaussian is not None else M.P


@dataclass(frozen=True)
class _RColumn:
    key: str  # JSON / CSV name
    header: str  # text / Markdown header
    meaning: str  # for the help and the notes
    kinds: tuple[str, ...]  # the kinds of prediction it applies to
    value: Callable[[RegressionModel, int], float]  # (model, n_bins) -> number
    beyond: str = ""  # what it means for kinds other than a Gaussian (said when one is there)

    def text(self, gaussian_only: bool) -> str:
        """The meaning, with what it is for other kinds unless every file is Gaussian."""
        return (
            self.meaning if gaussian_only or not self.beyond else f"{self.meaning} ({self.beyond})"
        )


_ALL = ("gaussian", "quantiles", "samples")
_VAR = ("gaussian", "samples")

#: The columns of the regression table, in order, with the kinds each applies to.
REGRESSION_COLUMNS: tuple[_RColumn, ...] = (
    _RColumn(
        "nll",
        "NLL",
        "mean Gaussian negative log-likelihood, in nats",
        ("gaussian",),
        lambda M, b: gaussian_nll(M.gaussian) if M.gaussian is not None else log_score(M.P),
        beyond="Gaussian files only: quantiles and samples state no density",
    ),
    _RColumn(
        "dss",
        "DSS",
        "mean Dawid-Sebastiani score log(sigma^2) + (y - mu)^2 / sigma^2",
        ("gaussian",),
        lambda M, b: dawid_sebastiani(M.gaussian),
        beyond="Gaussian files only",
    ),
    _RColumn(
        "crps",
        "CRPS",
        "mean continuous ranked probability score, in target units",
        _ALL,
        lambda M, b: _crps(M),
        beyond="closed form for a Gaussian, the standard ensemble estimator for samples, the quantile-averaged pinball form for quantiles; Gneiting & Raftery 2007",
    ),
    _RColumn(
        "pinball",
        "pinball",
        "mean over the stated levels of the mean pinball loss (Koenker & Bassett 1978), in "
        "target units (quantile and interval files)",
        ("quantiles", "interval"),
        lambda M, b: _mean_pinball(M),
    ),
    _RColumn(
        "interval_score",
        "IS",
        "mean interval score of the central interval (Gneiting & Raftery 2007, eq. 43), in "
        "target units (interval files)",
        ("interval",),
        lambda M, b: _interval(M, interval_score, targets=M.P.targets, level=M.level),
    ),
    _RColumn(
        "coverage",
        "coverage",
        "fraction of targets inside the central interval, to compare with its level "
        "(interval files)",
        ("interval",),
        lambda M, b: _interval(M, interval_coverage, targets=M.P.targets),
    ),
    _RColumn(
        "width",
        "width",
        "mean width of the central interval, in target units (interval files)",
        ("interval",),
        lambda M, b: _interval(M, interval_width),
    ),
    _RColumn(
        "pit_ks",
        "PIT KS",
        "Kolmogorov-Smirnov distance of the PIT values Phi((y - mu) / sigma) from the "
        "uniform distribution (Kuleshov et al. 2018), in [0, 1]",
        _ALL,
        lambda M, b: pit_histogram(_own(M)).ks_statistic,
        beyond="for other kinds F(y) of their own distribution function, randomised where F jumps; Czado, Gneiting & Held 2009",
    ),
    _RColumn(
        "interval_ce",
        "interval CE",
        "interval coverage error, the mean |coverage - level| of the central intervals at levels "
        "0.05, 0.10, ..., 0.95 (Kuleshov et al. 2018; calipers.regression."
        "interval_coverage_error, not the one-sided quantile_calibration_error)",
        _ALL,
        lambda M, b: interval_coverage_error(_own(M)),
        beyond="for a quantile set, at the central intervals it states, pairs of levels tau and 1 - tau, when it has such a pair",
    ),
    _RColumn(
        "quantile_ce",
        "quantile CE",
        "mean over the stated levels of |fraction of targets at or below the quantile - level| "
        "(quantile files; calipers.regression.quantile_calibration_curve)",
        ("quantiles",),
        lambda M, b: float(
            np.mean(
                np.abs(
                    quantile_calibration_curve(M.P, levels=M.levels).observed - np.asarray(M.levels)
                )
            )
        ),
    ),
    _RColumn(
        "miscal_area",
        "miscal. area",
        "miscalibration area of uncertainty-toolbox: the area between the observed and the "
        "expected proportion of targets in central intervals (quantile and sample files; "
        "calipers.regression.miscalibration_area)",
        ("quantiles", "samples"),
        lambda M, b: miscalibration_area(M.P),
    ),
    _RColumn(
        "ence",
        "ENCE",
        "expected normalized calibration error over equal-mass bins of predicted variance "
        "(Levi et al. 2022): mean |RMV - RMSE| / RMV",
        _VAR,
        lambda M, b: variance_calibration(_own(M), n_bins=min(b, M.n_samples)).ence,
        beyond="Gaussian and sample files",
    ),
    _RColumn(
        "mse_over_avg_var",
        "MSE/AvgVar",
        "mean squared error over mean predicted variance (Gruber & Buettner 2022, Table 1); "
        "1 when the variances are right on average, > 1 when too small",
        _VAR,
        lambda M, b: variance_calibration(_own(M), n_bins=min(b, M.n_samples)).mse_over_avg_var,
    ),
    _RColumn(
        "se_var_ratio",
        "SE/Var",
        "mean of (y - mu)^2 / sigma^2 over rows (Gruber & Buettner 2022, Table 2); 1 when "
        "calibrated",
        _VAR,
        lambda M, b: variance_calibration(_own(M), n_bins=min(b, M.n_samples)).se_var_ratio,
    ),
)

#: The table's help text for regression files (appended to its description).
REGRESSION_HELP = (
    "Regression files (a .csv, .npz, .parquet or .pt file, or a structured .npy array):\n"
    "  Gaussian predictions N(mean, variance) (Gruber & Buettner 2022): columns/arrays named\n"
    "  mean (or mu, y_pred, y_mean, pred_mean, prediction), var (variance, sigma2, y_var,\n"
    "  pred_var) or std (sd, sigma, stddev, y_std, pred_std); quantiles: one column per level,\n"
    "  q0.05, quantile_0.05, q_0.05, q5 (percent), 5%, 0.05, darts' <target>_q0.05, or an\n"
    "  (n, m) array quantiles with an array levels; a central interval: lower and upper\n"
    "  with --interval-level; samples: sample_0, sample_1, ... (member_, draw_, ens_, s0, ...)\n"
    "  or an (n, k) array samples. Targets y (target, targets, y_true, label) and\n"
    "  optionally weight (sample_weight), any case (uncertainty-toolbox's y_pred, y_std,\n"
    "  y_true work as they are); other names with --mean-key, --variance-key, --std-key,\n"
    "  --quantile-columns, --quantile-levels, --quantiles-key, --samples-key, --lower-key,\n"
    "  --upper-key, --targets-key, --weight-key; --kind when the names allow several kinds;\n"
    "  --crossing sort rearranges crossing quantiles (Chernozhukov et al. 2010; default:\n"
    "  refused, naming the row). Such a file is detected and tabulated with the columns that\n"
    "  apply to its kind (n/a where one does not):\n"
    + "".join(f"  {c.key}: {c.text(False)}\n" for c in REGRESSION_COLUMNS)
    + "  ENCE uses --bins equal-mass bins (at most one per row). Files of regression and\n"
    "  classification predictions in one call are refused; --chunk-rows and\n"
    "  --scheduler/--workers do not apply.\n"
)

#: Classification options that do not apply to regression files: flag -> "was it given".
_NOT_FOR_REGRESSION = (
    ("--chunk-rows", lambda a: getattr(a, "chunk_rows", None) is not None),
    ("--scheduler", lambda a: getattr(a, "scheduler", None) is not None),
    ("--workers", lambda a: getattr(a, "workers", None) is not None),
    ("--logits", lambda a: bool(getattr(a, "logits", False))),
    ("--probs", lambda a: bool(getattr(a, "probs", False))),
    ("--labels", lambda a: getattr(a, "labels", None) is not None),
    ("--probs-key", lambda a: getattr(a, "probs_key", None) is not None),
    ("--logits-key", lambda a: getattr(a, "logits_key", None) is not None),
    ("--labels-key", lambda a: getattr(a, "labels_key", None) is not None),
    ("--renormalize", lambda a: bool(getattr(a, "renormalize", False))),
    ("--clip", lambda a: bool(getattr(a, "clip", False))),
    ("--sum-tol", lambda a: getattr(a, "sum_tol", None) is not None),
    ("--nll-clip", lambda a: getattr(a, "nll_clip", None) is not None),
)


def add_regression_options(parser: argparse.ArgumentParser) -> None:
    """Add the regression options (:data:`REGRESSION_OPTIONS` and ``--crossing``) to a parser."""
    group = parser.add_argument_group("regression files")
    for flag, (dest, _, text) in REGRESSION_OPTIONS.items():
        if flag == "--kind":
            group.add_argument(flag, dest=dest, default=None, choices=PREDICTIVE_KINDS, help=text)
            continue
        metavar = {
            "--quantile-columns": "NAMES",
            "--quantile-levels": "LEVELS",
            "--interval-level": "LEVEL",
        }.get(flag, "KEY")
        group.add_argument(flag, dest=dest, metavar=metavar, default=None, help=text)
    group.add_argument(
        "--crossing",
        dest="crossing",
        choices=CROSSING_CHOICES,
        default=None,
        help="quantiles that decrease along the levels in a row: raise (refuse the file, "
        "naming the row; the default) or sort (rearrange each row, Chernozhukov, "
        "Fernández-Val & Galichon 2010)",
    )


def regression_keys(args: argparse.Namespace) -> dict[str, str | None]:
    """The keyword arguments of :func:`calipers.io.read_predictive_file` from the options."""
    return {kw: getattr(args, dest, None) for dest, kw, _ in REGRESSION_OPTIONS.values()}


def regression_files(args: argparse.Namespace, command: str) -> bool:
    """Whether ``args.files`` are regression files (all of them); mixing kinds is an error.

    With a regression option every file is read as a regression file;
    otherwise each is detected by its names
    (:func:`calipers.io.predictive_file_kinds`: a Gaussian, quantiles, an
    interval or samples, and a target).
    """
    files = [str(f) for f in args.files]
    if not files:
        return False
    given = [f for f, (dest, _, _) in REGRESSION_OPTIONS.items() if getattr(args, dest, None)]
    if given or getattr(args, "crossing", None) is not None:
        return True
    kinds = [bool(predictive_file_kinds(f)) for f in files]
    if all(kinds):
        return True
    if any(kinds):
        reg = [f for f, k in zip(files, kinds, strict=True) if k]
        other = [f for f, k in zip(files, kinds, strict=True) if not k]
        raise CalibrationInputError(
            f"calipers {command} got regression predictions ({', '.join(reg)}) and "
            f"classification predictions ({', '.join(other)}) in one call; they have "
            f"different columns: run calipers {command} once for each kind"
        )
    return False


def _refuse_classification_options(args: argparse.Namespace, command: str) -> None:
    given = [flag for flag, was_given in _NOT_FOR_REGRESSION if was_given(args)]
    if given:
        raise CalibrationInputError(
            f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply to regression "
            f"files ({', '.join(str(f) for f in args.files)}): the regression {command} reads "
            "every file whole, in memory (no --chunk-rows or Dask), and its files hold "
            "predictive distributions and targets, not probabilities and labels"
        )


def _model(pf: PredictiveFile, crossing: str) -> RegressionModel:
    """The validated predictions of a file read by :func:`calipers.io.read_predictive_file`."""
    w, y = pf.sample_weight, pf.targets
    if pf.kind == "gaussian":
        assert pf.gaussian is not None
        return RegressionModel("gaussian", None, gaussian=check_gaussian(**pf.gaussian.as_kwargs()))
    if pf.kind == "samples":
        P = check_predictive(SampleEnsemble(pf.samples), targets=y, sample_weight=w)
        return RegressionModel("samples", P)
    assert pf.quantiles is not None
    if pf.kind == "interval":
        assert pf.interval_level is not None
        level = float(pf.interval_level)
        d = central_interval(pf.quantiles[:, 0], pf.quantiles[:, 1], level)
        P = check_predictive(d, targets=y, sample_weight=w)
        return RegressionModel("interval", P, levels=d.to_arrays()["levels"], level=level)
    levels = pf.level_values
    P = check_predictive(
        QuantileSet(levels, pf.quantiles, crossing=crossing), targets=y, sample_weight=w
    )
    return RegressionModel("quantiles", P, levels=levels)


def _checked(pf: PredictiveFile, crossing: str) -> RegressionModel:
    """:func:`_model` of a file, its errors naming the file."""
    try:
        return _model(pf, crossing)
    except CalibrationInputError as exc:
        where = (
            " (rows are counted from 0, the first data row being row 0)"
            if _ROW.search(str(exc))
            else ""
        )
        text = str(exc).replace('pass crossing="sort"', "pass --crossing sort")
        raise CalibrationInputError(f"{pf.path}: {text}{where}") from None


def read_regression_models(
    args: argparse.Namespace, command: str
) -> tuple[list[tuple[str, RegressionModel]], list[str]]:
    """Each file read and validated, named by its stem (its path when two stems agree)."""
    _refuse_classification_options(args, command)
    paths = [Path(f) for f in args.files]
    stems = [p.stem for p in paths]
    names = [str(p) if stems.count(p.stem) > 1 else p.stem for p in paths]
    keys = regression_keys(args)
    crossing = getattr(args, "crossing", None) or "raise"
    models: list[tuple[str, RegressionModel]] = []
    sources: list[str] = []
    for name, path in zip(names, paths, strict=True):
        pf = read_predictive_file(path, **keys)
        M = _checked(pf, crossing)
        if pf.gaussian is not None:
            roles = ["mean", pf.gaussian.spread, "targets"]
        else:
            roles = [pf.describe(), "targets"]
        roles += ["weights"] if pf.sample_weight is not None else []
        _info(f"{path}: regression predictions ({', '.join(roles)}): {M.n_samples} rows")
        models.append((name, M))
        sources.append(f"{path}: {pf.note}; n = {M.n_samples}")
    return models, sources


def regression_row(M: RegressionModel | GaussianPredictions, n_bins: int) -> dict[str, Any]:
    """The table's numbers for one model, from :mod:`calipers.regression`.

    Every column of :data:`REGRESSION_COLUMNS` that applies to the model's
    kind; the others are None (``n/a``).
    """
    if isinstance(M, GaussianPredictions):
        M = RegressionModel("gaussian", None, gaussian=M)
    row: dict[str, Any] = {"n": M.n_samples}
    for c in REGRESSION_COLUMNS:
        row[c.key] = float(c.value(M, n_bins)) if M.kind in c.kinds else None
    return row


def _not_tabulated(P: Any, b: int) -> Any:
    raise TypeError("regression columns are computed by regression_row")


def _format_json(table: _TextTable) -> str:
    doc = {
        "calipers_version": __version__,
        "title": table.title,
        "kind": "regression",
        "sources": table.sources,
        "settings": table.settings,
        "columns": ["model", "n"] + [c.key for c in table.columns],
        "models": [{k: _json_value(v) for k, v in r.items()} for r in table.rows],
        "notes": table.notes,
    }
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def _format_csv(table: _TextTable) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    keys = ["model", "n"] + [c.key for c in table.columns]
    writer.writerow(keys)
    for r in table.rows:
        writer.writerow([repr(r[k]) if isinstance(r[k], float) else r[k] for k in keys])
    return buf.getvalue()


def _build(
    models: Sequence[tuple[str, RegressionModel]], sources: list[str], n_bins: int
) -> _TextTable:
    kinds = {M.kind for _, M in models}
    shown = [c for c in REGRESSION_COLUMNS if kinds & set(c.kinds)]
    rows = []
    for name, M in models:
        row = regression_row(M, n_bins)
        rows.append({"model": name, "n": row["n"], **{c.key: row[c.key] for c in shown}})
    gaussian_only = kinds == {"gaussian"}
    notes = [f"{c.header}: {c.text(gaussian_only)}." for c in shown]
    if len(kinds) > 1:
        notes.append(
            "n/a: the column does not apply to the file's kind of prediction ("
            + ", ".join(f"{name}: {M.kind}" for name, M in models)
            + ")."
        )
    with_var = [(name, M) for name, M in models if M.kind in _VAR]
    fewer = [f"{name} ({M.n_samples})" for name, M in with_var if M.n_samples < n_bins]
    notes.append(
        (
            f"ENCE bins: {n_bins} equal-mass bins of predicted variance (--bins)"
            + (f"; one bin per row for files with fewer rows: {', '.join(fewer)}" if fewer else "")
            + ". "
            if with_var
            else ""
        )
        + "Means over rows are weighted by the weight column, when a file has one."
    )
    return _TextTable(
        title=f"calipers {__version__} regression calibration table",
        sources=sources,
        columns=[_Column(c.key, c.header, _not_tabulated) for c in shown],
        rows=rows,
        notes=notes,
        settings={"n_bins": n_bins, "quantile_levels": "0.05, 0.10, ..., 0.95"},
    )


def cmd_regression_table(args: argparse.Namespace) -> int:
    """``calipers table`` for regression files: one row per file."""
    models, sources = read_regression_models(args, "table")
    table = _build(models, sources, args.bins)
    fmt = _resolve_format(args)
    text = {
        "text": _format_text,
        "markdown": _format_markdown,
        "json": _format_json,
        "csv": _format_csv,
    }[fmt](table)
    return write_table(text, fmt, table, sources, args)


#: Short names of the regression recalibration methods on the command line.
REGRESSION_METHOD_ALIASES = {
    "vscale": "VarianceScaling",
    "vplatt": "VariancePlattScaling",
    "quantile": "QuantileRecalibration",
}


def regression_recalibrators(spec: str) -> list[Any]:
    """Unfitted regression recalibrators named in ``--recalibrate`` (short or class names)."""
    from ..recalibration.regression.base import _REGRESSION_REGISTRY

    if not spec or spec == "none":
        return []
    lower = {k.lower(): k for k in _REGRESSION_REGISTRY}
    out = []
    for word in spec.split(","):
        w = word.strip()
        key = REGRESSION_METHOD_ALIASES.get(w.lower(), lower.get(w.lower()))
        if key is None:
            known = ", ".join(sorted(REGRESSION_METHOD_ALIASES))
            raise CalibrationInputError(
                f"unknown regression recalibration method {w!r}; use short names ({known}) "
                "or class names (VarianceScaling, VariancePlattScaling, QuantileRecalibration)"
            )
        out.append(_REGRESSION_REGISTRY[key]())
    return out


def _take(M: RegressionModel, idx: np.ndarray) -> Any:
    """Rows ``idx`` of a model, as the report takes them: the Gaussian, or the distribution."""
    if M.gaussian is not None:
        G = M.gaussian
        w = None if G.sample_weight is None else G.sample_weight[idx]
        return check_gaussian(
            G.mean[idx], variance=G.variance[idx], targets=G.targets[idx], sample_weight=w
        )
    P = M.P
    w = None if P.sample_weight is None else P.sample_weight[idx]
    return check_predictive(P.distribution.take(idx), targets=P.targets[idx], sample_weight=w)


def _report_input(M: RegressionModel) -> Any:
    """What :func:`calipers.reports.regression_report` takes for a model."""
    return M.gaussian if M.gaussian is not None else M.P


def cmd_regression_report(args: argparse.Namespace) -> int:
    """``calipers report`` for regression files (:func:`calipers.regression_report`)."""
    from ..reports import regression_report as make

    spec = args.recalibrate
    if args.calibration and not spec:
        spec = "vscale,vplatt,quantile"
    methods = regression_recalibrators(spec)
    models, sources = read_regression_models(args, "report")
    if args.calibration and len(args.calibration) != len(models):
        raise CalibrationInputError(
            f"--calibration needs one file per prediction file ({len(models)}); "
            f"got {len(args.calibration)}"
        )
    test_sets: dict[str, Any] = {}
    cal_sets: dict[str, Any] = {}
    for i, (name, G) in enumerate(models):
        if args.calibration:
            cargs = argparse.Namespace(**{**vars(args), "files": [args.calibration[i]]})
            cal_sets[name] = _report_input(read_regression_models(cargs, "report")[0][0][1])
            test_sets[name] = _report_input(G)
        elif methods:
            if not 0.0 < args.split < 1.0:
                raise CalibrationInputError(f"--split must be in (0, 1); got {args.split}")
            perm = np.random.default_rng(args.seed).permutation(G.n_samples)
            n_cal = int(round(args.split * G.n_samples))
            if not 2 <= n_cal <= G.n_samples - 2:
                raise CalibrationInputError(
                    f"{name}: --split {args.split} of {G.n_samples} rows leaves fewer than 2 "
                    "rows on one side"
                )
            ci, ti = np.sort(perm[:n_cal]), np.sort(perm[n_cal:])
            cal_sets[name], test_sets[name] = _take(G, ci), _take(G, ti)
            sources.append(
                f"{name}: split {len(ci)} calibration / {len(ti)} test rows "
                f"(random, seed {args.seed})"
            )
        else:
            test_sets[name] = _report_input(G)
    for line in sources:
        _info(f"source: {line}")
    rep = make(
        test_sets,
        calibration=cal_sets or None,
        recalibrators=methods,
        seed=args.seed,
        figures=args.out is not None,
    )
    return write_report(rep, args)
