"""``calipers sweep``: metrics against the test-set size, the bin count, gamma, bandwidth or kernel.

``--over size`` recomputes each metric on nested random subsamples of the file
(Gruber & Buettner 2022, Figs. 1 and 3), optionally with the improvement by a
recalibration fitted on a ``--calibration`` file; ``--over n_bins``, ``gamma``,
``bandwidth`` or ``kernel`` recompute each metric at several values of that
setting with bootstrap intervals (Kirchenbauer, Oaks & Heim 2022, Fig. 7;
Chidambaram & Ge 2024, App. H). The numbers are printed as CSV; with ``--out
DIR`` they are written as ``sweep.csv`` and ``sweep.json`` with the figure
(``sweep.png`` or ``sweep.svg``).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import __version__
from ..metrics import registry
from ..validation import CalibrationInputError
from .exit_status import EXIT_OK
from .inputs import _file_models, add_input_options
from .methods import METHOD_ALIASES, _recalibrators
from .options import EPILOG, _positive_int, seed_option
from .outputs import _emit, _info

#: What ``--over`` sweeps: the metrics used without ``--metrics`` and the values
#: used without ``--values`` (Gruber & Buettner 2022 §5; Kirchenbauer, Oaks & Heim
#: 2022 App. B.2; Chidambaram & Ge 2024 App. H).
SWEEPS: dict[str, tuple[str, str]] = {
    "size": ("ece,classwise_ece,ks,rbs", ""),
    "n_bins": ("ece,ace,classwise_ece", "5,10,15,20,30,50,100"),
    "gamma": ("full_ece", "0.5,0.25,0.125,0.0625,0.03125,0.015625"),
    "bandwidth": ("cce,smece", "0.01,0.03,0.05,0.1,0.25"),
    "kernel": ("cce", "gaussian,epanechnikov"),
}


def _metrics() -> dict[str, Callable[..., Any]]:
    """Metric names on the command line -> calipers functions (the metric registry's sweep rows)."""
    return {name: registry.get(name).function for name in registry.names(sweep=True)}


def _chosen_metrics(spec: str) -> dict[str, Callable[..., Any]]:
    known = _metrics()
    if not any(word.strip() for word in spec.split(",")):
        raise CalibrationInputError(
            f"--metrics is empty; give metrics, comma-separated (known: {', '.join(known)})"
        )
    out: dict[str, Callable[..., Any]] = {}
    for word in spec.split(","):
        w = word.strip().lower()
        if w not in known:
            raise CalibrationInputError(
                f"unknown metric {word.strip()!r} in --metrics; known: {', '.join(known)}"
            )
        out[w] = known[w]
    return out


def _values(over: str, spec: str) -> list[Any]:
    words = [w.strip() for w in spec.split(",") if w.strip()]
    if not words:
        raise CalibrationInputError(f"--values is empty; give values of {over}, comma-separated")
    if over == "kernel":
        return words
    cast: Callable[[str], Any] = int if over == "n_bins" else float
    try:
        return [cast(w) for w in words]
    except ValueError:
        kind = "integers" if over == "n_bins" else "numbers"
        raise CalibrationInputError(
            f"--values for --over {over} must be {kind}, comma-separated; got {spec!r}"
        ) from None


def _sizes(spec: str | None) -> list[int] | None:
    if spec is None:
        return None
    try:
        return [int(w) for w in spec.split(",") if w.strip()]
    except ValueError:
        raise CalibrationInputError(
            f"--sizes must be integers, comma-separated; got {spec!r}"
        ) from None


def _fitted_recalibrator(args: argparse.Namespace, test_is_logits: bool) -> Any:
    if args.recalibrate is None:
        return None
    if args.calibration is None:
        raise CalibrationInputError(
            "--recalibrate needs --calibration FILE: the recalibrator is fitted there and the "
            "test file is subsampled (Gruber & Buettner 2022)"
        )
    methods = _recalibrators(args.recalibrate)
    if len(methods) != 1:
        raise CalibrationInputError(
            f"--recalibrate takes one method for a sweep; got {len(methods)} ({args.recalibrate})"
        )
    cargs = argparse.Namespace(**{**vars(args), "files": [args.calibration]})
    ((_, C),) = _file_models(cargs)[0][:1]
    cal_is_logits = C.logits is not None
    if cal_is_logits != test_is_logits:
        raise CalibrationInputError(
            f"--calibration {args.calibration} holds {'logits' if cal_is_logits else 'probabilities'}"
            f" but the test file holds {'logits' if test_is_logits else 'probabilities'}"
        )
    rec = methods[0]
    rec.fit(C.logits if cal_is_logits else C.probs, C.labels, logits=cal_is_logits)
    return rec


def _csv(rows: list[dict[str, Any]]) -> str:
    fields: list[str] = []
    for r in rows:
        for k in r:
            if k not in fields:
                fields.append(k)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return buf.getvalue()


def _cmd_sweep(args: argparse.Namespace) -> int:
    from ..inference.sweeps import parameter_sweep, test_size_sweep

    models, sources = _file_models(args)
    ((name, P),) = models[:1]
    for line in sources:
        _info(f"source: {line}")
    metrics = _chosen_metrics(SWEEPS[args.over][0] if args.metrics is None else args.metrics)
    result: Any
    if args.over == "size":
        if args.values is not None:
            raise CalibrationInputError("--over size takes --sizes, not --values")
        rec = _fitted_recalibrator(args, P.logits is not None)
        result = test_size_sweep(
            metrics,
            P,
            sizes=_sizes(args.sizes),
            n_repeats=args.repeats,
            seed=args.seed,
            recalibrator=rec,
        )
        rows, doc = result.rows(), result.to_dict()
    else:
        if args.sizes is not None or args.recalibrate is not None:
            raise CalibrationInputError(
                f"--sizes and --recalibrate apply to --over size, not --over {args.over}"
            )
        values = _values(args.over, SWEEPS[args.over][1] if args.values is None else args.values)
        result = [
            parameter_sweep(
                m,
                P,
                param=args.over,
                values=values,
                interval=not args.no_intervals,
                n_resamples=args.resamples,
                seed=args.seed,
            )
            for m in metrics.values()
        ]
        result = [replace(r, metric_name=short) for r, short in zip(result, metrics, strict=True)]
        rows = [row for r in result for row in r.rows()]
        doc = {"sweeps": [r.to_dict() for r in result]}
    doc = {"calipers": __version__, "file": name, "over": args.over, **doc}
    text = _csv(rows)
    _emit(text)
    if args.out is not None:
        from ..diagrams import sweep_diagram
        from ..diagrams._style import plain_text
        from ..io.output import write_folder_atomic

        fig = sweep_diagram(result, title=plain_text(f"{name}: sweep over {args.over}"))
        buf = io.BytesIO()
        fig.savefig(buf, format=args.format, dpi=150)
        import matplotlib.pyplot as plt

        plt.close(fig)
        files: dict[str, str | bytes] = {
            "sweep.csv": text,
            "sweep.json": json.dumps(doc, indent=2) + "\n",
            f"sweep.{args.format}": buf.getvalue(),
        }
        written = write_folder_atomic(Path(args.out), files, force=args.force)
        _info(f"calipers: wrote {len(written)} files to {args.out}/")
    return EXIT_OK


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``sweep`` subcommand to the subparsers ``sub``."""
    defaults = "\n".join(
        f"  --over {k:<9} metrics {m}" + (f"; values {v}" if v else "; sizes 100 .. n, log-spaced")
        for k, (m, v) in SWEEPS.items()
    )
    sw = sub.add_parser(
        "sweep",
        help="metrics vs test-set size, bins, gamma, bandwidth or kernel",
        description="Recompute metrics of one prediction file along one axis: nested random "
        "subsamples of growing size (Gruber & Buettner 2022, Figs. 1 and 3), or several "
        "values of the bin count, the k-d tree bin fraction gamma, the kernel bandwidth or "
        "the kernel, with bootstrap intervals (Kirchenbauer, Oaks & Heim 2022, Fig. 7; "
        "Chidambaram & Ge 2024, App. H). Prints CSV; --out DIR also writes sweep.json and "
        "the figure.\n\ndefaults:\n" + defaults,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sw.add_argument("files", nargs=1, metavar="FILE", help="prediction file")
    add_input_options(sw)
    sw.add_argument("--over", choices=tuple(SWEEPS), default="size", help="what to sweep")
    sw.add_argument(
        "--metrics",
        metavar="NAMES",
        default=None,
        help="comma-separated metrics: " + ", ".join(_metrics()),
    )
    sw.add_argument(
        "--values", metavar="V1,V2,...", default=None, help="values of the swept parameter"
    )
    sw.add_argument(
        "--sizes", metavar="N1,N2,...", default=None, help="subsample sizes (--over size)"
    )
    sw.add_argument(
        "--repeats",
        type=_positive_int,
        default=20,
        metavar="R",
        help="nested subsamples per size (--over size; default 20)",
    )
    sw.add_argument(
        "--resamples",
        type=_positive_int,
        default=200,
        metavar="B",
        help="bootstrap resamples per value (default 200; Kirchenbauer, Oaks & Heim 2022 use 1000)",
    )
    sw.add_argument("--no-intervals", action="store_true", help="skip the bootstrap intervals")
    sw.add_argument("--seed", type=seed_option, default=0, help="random seed (default 0)")
    sw.add_argument(
        "--calibration",
        metavar="FILE",
        default=None,
        help="--over size: fit --recalibrate here and show its improvement on the test file",
    )
    sw.add_argument(
        "--recalibrate",
        metavar="METHOD",
        default=None,
        help="one recalibration method (" + ", ".join(METHOD_ALIASES) + ")",
    )
    sw.add_argument("--out", metavar="DIR", default=None, help="write sweep.csv, .json, figure")
    sw.add_argument("--format", choices=("png", "svg"), default="png", help="figure format")
    sw.add_argument(
        "--force", action="store_true", help="replace an existing --out folder that is not empty"
    )
    sw.set_defaults(func=_cmd_sweep)
    return sw
