"""The ``calipers`` command-line program (also ``python -m calipers``).

Subcommands
-----------
``calipers table [FILE ...]``
    The standard table for one or more prediction files (one row per file),
    or, with no file, for the three models of the embedded default
    (:func:`calipers.datasets.load_default_predictions`, all rows): accuracy,
    NLL, Brier score, ECE, ACE, SCE, TACE, MCE, RMSCE, class-wise ECE and
    bin-averaged ECE, as text, Markdown, JSON or CSV.
``calipers demo [--out DIR]``
    The table of the embedded default; with ``--out DIR`` also writes
    ``DIR/table.md`` and ``DIR/table.json``.

The program is thin: files are read by :func:`calipers.io.read_predictions`,
validated once by :func:`calipers.check_predictions`, and every number comes
from calipers' public metric functions.

Exit status: 0 success; 1 unexpected error (including an output file that
cannot be written); 2 usage error; 3 bad input file or invalid predictions
(the message is printed as ``calipers: error: ...``, without a traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import os
import signal
import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__
from .io import PredictionFileError, read_predictions
from .metrics import (
    ace,
    bin_averaged_ece,
    classwise_ece,
    ece,
    mce,
    rmsce,
    sce,
    tace,
)
from .output import OutputError, OutputExistsError, terminate_on_sigterm, write_folder_atomic
from .output import write_atomic as _write_atomic
from .scores import accuracy, brier, nll
from .validation import CalibrationInputError, Predictions, check_predictions

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_UNEXPECTED", "EXIT_USAGE", "EXIT_INPUT"]

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_INPUT = 3

FORMATS = ("text", "markdown", "json", "csv")
_SUFFIX_FORMAT = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".csv": "csv"}

EPILOG = """\
examples:
  calipers demo                                  the table of the embedded default
  calipers demo --out demo/                      the whole job; HTML report etc. in demo/
  calipers table                                 the same table (no file: embedded default)
  calipers table preds.npz                       arrays 'probs' (or 'logits') and 'labels'
  calipers table preds.csv --format markdown     CSV with a header: label,p0,p1,...
  calipers table logits.npy --logits --labels y.npy
  calipers table a.npz b.npz --out table.json    one row per file; format from the suffix
  calipers table preds.npz --nll-clip 1e-15      also the NLL with p_y clipped to [eps, 1-eps]
  calipers report val.npz --recalibrate ts,hb,ir --out rep/   split, recalibrate, HTML report
  calipers report test.npz --calibration val.npz --recalibrate ts --format json
  calipers diagram reliability preds.npz --out reliability.svg

exit status: 0 ok, 1 unexpected error, 2 usage error, 3 bad input file or invalid predictions
"""

TABLE_DESCRIPTION = """\
Print the standard calibration table: accuracy, NLL, Brier score, ECE, ACE, SCE,
TACE, MCE, RMSCE, class-wise ECE and bin-averaged ECE, one row per model.

With no FILE, the embedded default is used: out-of-fold predictions of three
scikit-learn models on the digits data set (all 1797 rows).

Prediction files (never unpickled):
  .npz  arrays named probs/probabilities/p/y_prob or logits/scores, and
        labels/y/targets/y_true (any case); choose with --probs-key,
        --logits-key, --labels-key when the names differ or are ambiguous
  .npy  one (n, k) array of probabilities (or logits with --logits);
        labels from --labels FILE
  .csv  header row required: a 'label' (or 'y') column and one column per
        class (p0,p1,... or class names; logit_0,logit_1,... for logits)

Nothing is clipped or renormalised unless asked (--clip, --renormalize,
--nll-clip);
an NLL of inf is printed as inf, with a note saying why.
"""


REPORT_DESCRIPTION = """\
The standard report (Chidambaram & Ge (2024) §6: accuracy, proper scores and calibration errors
together): accuracy, NLL, Brier, RBS, ECE, ACE, SmoothECE, kernel CE_KL and CE_2^2,
refinement, and the ECE's p-value under a calibrated null, one row per model (and per
recalibration method with --recalibrate). Flags the Chidambaram & Ge (2024) pitfall (a calibration
error that falls while the proper score rises) by itself.

Recalibration methods are fitted on --calibration files, or on a stratified, seeded
split of each FILE (--split), and evaluated on the rest.

Prediction files (never unpickled): .npz, .npy, .csv, .parquet (needs pyarrow),
.pt/.pth (torch, weights only); see 'calipers table --help' for their layouts.
"""


#: An output file could not be written (or would replace something without --force).
_OutputError = OutputError


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class _Column:
    key: str  # JSON / CSV name
    header: str  # text / Markdown header
    compute: Callable[[Predictions, int], Any]


def _columns(nll_clip: float | None) -> list[_Column]:
    cols = [
        _Column("accuracy", "accuracy", lambda P, b: accuracy(P, None)),
        _Column("nll", "NLL", lambda P, b: nll(P, None)),
    ]
    if nll_clip is not None:
        cols.append(
            _Column("nll_clipped", f"NLL@{nll_clip:g}", lambda P, b: nll(P, None, clip=nll_clip))
        )
    cols += [
        _Column("brier", "Brier", lambda P, b: brier(P, None)),
        _Column("ece", "ECE", lambda P, b: ece(P, None, n_bins=b)),
        _Column("ace", "ACE", lambda P, b: ace(P, None, n_bins=b)),
        _Column("sce", "SCE", lambda P, b: sce(P, None, n_bins=b)),
        _Column("tace", "TACE", lambda P, b: tace(P, None, n_bins=b)),
        _Column("mce", "MCE", lambda P, b: mce(P, None, n_bins=b)),
        _Column("rmsce", "RMSCE", lambda P, b: rmsce(P, None, n_bins=b)),
        _Column("classwise_ece", "classwise ECE", lambda P, b: classwise_ece(P, None, n_bins=b)),
        _Column(
            "bin_averaged_ece", "bin-avg ECE", lambda P, b: bin_averaged_ece(P, None, n_bins=b)
        ),
    ]
    return cols


@dataclass
class _Table:
    title: str
    sources: list[str]
    columns: list[_Column]
    rows: list[dict[str, Any]]
    notes: list[str]
    settings: dict[str, Any]


def _zero_true_class_rows(P: Predictions) -> int:
    """Rows whose true class has probability exactly 0 (the cause of an infinite NLL)."""
    probs = np.asarray(P.full_probs())
    labels = np.asarray(P.labels)
    return int(np.count_nonzero(np.take_along_axis(probs, labels[:, None], axis=1) == 0))


def _build_table(
    models: list[tuple[str, Predictions]],
    sources: list[str],
    n_bins: int,
    nll_clip: float | None,
    extra_notes: Sequence[str] = (),
) -> _Table:
    columns = _columns(nll_clip)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for name, P in models:
        row: dict[str, Any] = {"model": name, "n": P.n_samples, "n_classes": P.n_classes}
        for col in columns:
            row[col.key] = float(col.compute(P, n_bins))
        rows.append(row)
        if math.isinf(row["nll"]):
            z = _zero_true_class_rows(P)
            clip_hint = (
                f"; the NLL@{nll_clip:g} column clips p_y to [{nll_clip:g}, 1 - {nll_clip:g}]"
                if nll_clip is not None
                else "; add --nll-clip 1e-15 to also report the NLL with p_y clipped"
            )
            notes.append(
                f"NLL is inf for {name}: {z} of {P.n_samples} rows give probability 0 to the "
                "true class, and -log 0 = inf. This is the exact value, not an error: calipers "
                f"never clips silently{clip_hint}."
            )
    notes.extend(extra_notes)
    any_binary = any(P.binary for _, P in models)
    any_multi = any(not P.binary for _, P in models)
    lens_text = (
        "P(y = 1) against y for 1-D binary input, the top label (confidence against "
        "correctness) for (n, k) input"
        if any_binary and any_multi
        else "P(y = 1) against y (1-D binary input: the positive class, as scikit-learn, "
        "torchmetrics, relplot and netcal read it)"
        if any_binary
        else "top label"
    )
    notes.append(
        f"ECE, MCE, bin-avg ECE: {lens_text}, {n_bins} equal-width bins (lo, hi]; ECE weights "
        "bins by size, MCE takes the largest gap, bin-avg ECE the plain mean over non-empty bins. "
        f"RMSCE: same lens, {n_bins} equal-mass bins, root mean square. ACE, TACE: class-wise, "
        f"{n_bins} equal-mass ranges over entries p > 0 (ACE) or p > 0.01 (TACE). SCE: "
        f"class-wise, {n_bins} equal-width bins, p > 0. classwise ECE: {n_bins} equal-width "
        "bins per class, mean over classes. Brier: sum over classes"
        + (" ((p - y)^2 for binary P(y = 1) input)" if any_binary else "")
        + ". NLL: nats. Arg-max ties go to the lowest class index."
    )
    settings = {
        "n_bins": n_bins,
        "nll_clip": nll_clip,
        "tace_threshold": 0.01,
        "brier_reduction": "sum",
        "edge_rule": "(lo, hi]",
    }
    return _Table(
        title=f"calipers {__version__} calibration table",
        sources=sources,
        columns=columns,
        rows=rows,
        notes=notes,
        settings=settings,
    )


# --------------------------------------------------------------------------- formatting


def _fmt(value: Any, places: int = 4) -> str:
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.{places}f}"
    return str(value)


def _cells(table: _Table) -> tuple[list[str], list[list[str]]]:
    headers = ["model", "n"] + [c.header for c in table.columns]
    body = [
        [str(r["model"]), _fmt(r["n"])] + [_fmt(r[c.key]) for c in table.columns]
        for r in table.rows
    ]
    return headers, body


def _format_text(table: _Table) -> str:
    headers, body = _cells(table)
    widths = [max(len(h), *(len(row[j]) for row in body)) for j, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        parts = [cells[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [table.title]
    out += [textwrap.fill(f"source: {s}", width=100, subsequent_indent="  ") for s in table.sources]
    out.append("")
    out.append(line(headers))
    out.append(line(["-" * w for w in widths]))
    out += [line(row) for row in body]
    out.append("")
    for note in table.notes:
        out.append(textwrap.fill(note, width=100, initial_indent="* ", subsequent_indent="  "))
    return "\n".join(out) + "\n"


def _format_markdown(table: _Table) -> str:
    headers, body = _cells(table)
    out = [f"**{table.title}**", ""]
    out += [f"Source: {s}  " for s in table.sources]
    out[-1] = out[-1].rstrip()
    out.append("")
    out.append("| " + " | ".join(headers) + " |")
    out.append("| " + " | ".join(["---"] + ["---:"] * (len(headers) - 1)) + " |")
    out += ["| " + " | ".join(row) + " |" for row in body]
    out.append("")
    out += [f"- {n}" for n in table.notes]
    return "\n".join(out) + "\n"


def _json_value(value: Any) -> Any:
    """JSON has no infinity or NaN: such values are written as the strings "inf", "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return _fmt(value)
    return value


def _format_json(table: _Table) -> str:
    doc = {
        "calipers_version": __version__,
        "title": table.title,
        "sources": table.sources,
        "settings": table.settings,
        "columns": ["model", "n", "n_classes"] + [c.key for c in table.columns],
        "models": [{k: _json_value(v) for k, v in r.items()} for r in table.rows],
        "notes": table.notes,
    }
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def _format_csv(table: _Table) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    keys = ["model", "n", "n_classes"] + [c.key for c in table.columns]
    writer.writerow(keys)
    for r in table.rows:
        writer.writerow([repr(r[k]) if isinstance(r[k], float) else r[k] for k in keys])
    return buf.getvalue()


_FORMATTERS: dict[str, Callable[[_Table], str]] = {
    "text": _format_text,
    "markdown": _format_markdown,
    "json": _format_json,
    "csv": _format_csv,
}


# --------------------------------------------------------------------------- output


def write_atomic(path: str | Path, text: str | bytes, *, force: bool = True) -> None:
    """Write ``text`` (or bytes) to ``path`` atomically; see :func:`calipers.output.write_atomic`."""
    _write_atomic(path, text, force=force)


def _emit(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _info(text: str) -> None:
    print(text, file=sys.stderr)


# --------------------------------------------------------------------------- commands


def _default_models(renormalize: bool) -> tuple[list[tuple[str, Predictions]], list[str]]:
    from .datasets import load_default_predictions

    d = load_default_predictions()
    models = [
        (name, check_predictions(d.probs[name], d.labels, renormalize=renormalize))
        for name in d.model_names
    ]
    n, k = d.probs[d.model_names[0]].shape
    source = (
        f"embedded default, as no prediction file was given: out-of-fold predictions of "
        f"{len(models)} scikit-learn models on the digits data set, all {n} rows, {k} classes "
        "(calipers.datasets.load_default_predictions)"
    )
    return models, [source]


def _file_models(args: argparse.Namespace) -> tuple[list[tuple[str, Predictions]], list[str]]:
    paths = [Path(f) for f in args.files]
    stems = [p.stem for p in paths]
    names = [str(p) if stems.count(p.stem) > 1 else p.stem for p in paths]
    models: list[tuple[str, Predictions]] = []
    sources: list[str] = []
    for name, path in zip(names, paths, strict=True):
        pf = read_predictions(
            path,
            probs_key=args.probs_key,
            logits_key=args.logits_key,
            labels_key=args.labels_key,
            labels_path=args.labels,
            logits=True if args.logits else (False if getattr(args, "probs", False) else None),
        )
        for flag, given in (("--renormalize", args.renormalize), ("--clip", args.clip)):
            if given and pf.kind == "logits":
                raise PredictionFileError(
                    f"{flag} applies to probabilities, but {pf.source} holds logits ({pf.note})"
                )
        try:
            P = pf.check(renormalize=args.renormalize, clip=args.clip, sum_tol=args.sum_tol)
        except CalibrationInputError as exc:
            raise CalibrationInputError(f"{pf.source}: {exc}") from None
        models.append((name, P))
        sources.append(f"{pf.source}: {pf.note}; n = {P.n_samples}, {P.n_classes} classes")
    return models, sources


def _resolve_format(args: argparse.Namespace) -> str:
    if args.format is not None:
        return str(args.format)
    if args.out is not None:
        return _SUFFIX_FORMAT.get(Path(args.out).suffix.lower(), "text")
    return "text"


def _cmd_table(args: argparse.Namespace) -> int:
    if args.files:
        models, sources = _file_models(args)
    else:
        models, sources = _default_models(args.renormalize)
    extra = ["rows were renormalised to sum to 1 (--renormalize)"] if args.renormalize else []
    if args.clip:
        extra.append("probabilities were clipped into [0, 1] (--clip)")
    table = _build_table(models, sources, args.bins, args.nll_clip, extra)
    fmt = _resolve_format(args)
    text = _FORMATTERS[fmt](table)
    if fmt == "csv":  # keep the CSV clean: provenance and notes go to stderr
        for line in [table.title, *(f"source: {s}" for s in sources), *table.notes]:
            _info(line)
    if args.out is None:
        _emit(text)
    else:
        write_atomic(args.out, text, force=args.force)
        _info(f"calipers: wrote {args.out} ({fmt})")
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    models, sources = _default_models(False)
    table = _build_table(models, sources, args.bins, args.nll_clip)
    _emit(_format_text(table))
    out = Path(args.out)
    files: dict[str, str | bytes] = {
        name: _FORMATTERS[fmt](table)
        for name, fmt in (("table.md", "markdown"), ("table.json", "json"))
    }
    if args.table_only:
        write_folder_atomic(out, files, force=args.force)
        _info(f"calipers: wrote {out / 'table.md'} and {out / 'table.json'}")
        return EXIT_OK
    from .datasets import load_default_predictions

    d = load_default_predictions()
    cal = d.is_calibration
    test_sets: dict[str, Any] = {}
    cal_sets: dict[str, Any] = {}
    is_logits: dict[str, bool] = {}
    for name in d.model_names:
        scores = d.logits.get(name, d.probs[name])
        is_logits[name] = name in d.logits
        test_sets[name] = (scores[~cal], d.labels[~cal])
        cal_sets[name] = (scores[cal], d.labels[cal])
    rep = _run_report(
        test_sets, is_logits, cal_sets, _recalibrators(args.recalibrate), args, figures=True
    )
    written = write_folder_atomic(out, {**files, **rep.files()}, force=args.force)
    _info(
        f"calipers: fitted {len(_recalibrators(args.recalibrate))} recalibration methods on the "
        f"calibration half and evaluated them on the test half; wrote {len(written)} files "
        f"to {out}/ (open {out / 'report.html'})"
    )
    return EXIT_OK


#: Short names of the recalibration methods on the command line.
METHOD_ALIASES = {
    "ts": "TemperatureScaling",
    "vs": "VectorScaling",
    "ms": "MatrixScaling",
    "bcts": "BiasCorrectedTemperatureScaling",
    "ets": "EnsembleTemperatureScaling",
    "diag": "MonotoneLogitMap",
    "platt": "PlattScaling",
    "beta": "BetaCalibration",
    "hb": "HistogramBinning",
    "ir": "IsotonicRegression",
    "mrr": "MeanReplacement",
}
DEFAULT_METHODS = "ts,ets,hb,ir,mrr"


def _recalibrators(spec: str) -> list[Any]:
    import calipers.recalibration as rmod
    from calipers.recalibration.base import _REGISTRY

    del rmod  # imported for its side effect: every method registers itself
    if not spec or spec == "none":
        return []
    names = []
    lower = {k.lower(): k for k in _REGISTRY}
    for word in spec.split(","):
        w = word.strip()
        key = METHOD_ALIASES.get(w.lower(), lower.get(w.lower()))
        if key is None or key not in _REGISTRY:
            known = ", ".join(sorted(METHOD_ALIASES))
            raise CalibrationInputError(
                f"unknown recalibration method {w!r}; use short names ({known}) or class names"
            )
        names.append(key)
    return [_REGISTRY[k]() for k in names]


def _run_report(
    test_sets: dict[str, Any],
    is_logits: dict[str, bool],
    cal_sets: dict[str, Any] | None,
    recalibrators: list[Any],
    args: argparse.Namespace,
    figures: bool,
) -> Any:
    from .report import report

    return report(
        test_sets,
        logits=is_logits,
        calibration=cal_sets,
        recalibrators=recalibrators,
        n_bootstrap=getattr(args, "bootstrap", 0),
        null_resamples=getattr(args, "null_resamples", 200),
        seed=getattr(args, "seed", 0),
        figures=figures,
        progress=True,
    )


def _save_report(rep: Any, out: Path, force: bool) -> list[str]:
    return list(rep.save(out, force=force))


def _cmd_report(args: argparse.Namespace) -> int:
    models, sources = _file_models(args)
    if args.calibration and len(args.calibration) != len(models):
        raise CalibrationInputError(
            f"--calibration needs one file per prediction file ({len(models)}); "
            f"got {len(args.calibration)}"
        )
    methods = _recalibrators(args.recalibrate)
    test_sets: dict[str, Any] = {}
    cal_sets: dict[str, Any] | None = {} if (methods or args.calibration) else None
    is_logits: dict[str, bool] = {}
    for i, (name, P) in enumerate(models):
        logit_input = P.logits is not None
        scores: Any = P.logits if logit_input else P.probs
        is_logits[name] = logit_input
        if args.calibration:
            cargs = argparse.Namespace(**{**vars(args), "files": [args.calibration[i]]})
            cmodels, _ = _file_models(cargs)
            C = cmodels[0][1]
            assert cal_sets is not None
            cal_sets[name] = (C.logits if logit_input else C.probs, C.labels)
            test_sets[name] = (scores, P.labels)
        elif methods:
            from .recalibration import calibration_split_indices

            ci, ti = calibration_split_indices(
                P.labels, calibration_size=args.split, seed=args.seed
            )
            assert cal_sets is not None
            cal_sets[name] = (scores[ci], P.labels[ci])
            test_sets[name] = (scores[ti], P.labels[ti])
            sources.append(
                f"{name}: split {len(ci)} calibration / {len(ti)} test rows "
                f"(stratified, seed {args.seed})"
            )
        else:
            test_sets[name] = P  # already validated: no second softmax of the logits
    for line in sources:
        _info(f"source: {line}")
    rep = _run_report(test_sets, is_logits, cal_sets, methods, args, figures=args.out is not None)
    fmt = args.format or "markdown"
    text = {
        "markdown": rep.to_markdown,
        "json": rep.to_json,
        "latex": rep.to_latex,
        "html": rep.to_html,
    }[fmt]()
    _emit(text)
    if args.out is not None:
        written = _save_report(rep, Path(args.out), args.force)
        _info(f"calipers: wrote {len(written)} files to {args.out}/")
    return EXIT_OK


def _cmd_diagram(args: argparse.Namespace) -> int:
    from . import diagrams

    models, _ = _file_models(args)
    ((name, P),) = models[:1]
    kinds = {
        "reliability": lambda: diagrams.reliability_diagram(P, n_bins=args.bins, title=name),
        "smooth": lambda: diagrams.smooth_reliability_diagram(P, title=name),
        "sharpness": lambda: diagrams.calibration_sharpness_diagram(
            P, bandwidth=args.bandwidth, title=name
        ),
        "classwise": lambda: diagrams.classwise_reliability_grid(P, n_bins=args.bins),
        "top-k": lambda: diagrams.top_k_bar_chart(P),
    }
    fig = kinds[args.kind]()
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


# --------------------------------------------------------------------------- parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _clip_eps(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 1e-15, got {text!r}") from None
    if not 0 < value < 0.5:
        raise argparse.ArgumentTypeError(f"EPS must be in (0, 0.5), got {text}")
    return value


def _add_file_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--logits", action="store_true", help="the predictions are logits")
    p.add_argument("--probs", action="store_true", help="the predictions are probabilities")
    p.add_argument("--labels", metavar="FILE", default=None, help="labels file")
    p.add_argument("--probs-key", metavar="KEY", default=None, help="array of probabilities")
    p.add_argument("--logits-key", metavar="KEY", default=None, help="array of logits")
    p.add_argument("--labels-key", metavar="KEY", default=None, help="array of labels")
    p.set_defaults(renormalize=False, clip=False, sum_tol=None)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--bins",
        type=_positive_int,
        default=15,
        metavar="N",
        help="number of bins of every binned metric (default: 15)",
    )
    p.add_argument(
        "--nll-clip",
        type=_clip_eps,
        default=None,
        metavar="EPS",
        help="also report the NLL with the true-class probability clipped to "
        "[EPS, 1 - EPS] (e.g. 1e-15, as Kull et al. 2019); the exact NLL is always shown",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``calipers`` program."""
    parser = argparse.ArgumentParser(
        prog="calipers",
        description="Measure the calibration of probabilistic predictions.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"calipers {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    table = sub.add_parser(
        "table",
        help="the standard calibration table for prediction files (or the embedded default)",
        description=TABLE_DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    table.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="prediction files (.npz, .npy, .csv); one row per file. None: the embedded default",
    )
    _add_common(table)
    table.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="output format (default: from the --out suffix .json/.md/.csv, else text)",
    )
    table.add_argument(
        "--out", metavar="FILE", default=None, help="write to FILE (atomically) instead of stdout"
    )
    table.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --out file (without it an existing one is refused)",
    )
    table.add_argument(
        "--logits", action="store_true", help="the predictions are logits (softmax is applied)"
    )
    table.add_argument(
        "--labels", metavar="FILE", default=None, help="labels file (.npy, .npz, .csv, .txt)"
    )
    table.add_argument(
        "--probs-key", metavar="KEY", default=None, help=".npz array of probabilities"
    )
    table.add_argument("--logits-key", metavar="KEY", default=None, help=".npz array of logits")
    table.add_argument("--labels-key", metavar="KEY", default=None, help=".npz array of labels")
    table.add_argument(
        "--renormalize",
        action="store_true",
        help="divide each probability row by its sum (otherwise rows must sum to 1)",
    )
    table.add_argument(
        "--clip",
        action="store_true",
        help="clip probabilities into [0, 1] (for tiny rounding errors in a file)",
    )
    table.add_argument(
        "--sum-tol",
        type=float,
        default=None,
        metavar="TOL",
        help="tolerance on |row sum - 1| (default: max(1e-4, k * machine epsilon))",
    )
    table.set_defaults(func=_cmd_table)

    demo = sub.add_parser(
        "demo",
        help="the whole job on the embedded default: table, recalibration, HTML report, figures",
        description="Run the whole job on the embedded default (out-of-fold predictions of "
        "three scikit-learn models on the digits data set): print the calibration table, fit "
        "recalibration methods on the calibration half, evaluate them on the test half and "
        "write report.html (self-contained), report.json, report.md, report.tex, figures/*.png, "
        "table.md and table.json into --out.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_common(demo)
    demo.add_argument(
        "--out",
        metavar="DIR",
        default="calipers-demo",
        help="output directory, written whole (default: calipers-demo; a previous calipers "
        "report there is replaced as a whole)",
    )
    demo.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --out folder that does not hold a calipers report (without it an existing one is refused)",
    )
    demo.add_argument(
        "--recalibrate",
        metavar="METHODS",
        default=DEFAULT_METHODS,
        help=f"comma-separated methods (default: {DEFAULT_METHODS}; 'none' for none)",
    )
    demo.add_argument(
        "--table-only", action="store_true", help="only the table (table.md, table.json)"
    )
    demo.add_argument("--seed", type=int, default=0, help="seed of every random step (default 0)")
    demo.set_defaults(func=_cmd_demo)

    rep = sub.add_parser(
        "report",
        help="the standard report for prediction files, optionally with recalibration",
        description=REPORT_DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rep.add_argument(
        "files", nargs="+", metavar="FILE", help="test predictions, one model per file"
    )
    _add_file_options(rep)
    rep.add_argument(
        "--calibration",
        nargs="+",
        metavar="FILE",
        default=None,
        help="calibration-split predictions, one per FILE in the same order",
    )
    rep.add_argument(
        "--recalibrate",
        metavar="METHODS",
        default="",
        help="comma-separated recalibration methods, e.g. ts,ets,hb,ir,mrr "
        f"(short names: {', '.join(sorted(METHOD_ALIASES))}; or class names)",
    )
    rep.add_argument(
        "--split",
        type=float,
        default=0.5,
        metavar="FRACTION",
        help="without --calibration: the fraction of each file used to fit the methods "
        "(stratified, seeded; default 0.5)",
    )
    rep.add_argument(
        "--bootstrap",
        type=int,
        default=0,
        metavar="N",
        help="95%% bootstrap intervals (basic bootstrap, docs/intervals.md) from N "
        "resamples of the test rows; also decides the flags with paired intervals "
        "(default: none; progress goes to stderr, one line per step in logs)",
    )
    rep.add_argument(
        "--null-resamples",
        type=int,
        default=200,
        metavar="N",
        help="draws of the calibrated null for the ECE p-value (default 200)",
    )
    rep.add_argument("--seed", type=int, default=0, help="seed of every random step (default 0)")
    rep.add_argument(
        "--format",
        choices=("markdown", "json", "latex", "html"),
        default=None,
        help="what to print (default: markdown)",
    )
    rep.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="also write report.html/.json/.md/.tex and figures/ into DIR, whole (a previous "
        "calipers report there is replaced as a whole)",
    )
    rep.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --out folder that does not hold a calipers report (without it an existing one is refused)",
    )
    rep.set_defaults(func=_cmd_report)

    dia = sub.add_parser(
        "diagram",
        help="draw one diagram of one prediction file",
        description="Draw one diagram (reliability, smooth, sharpness, classwise, top-k) of a "
        "prediction file and write it as PNG, SVG or PDF (from the --out suffix).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    dia.add_argument("kind", choices=("reliability", "smooth", "sharpness", "classwise", "top-k"))
    dia.add_argument("files", nargs=1, metavar="FILE", help="prediction file")
    _add_file_options(dia)
    dia.add_argument("--bins", type=_positive_int, default=15, metavar="N")
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
    return parser


def _check_usage(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.command == "table" and not args.files:
        given = [
            opt
            for opt, value in (
                ("--logits", args.logits),
                ("--labels", args.labels),
                ("--probs-key", args.probs_key),
                ("--logits-key", args.logits_key),
                ("--labels-key", args.labels_key),
                ("--clip", args.clip),
                ("--sum-tol", args.sum_tol is not None),
            )
            if value
        ]
        if given:
            parser.error(f"{', '.join(given)} needs a prediction FILE")


# --------------------------------------------------------------------------- entry point

#: Validation-layer advice and the command-line option that follows it.
_CLI_OPTIONS = {
    " Pass the Predictions it returns in place of probs (labels=None); every metric, "
    "diagram and recalibrator accepts it.": "",
    "validate with calipers.check_predictions(probs, labels, renormalize=True)": "pass --renormalize",
    "validate with calipers.check_predictions(probs, labels, sum_tol=TOL) and a larger TOL": (
        "raise --sum-tol"
    ),
    "validate with calipers.check_predictions(probs, labels, clip=True, renormalize=True)": (
        "pass --clip --renormalize"
    ),
    "validate with calipers.check_predictions(probs, labels, clip=True)": "pass --clip",
    "pass logits=True": "pass --logits",
}


def _cli_words(message: str) -> str:
    """An error message with library keyword arguments replaced by command-line options."""
    for kwarg, option in _CLI_OPTIONS.items():
        message = message.replace(kwarg, option)
    return message


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``calipers`` program and return its exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 success, 1 unexpected error, 2 usage error, 3 bad input file or
        invalid predictions.

    Examples
    --------
    >>> from calipers.cli import main
    >>> main(["--version"])  # doctest: +SKIP
    calipers 0.1.0
    0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        _check_usage(parser, args)
    except SystemExit as exc:  # --help, --version, usage errors
        code = exc.code
        return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_USAGE)
    try:
        with terminate_on_sigterm():  # kill PID cleans up like Ctrl-C
            return int(args.func(args))
    except (PredictionFileError, CalibrationInputError) as exc:
        _info(f"calipers: error: {_cli_words(str(exc))}")
        return EXIT_INPUT
    except OutputExistsError as exc:
        _info(f"calipers: error: {exc}")
        return EXIT_USAGE
    except _OutputError as exc:
        _info(f"calipers: error: {exc}")
        return EXIT_UNEXPECTED
    except BrokenPipeError:
        # the reader went away (`calipers table | head`): stop quietly
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_UNEXPECTED
    except KeyboardInterrupt as exc:
        return 143 if str(exc) == f"signal {int(signal.SIGTERM)}" else 130
    except Exception:
        from . import output

        if output.SIGTERM_RECEIVED:  # interrupted inside an import, which re-raised it
            return 143
        traceback.print_exc()
        _info(
            "calipers: unexpected error (a bug in calipers?); please report it with the "
            "traceback above"
        )
        return EXIT_UNEXPECTED
