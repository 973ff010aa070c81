"""Regression files on the command line: ``calipers table`` and ``calipers report`` for them.

A file whose columns (or arrays) name a mean, a variance or standard deviation
and a target (:func:`calipers.io.is_regression_file`), or any file when a
``--mean-key``/``--variance-key``/``--std-key``/``--targets-key``/``--weight-key``
option is given, holds Gaussian regression predictions (Gruber & Buettner 2022,
§5). ``calipers table`` then prints the regression table below instead of the
classification one; mixing the two kinds in one call is refused. Each file is
read by :func:`calipers.io.read_regression_file` and validated once by
:func:`calipers.regression.check_gaussian`; every number comes from
:mod:`calipers.regression`.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..io import RegressionFile, is_regression_file, read_regression_file
from ..regression import (
    GaussianPredictions,
    check_gaussian,
    crps_gaussian,
    dawid_sebastiani,
    gaussian_nll,
    interval_coverage_error,
    pit_histogram,
    variance_calibration,
)
from ..validation import CalibrationInputError
from .formatting import _Column, _format_markdown, _format_text, _json_value, _resolve_format
from .formatting import _Table as _TextTable
from .outputs import _info, write_report, write_table

#: The regression key options: flag -> (attribute, keyword of read_regression_file, help).
REGRESSION_OPTIONS: dict[str, tuple[str, str, str]] = {
    "--mean-key": ("mean_key", "mean_key", "column or array of predicted means"),
    "--variance-key": ("variance_key", "variance_key", "column or array of predicted variances"),
    "--std-key": ("std_key", "std_key", "column or array of predicted standard deviations"),
    "--targets-key": ("targets_key", "targets_key", "column or array of observed targets"),
    "--weight-key": ("weight_key", "weight_key", "column or array of row weights"),
}


@dataclass(frozen=True)
class _RColumn:
    key: str  # JSON / CSV name
    header: str  # text / Markdown header
    meaning: str  # for the help and the notes


#: The columns of the regression table, in order.
REGRESSION_COLUMNS: tuple[_RColumn, ...] = (
    _RColumn("nll", "NLL", "mean Gaussian negative log-likelihood, in nats"),
    _RColumn("dss", "DSS", "mean Dawid-Sebastiani score log(sigma^2) + (y - mu)^2 / sigma^2"),
    _RColumn("crps", "CRPS", "mean continuous ranked probability score, in target units"),
    _RColumn(
        "pit_ks",
        "PIT KS",
        "Kolmogorov-Smirnov distance of the PIT values Phi((y - mu) / sigma) from the "
        "uniform distribution (Kuleshov et al. 2018), in [0, 1]",
    ),
    _RColumn(
        "interval_ce",
        "interval CE",
        "interval coverage error, the mean |coverage - level| of the central intervals at levels "
        "0.05, 0.10, ..., 0.95 (Kuleshov et al. 2018; calipers.regression."
        "interval_coverage_error, not the one-sided quantile_calibration_error)",
    ),
    _RColumn(
        "ence",
        "ENCE",
        "expected normalized calibration error over equal-mass bins of predicted variance "
        "(Levi et al. 2022): mean |RMV - RMSE| / RMV",
    ),
    _RColumn(
        "mse_over_avg_var",
        "MSE/AvgVar",
        "mean squared error over mean predicted variance (Gruber & Buettner 2022, Table 1); "
        "1 when the variances are right on average, > 1 when too small",
    ),
    _RColumn(
        "se_var_ratio",
        "SE/Var",
        "mean of (y - mu)^2 / sigma^2 over rows (Gruber & Buettner 2022, Table 2); 1 when "
        "calibrated",
    ),
)

#: The table's help text for regression files (appended to its description).
REGRESSION_HELP = (
    "Regression files (Gaussian predictions N(mean, variance), Gruber & Buettner 2022):\n"
    "  a .csv, .npz, .parquet or .pt file whose columns/arrays are named mean (or mu,\n"
    "  y_pred, y_mean, pred_mean, prediction), var (variance, sigma2, y_var, pred_var) or\n"
    "  std (sd, sigma, stddev, y_std, pred_std), y (target, targets, y_true, label) and\n"
    "  optionally weight (sample_weight), any case (uncertainty-toolbox's y_pred, y_std,\n"
    "  y_true work as they are); other names with --mean-key, --variance-key, --std-key,\n"
    "  --targets-key, --weight-key. Such a file is detected and tabulated with the columns\n"
    + "".join(f"  {c.key}: {c.meaning}\n" for c in REGRESSION_COLUMNS)
    + "  ENCE uses --bins equal-mass bins (at most one per row). Files of both kinds in one\n"
    "  call are refused; --chunk-rows and --scheduler/--workers do not apply.\n"
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
    """Add ``--mean-key`` ... ``--weight-key`` (:data:`REGRESSION_OPTIONS`) to a parser."""
    group = parser.add_argument_group("regression files")
    for flag, (dest, _, text) in REGRESSION_OPTIONS.items():
        group.add_argument(flag, dest=dest, metavar="KEY", default=None, help=text)


def regression_keys(args: argparse.Namespace) -> dict[str, str | None]:
    """The keyword arguments of :func:`calipers.io.read_regression_file` from the options."""
    return {kw: getattr(args, dest, None) for dest, kw, _ in REGRESSION_OPTIONS.values()}


def regression_files(args: argparse.Namespace, command: str) -> bool:
    """Whether ``args.files`` are regression files (all of them); mixing kinds is an error.

    With a regression key option every file is read as a regression file;
    otherwise each is detected by its names (:func:`calipers.io.is_regression_file`).
    """
    files = [str(f) for f in args.files]
    if not files:
        return False
    given = [f for f, (dest, _, _) in REGRESSION_OPTIONS.items() if getattr(args, dest, None)]
    if given:
        return True
    kinds = [is_regression_file(f) for f in files]
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
            "every file whole, in memory (no --chunk-rows or Dask), and its files hold means, "
            "variances and targets, not probabilities and labels"
        )


_ROW = re.compile(r"\brow \d+\b")


def _checked(rf: RegressionFile) -> GaussianPredictions:
    """:func:`calipers.regression.check_gaussian` of a file, its errors naming the file."""
    try:
        return check_gaussian(**rf.as_kwargs())
    except CalibrationInputError as exc:
        where = (
            " (rows are counted from 0, the first data row being row 0)"
            if _ROW.search(str(exc))
            else ""
        )
        raise CalibrationInputError(f"{rf.path}: {exc}{where}") from None


def read_regression_models(
    args: argparse.Namespace, command: str
) -> tuple[list[tuple[str, GaussianPredictions]], list[str]]:
    """Each file read and validated, named by its stem (its path when two stems agree)."""
    _refuse_classification_options(args, command)
    paths = [Path(f) for f in args.files]
    stems = [p.stem for p in paths]
    names = [str(p) if stems.count(p.stem) > 1 else p.stem for p in paths]
    keys = regression_keys(args)
    models: list[tuple[str, GaussianPredictions]] = []
    sources: list[str] = []
    for name, path in zip(names, paths, strict=True):
        rf = read_regression_file(path, **keys)
        G = _checked(rf)
        roles = ["mean", rf.spread, "targets"] + (
            ["weights"] if rf.sample_weight is not None else []
        )
        _info(f"{path}: regression predictions ({', '.join(roles)}): {G.n_samples} rows")
        models.append((name, G))
        sources.append(f"{path}: {rf.note}; n = {G.n_samples}")
    return models, sources


def regression_row(G: GaussianPredictions, n_bins: int) -> dict[str, Any]:
    """The table's numbers for one model, from :mod:`calipers.regression`."""
    vc = variance_calibration(G, n_bins=min(n_bins, G.n_samples))
    return {
        "n": G.n_samples,
        "nll": gaussian_nll(G),
        "dss": dawid_sebastiani(G),
        "crps": crps_gaussian(G),
        "pit_ks": pit_histogram(G).ks_statistic,
        "interval_ce": interval_coverage_error(G),
        "ence": vc.ence,
        "mse_over_avg_var": vc.mse_over_avg_var,
        "se_var_ratio": vc.se_var_ratio,
    }


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
    models: Sequence[tuple[str, GaussianPredictions]], sources: list[str], n_bins: int
) -> _TextTable:
    rows = [{"model": name, **regression_row(G, n_bins)} for name, G in models]
    notes = [f"{c.header}: {c.meaning}." for c in REGRESSION_COLUMNS]
    fewer = [f"{name} ({G.n_samples})" for name, G in models if G.n_samples < n_bins]
    notes.append(
        f"ENCE bins: {n_bins} equal-mass bins of predicted variance (--bins)"
        + (f"; one bin per row for files with fewer rows: {', '.join(fewer)}" if fewer else "")
        + ". Means over rows are weighted by the weight column, when a file has one."
    )
    return _TextTable(
        title=f"calipers {__version__} regression calibration table",
        sources=sources,
        columns=[_Column(c.key, c.header, _not_tabulated) for c in REGRESSION_COLUMNS],
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


def _take(G: GaussianPredictions, idx: np.ndarray) -> GaussianPredictions:
    w = None if G.sample_weight is None else G.sample_weight[idx]
    return check_gaussian(
        G.mean[idx], variance=G.variance[idx], targets=G.targets[idx], sample_weight=w
    )


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
    test_sets: dict[str, GaussianPredictions] = {}
    cal_sets: dict[str, GaussianPredictions] = {}
    for i, (name, G) in enumerate(models):
        if args.calibration:
            cargs = argparse.Namespace(**{**vars(args), "files": [args.calibration[i]]})
            cal_sets[name] = read_regression_models(cargs, "report")[0][0][1]
            test_sets[name] = G
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
            test_sets[name] = G
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
