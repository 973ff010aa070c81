"""``calipers diagram``: one diagram of one prediction file, as PNG, SVG or PDF.

Reliability, smooth reliability, calibration-sharpness, class-wise grid,
top-k bars or the clinical calibration diagram (:mod:`calipers.diagrams`) of
classification predictions; PIT
histogram, quantile reliability or variance-error diagram of a regression file
(a Gaussian, quantiles, a central interval or samples per row); written
atomically to ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..validation import CalibrationInputError
from .exit_status import EXIT_OK
from .inputs import _file_models, add_input_options
from .options import EPILOG, _positive_int
from .outputs import _info, write_atomic
from .regression import add_regression_options

#: The diagrams of regression files (every kind of regression prediction).
REGRESSION_KINDS = ("pit", "quantile", "variance", "t-reliability")
#: The kinds of regression prediction each regression diagram draws.
_REGRESSION_DIAGRAM_INPUTS = {
    "pit": ("gaussian", "quantiles", "samples"),
    "quantile": ("gaussian", "quantiles", "interval", "samples"),
    "variance": ("gaussian", "samples"),
    "t-reliability": ("gaussian", "quantiles", "samples"),
}
#: The diagrams of classification files.
CLASSIFICATION_KINDS = ("reliability", "smooth", "sharpness", "classwise", "top-k", "clinical")


def _regression_figure(args: argparse.Namespace) -> Any:
    from .. import diagrams
    from ..diagrams._style import plain_text
    from .regression import read_regression_models

    ((name, M),) = read_regression_models(args, "diagram")[0]
    name = plain_text(name)  # a file name, not a formula
    # a Gaussian file is drawn from its arrays, as before; every other kind from its distribution
    X = M.gaussian if M.gaussian is not None else M.P
    allowed = _REGRESSION_DIAGRAM_INPUTS[args.kind]
    if M.kind not in allowed:
        why = {
            "pit": "a central interval states two quantiles, not a distribution function",
            "variance": "quantiles and intervals state no predicted variance",
        }[args.kind]
        raise CalibrationInputError(
            f"{args.files[0]}: the diagram '{args.kind}' needs "
            f"{' or '.join(allowed)} predictions and this file holds {M.kind} ({why}); "
            "its diagrams are "
            + ", ".join(k for k in REGRESSION_KINDS if M.kind in _REGRESSION_DIAGRAM_INPUTS[k])
        )
    if args.kind == "pit":
        return diagrams.pit_histogram_diagram(X, n_bins=min(args.bins, 10), title=name)
    if args.kind == "quantile":
        levels = None if M.kind != "interval" else [M.level]
        return diagrams.quantile_reliability_diagram(X, levels=levels, title=name)
    return diagrams.variance_error_diagram(X, n_bins=min(args.bins, M.n_samples), title=name)


def _t_reliability_figure(args: argparse.Namespace) -> Any:
    """The T-reliability diagram of point forecasts (Gneiting & Resin 2023): a file of
    forecasts and targets, or the functional of a file of predictive distributions."""
    from .. import diagrams
    from ..diagrams._style import plain_text
    from ..io import predictive_file_kinds, read_point_forecast_file
    from .regression import read_regression_models, regression_keys

    path = str(args.files[0])
    functional = args.functional
    level = args.level
    if functional == "median":
        level = 0.5 if level is None else level
    if functional in ("quantile", "expectile") and level is None:
        raise CalibrationInputError(f"--functional {functional} needs --level (in (0, 1))")
    given = [k for k, v in regression_keys(args).items() if v is not None and k != "targets_key"]
    if given or predictive_file_kinds(path):
        ((name, M),) = read_regression_models(args, "diagram")[0]
        if M.kind not in _REGRESSION_DIAGRAM_INPUTS["t-reliability"]:
            raise CalibrationInputError(
                f"{path}: a central interval states no mean and two quantiles only; the "
                "T-reliability diagram needs a point forecast, a Gaussian, quantiles or samples"
            )
        d, P = M.P.distribution, M.P
        if functional == "mean":
            z = d.mean()
            if z is None:
                raise CalibrationInputError(
                    f"{path}: {M.kind} predictions state no mean; draw a quantile's "
                    "T-reliability diagram with --functional quantile --level 0.5 (or median)"
                )
        elif functional == "expectile":
            raise CalibrationInputError(
                f"{path}: the expectile of {M.kind} predictions is not computed here; give a "
                "file of expectile forecasts (--forecast-key) or --functional mean/quantile"
            )
        else:
            z = d.quantile(float(level))
        y, w = P.targets, P.sample_weight
        _info(f"{path}: the {functional} of each row's {M.kind} prediction as its point forecast")
    else:
        z, y, w, note = read_point_forecast_file(
            path,
            forecast_key=args.forecast_key,
            targets_key=args.targets_key,
            weight_key=args.weight_key,
        )
        name = Path(path).stem
        _info(f"{path}: point forecasts ({note}): {y.shape[0]} rows")
    return diagrams.t_reliability_diagram(
        z,
        y,
        functional=functional,
        level=None if functional == "mean" else level,
        sample_weight=w,
        title=plain_text(name),
    )


def _figure(args: argparse.Namespace) -> Any:
    from .. import diagrams
    from ..diagrams._style import plain_text
    from .regression import regression_files

    if args.kind == "t-reliability":
        return _t_reliability_figure(args)
    regression = regression_files(args, "diagram")
    if regression != (args.kind in REGRESSION_KINDS):
        allowed = REGRESSION_KINDS if regression else CLASSIFICATION_KINDS
        raise CalibrationInputError(
            f"{args.files[0]}: the diagram '{args.kind}' is for "
            + ("classification" if regression else "regression")
            + " predictions, and this file holds "
            + ("regression predictions" if regression else "classification predictions")
            + f"; its diagrams are {', '.join(allowed)}"
        )
    if regression:
        return _regression_figure(args)
    if args.class_index is not None and args.kind != "clinical":
        raise CalibrationInputError(
            f"--class-index is for the clinical diagram; the diagram '{args.kind}' draws every class"
        )
    models, _ = _file_models(args)
    ((name, P),) = models[:1]
    name = plain_text(name)  # a file name, not a formula
    kinds = {
        "reliability": lambda: diagrams.reliability_diagram(P, n_bins=args.bins, title=name),
        "smooth": lambda: diagrams.smooth_reliability_diagram(P, title=name),
        "sharpness": lambda: diagrams.calibration_sharpness_diagram(
            P, bandwidth=args.bandwidth, title=name
        ),
        "classwise": lambda: diagrams.classwise_reliability_grid(P, n_bins=args.bins),
        "top-k": lambda: diagrams.top_k_bar_chart(P),
        "clinical": lambda: diagrams.clinical_calibration_diagram(
            P, class_index=args.class_index, title=name
        ),
    }
    return kinds[args.kind]()


def _cmd_diagram(args: argparse.Namespace) -> int:
    fig = _figure(args)
    out = Path(args.out)
    fmt = out.suffix.lstrip(".").lower() or "png"
    if fmt not in ("png", "svg", "pdf"):
        raise CalibrationInputError(f"--out must end in .png, .svg or .pdf; got '{out}'")
    import io as _io

    buf = _io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=200)
    write_atomic(out, buf.getvalue(), force=args.force)
    _info(f"calipers: wrote {out}")
    return EXIT_OK


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``diagram`` subcommand to the subparsers ``sub``."""
    dia = sub.add_parser(
        "diagram",
        help="draw one diagram of one prediction file",
        description="Draw one diagram (reliability, smooth, sharpness, classwise, top-k; "
        "clinical: the val.prob-style plot of the calibration hierarchy of Van Calster et al. "
        "2016, flexible curve with band, risk groups, risks by outcome, intercept, slope, "
        "C-statistic, Brier, ICI, E90, Emax) of a prediction file, or of a regression file (pit: PIT histogram; quantile: coverage of "
        "central intervals; variance: RMSE against root mean predicted variance per bin; "
        "t-reliability: the isotonic recalibrated point forecast against the forecast, "
        "Gneiting & Resin 2023, of a file of point forecasts or of a distribution's mean or "
        "quantile), "
        "and write it as PNG, SVG or PDF (from the --out suffix).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    dia.add_argument("kind", choices=CLASSIFICATION_KINDS + REGRESSION_KINDS)
    dia.add_argument("files", nargs=1, metavar="FILE", help="prediction file")
    add_input_options(dia)
    add_regression_options(dia)
    dia.add_argument(
        "--bins",
        type=_positive_int,
        default=15,
        metavar="N",
        help="bins of the reliability diagram; of predicted variance in the variance "
        "diagram; the PIT histogram takes at most 10 (default 15)",
    )
    dia.add_argument(
        "--functional",
        choices=("mean", "median", "quantile", "expectile"),
        default="mean",
        help="t-reliability: the functional the point forecasts state (default mean); of a "
        "file of predictive distributions, their mean or --level quantile is drawn",
    )
    dia.add_argument(
        "--level",
        type=float,
        default=None,
        metavar="ALPHA",
        help="t-reliability: the quantile or expectile level in (0, 1)",
    )
    dia.add_argument(
        "--forecast-key",
        default=None,
        metavar="KEY",
        help="t-reliability: the column of point forecasts (default: forecast, y_pred, "
        "prediction, pred, y_hat, mean or median)",
    )
    dia.add_argument(
        "--class-index",
        type=int,
        default=None,
        metavar="K",
        help="clinical: the column drawn one-vs-rest for a file of more than two classes "
        "(default: the positive class of a binary file)",
    )
    dia.add_argument(
        "--bandwidth",
        type=float,
        default=0.05,
        metavar="SIGMA",
        help="kernel bandwidth of the calibration-sharpness diagram (default 0.05)",
    )
    dia.add_argument(
        "--out",
        metavar="FILE",
        default="diagram.png",
        help="output file .png/.svg/.pdf (default diagram.png)",
    )
    dia.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --out file (without it an existing one is refused)",
    )
    dia.set_defaults(func=_cmd_diagram)
    return dia
