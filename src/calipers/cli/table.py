"""``calipers table``: the standard calibration table, as text, Markdown, JSON or CSV.

One row per prediction file (or per model of the embedded default): accuracy,
NLL, Brier score, ECE, ACE, SCE, TACE, MCE, RMSCE, class-wise ECE and
bin-averaged ECE, every number from calipers' public metric functions, with
notes that say how each was computed (and why an NLL is infinite, when it is).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..metrics import registry
from ..metrics.scores import nll
from ..validation import Predictions
from .formatting import (
    _FORMATTERS,
    FORMATS,
    _Column,
    _resolve_format,
    _Table,
)
from .inputs import _default_models, _file_models, add_input_options
from .options import (
    EPILOG,
    _add_chunk_rows,
    _add_common,
    _add_dask,
    _uses_dask,
)
from .outputs import write_table
from .streaming import (
    NOT_STREAMED_WHY,
    STREAMED_COLUMNS,
    StreamedModel,
    dask_model,
    not_streamed_note,
    stream_model,
    wants_streaming,
)

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
  .parquet  the .csv layout, or a list column of vectors (needs pyarrow >= 14.0.1)
  .pt/.pth  torch.save of a tensor, a dict of tensors (read as .npz) or a pair
        (needs PyTorch; loaded with weights_only=True)

Nothing is clipped or renormalised unless asked (--clip, --renormalize,
--nll-clip);
an NLL of inf is printed as inf, with a note saying why.

Files larger than memory: with --chunk-rows N (and for any file whose arrays
declare more than 2 GiB once read, in chunks of 1048576 rows) a file is read N
rows at a time (.npy memory-mapped, .npz and .csv streamed, .parquet by record
batches; .pt read whole) and its row comes from per-bin totals added chunk by chunk: accuracy, NLL, Brier, ECE,
SCE, MCE, class-wise and bin-averaged ECE equal the in-memory values. ACE, TACE
and RMSCE (equal-mass bins, quantiles of all rows) need further passes over the
file (--equal-mass two-pass, the default; exact: a second pass, and a third from
about 4 million rows of 10 classes), or come from one pass within a printed
bound (one-pass), or are printed as n/a with a note (skip).
Memory does not grow with the rows: it is the chunk being read (about 37 bytes
per score: about 390 MB for N = 1048576 rows of 10 classes) plus each column's
totals (a few MB). Measured peak RSS, every column, 10 classes, Parquet, N =
1048576: 466 MiB for 10^6 rows (one chunk), 669 MiB for 10^7 and 705 MiB for
10^8 (616 and 632 MiB with --equal-mass skip). A memory-mapped .npy file hands its pages back after each
chunk, so they do not add up either.
"""


def _compute(function: Callable[..., Any], binned: bool) -> Callable[[Predictions, int], Any]:
    """A column's function of (predictions, bins)."""
    if binned:
        return lambda P, b: function(P, None, n_bins=b)
    return lambda P, b: function(P, None)


def _columns(nll_clip: float | None) -> list[_Column]:
    """The table's columns: the metric registry's table rows, in order (and ``--nll-clip``)."""
    cols = []
    for name in registry.names(table=True):
        spec = registry.get(name)
        binned = spec.pipeline is not None  # a score has no bins
        cols.append(_Column(name, spec.label, _compute(spec.function, binned)))
        if name == "nll" and nll_clip is not None:
            cols.append(
                _Column(
                    "nll_clipped", f"NLL@{nll_clip:g}", lambda P, b: nll(P, None, clip=nll_clip)
                )
            )
    return cols


def _zero_true_class_rows(P: Predictions) -> int:
    """Rows whose true class has probability exactly 0 (the cause of an infinite NLL)."""
    probs = np.asarray(P.full_probs())
    labels = np.asarray(P.labels)
    return int(np.count_nonzero(np.take_along_axis(probs, labels[:, None], axis=1) == 0))


def _build_table(
    models: Sequence[tuple[str, Predictions | StreamedModel]],
    sources: list[str],
    n_bins: int,
    nll_clip: float | None,
    extra_notes: Sequence[str] = (),
) -> _Table:
    columns = _columns(nll_clip)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    streamed = [P for _, P in models if isinstance(P, StreamedModel)]
    for name, P in models:
        row: dict[str, Any]
        if isinstance(P, StreamedModel):  # totals of calibration states, chunk by chunk
            row = {"model": name, "n": P.n, "n_classes": P.n_classes}
            for col in columns:
                row[col.key] = P.value(col.key)
        else:
            row = {"model": name, "n": P.n_samples, "n_classes": P.n_classes}
            for col in columns:
                row[col.key] = float(col.compute(P, n_bins))
        rows.append(row)
        if math.isinf(row["nll"]):
            z = P.zero_true_class if isinstance(P, StreamedModel) else _zero_true_class_rows(P)
            n_rows = P.n if isinstance(P, StreamedModel) else P.n_samples
            clip_hint = (
                f"; the NLL@{nll_clip:g} column clips p_y to [{nll_clip:g}, 1 - {nll_clip:g}]"
                if nll_clip is not None
                else "; add --nll-clip 1e-15 to also report the NLL with p_y clipped"
            )
            notes.append(
                f"NLL is inf for {name}: {z} of {n_rows} rows give probability 0 to the "
                "true class, and -log 0 = inf. This is the exact value, not an error: calipers "
                f"never clips silently{clip_hint}."
            )
    notes += not_streamed_note(streamed, {c.key: c.header for c in columns})
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


def _table_models(
    args: argparse.Namespace,
) -> tuple[list[tuple[str, Predictions | StreamedModel]], list[str]]:
    """Each file read whole, or in chunks (``--chunk-rows``, or a file declaring more than 2 GiB)."""
    paths = [Path(f) for f in args.files]
    stems = [p.stem for p in paths]
    names = [str(p) if stems.count(p.stem) > 1 else p.stem for p in paths]
    models: list[tuple[str, Predictions | StreamedModel]] = []
    sources: list[str] = []
    metrics = [
        c.key for c in _columns(None) if c.key in STREAMED_COLUMNS or c.key in NOT_STREAMED_WHY
    ]
    for name, path in zip(names, paths, strict=True):
        if _uses_dask(args):
            sm = dask_model(name, path, args, metrics)
            models.append((name, sm))
            sources.append(sm.source)
            continue
        chunk_rows = wants_streaming(path, args.chunk_rows)
        if chunk_rows is None:
            one = argparse.Namespace(**{**vars(args), "files": [str(path)]})
            whole, source = _file_models(one)
            models.append((name, whole[0][1]))
            sources += source
        else:
            sm = stream_model(name, path, chunk_rows, args, metrics, args.nll_clip)
            models.append((name, sm))
            sources.append(sm.source)
    return models, sources


def _cmd_table(args: argparse.Namespace) -> int:
    from .regression import cmd_regression_table, regression_files

    if regression_files(args, "table"):  # Gaussian predictions: the regression table
        return cmd_regression_table(args)
    models: Sequence[tuple[str, Predictions | StreamedModel]]
    if args.files:
        models, sources = _table_models(args)
    else:
        models, sources = _default_models(args.renormalize)
    extra = ["rows were renormalised to sum to 1 (--renormalize)"] if args.renormalize else []
    if args.clip:
        extra.append("probabilities were clipped into [0, 1] (--clip)")
    table = _build_table(models, sources, args.bins, args.nll_clip, extra)
    fmt = _resolve_format(args)
    return write_table(_FORMATTERS[fmt](table), fmt, table, sources, args)


#: The table's wording of the input options (their file types).
_TABLE_INPUT_HELP = {
    "--logits": "the predictions are logits (softmax is applied)",
    "--labels": "labels file (.npy, .npz, .csv, .txt, .parquet, .pt)",
    "--probs-key": ".npz array of probabilities",
    "--logits-key": ".npz array of logits",
    "--labels-key": ".npz array of labels",
}


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``table`` subcommand to the subparsers ``sub``."""
    from .regression import REGRESSION_HELP, add_regression_options

    table = sub.add_parser(
        "table",
        help="the standard calibration table for prediction files (or the embedded default)",
        description=TABLE_DESCRIPTION + "\n" + REGRESSION_HELP,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    table.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="prediction files (.npz, .npy, .csv, .parquet, .pt); one row per file. None: the embedded default",
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
    _add_chunk_rows(table)
    _add_dask(table)
    add_input_options(table, repair=True, omit=("--probs",), helps=_TABLE_INPUT_HELP)
    add_regression_options(table)
    table.set_defaults(func=_cmd_table)
    return table


def _regression_flags() -> list[tuple[str, str]]:
    """Every regression option (``calipers.cli.regression``) and its attribute."""
    from .regression import REGRESSION_OPTIONS

    return [(f, dest) for f, (dest, _, _) in REGRESSION_OPTIONS.items()] + [
        ("--crossing", "crossing")
    ]


def check_usage(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Input options without a prediction FILE are a usage error (exit status 2)."""
    if not args.files:
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
                ("--chunk-rows", args.chunk_rows is not None),
                ("--scheduler", args.scheduler is not None),
                ("--workers", args.workers is not None),
                *(
                    (flag, getattr(args, dest, None) is not None)
                    for flag, dest in _regression_flags()
                ),
            )
            if value
        ]
        if given:
            parser.error(f"{', '.join(given)} needs a prediction FILE")
    if args.chunk_rows is not None and _uses_dask(args):
        parser.error(
            "--chunk-rows reads a file on this machine; with --scheduler/--workers "
            "each Parquet partition is one chunk"
        )
