"""``calipers report``: the standard report for prediction files, optionally with recalibration.

The report of :func:`calipers.report` (Chidambaram & Ge (2024) §6: accuracy,
proper scores and calibration errors together) for one model per file; with
``--recalibrate``, the same models after each method, fitted on ``--calibration``
files or on a stratified, seeded split of each file. Printed as Markdown, JSON,
LaTeX or HTML, and written whole into a folder with ``--out``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..validation import CalibrationInputError
from .exit_status import EXIT_OK
from .inputs import _file_models, add_input_options
from .methods import DEFAULT_METHODS, METHOD_ALIASES, _recalibrators
from .options import EPILOG, _add_dask, _positive_int, _uses_dask, seed_option
from .outputs import _emit, _info, write_report
from .regression import add_regression_options, cmd_regression_report, regression_files

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

Files larger than memory (--chunk-rows N, and any file whose arrays declare more
than 2 GiB once read): a smaller
report, from per-bin totals added chunk by chunk (equal to the in-memory values):
accuracy, NLL, Brier, ECE, ACE (further passes), SCE, MCE, class-wise and
bin-averaged ECE, and a reliability table per file, as Markdown, JSON or HTML (with a
reliability diagram per file drawn from the per-bin totals); notes list what it
leaves out (recalibration, kernel columns, p-value, intervals). An in-memory report
of 10^7 scores (rows x classes) or more says on stderr that --chunk-rows exists.
Memory does not grow with the rows: the chunk being read (about 37 bytes per
score: about 390 MB for N = 1048576 rows of 10 classes) plus the totals (a few
MB); calipers table, with every column, peaked at 669 MiB of RSS on 10^7 rows x 10
classes and 705 MiB on 10^8 (a memory-mapped .npy file hands its pages back after each chunk).

With --out DIR the report goes whole into DIR (HTML, JSON, Markdown, LaTeX, figures)
and only a summary per model and the table are printed.
"""


#: Scores (rows x classes; 1-D binary input counts 2 per row) from which an in-memory
#: report prints the hint that ``--chunk-rows`` exists: 10**7, e.g. 5 million binary rows
#: or a million rows of 10 classes. The report redraws every row's target 200 times for
#: the ECE p-value; on 10**7 binary rows it took 47 s and 3.0 GB where the streamed report
#: takes constant memory.
LARGE_INPUT_SCORES = 10**7


def _large_input_hint(models: list[tuple[str, Any]]) -> str | None:
    """The one-line hint that ``--chunk-rows`` exists, when an input holds at least
    :data:`LARGE_INPUT_SCORES` scores; None otherwise."""
    big = [
        (name, int(P.n_samples), max(int(P.n_classes), 2))
        for name, P in models
        if int(P.n_samples) * max(int(P.n_classes), 2) >= LARGE_INPUT_SCORES
    ]
    if not big:
        return None
    name, n, k = big[0]
    more = f" (and {len(big) - 1} more file{'s' * (len(big) > 2)})" if len(big) > 1 else ""
    return (
        f"calipers report: {name} holds {n} rows x {k} classes{more}, at least "
        f"{LARGE_INPUT_SCORES:,} scores: the in-memory report may take minutes and several "
        "GB; --chunk-rows N reads the file N rows at a time in constant memory (the fixed-bin "
        "metrics, accuracy, NLL, Brier, reliability tables; no recalibration, kernel columns "
        "or p-value)"
    )


def _run_report(
    test_sets: dict[str, Any],
    is_logits: dict[str, bool],
    cal_sets: dict[str, Any] | None,
    recalibrators: list[Any],
    args: argparse.Namespace,
    figures: bool,
) -> Any:
    from ..reports import report

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
        clinical=getattr(args, "clinical", False),
    )


#: Report columns of a streamed file: the table's streamable columns.
_STREAM_COLUMNS = (
    ("accuracy", "accuracy"),
    ("nll", "NLL"),
    ("brier", "Brier"),
    ("ece", "ECE"),
    ("ace", "ACE"),
    ("sce", "SCE"),
    ("mce", "MCE"),
    ("classwise_ece", "classwise ECE"),
    ("bin_averaged_ece", "bin-avg ECE"),
)


def _streamed_report(args: argparse.Namespace, chunk_rows: int | None) -> dict[str, Any]:
    """The small report of files read in chunks: metric rows, reliability tables, notes."""
    from .streaming import DEFAULT_CHUNK_ROWS, STREAMED_COLUMNS, dask_model, stream_model

    paths = [Path(f) for f in args.files]
    stems = [p.stem for p in paths]
    names = [str(p) if stems.count(p.stem) > 1 else p.stem for p in paths]
    rows: list[dict[str, Any]] = []
    reliability: dict[str, list[dict[str, Any]]] = {}
    sources: list[str] = []
    size = chunk_rows or DEFAULT_CHUNK_ROWS
    sargs = argparse.Namespace(**{**vars(args), "bins": 15, "equal_mass": "two-pass"})
    for name, path in zip(names, paths, strict=True):
        metrics = [*STREAMED_COLUMNS, "ace"]
        if _uses_dask(args):
            sm = dask_model(name, path, sargs, metrics)
        else:
            sm = stream_model(name, path, size, sargs, metrics)
        sources.append(sm.source)
        row: dict[str, Any] = {"model": name, "n": sm.n, "n_classes": sm.n_classes}
        row.update({key: sm.value(key) for key, _ in _STREAM_COLUMNS})
        rows.append(row)
        table = sm.states["ece"].reliability_table(as_frame=False)
        reliability[name] = [
            {
                "slice": str(r["slice"]),
                "bin": int(r["bin"]),
                "lower": float(r["lower"]),
                "upper": float(r["upper"]),
                "count": int(r["count"]),
                "mean_score": float(r["mean_score"]),
                "observed": float(r["observed"]),
                "gap": float(r["gap"]),
                "ci_lower": float(r["ci_lower"]),
                "ci_upper": float(r["ci_upper"]),
            }
            for r in table
        ]
    how = (
        "Computed on Dask: every Parquet partition was reduced where it was read "
        "(--scheduler/--workers), "
        if _uses_dask(args)
        else f"Streamed: every file was read in chunks of at most {size} rows (--chunk-rows; "
        "files whose arrays declare more than 2 GiB are streamed by default), "
    )
    notes = [
        how + "and each number comes from per-bin totals "
        "added chunk by chunk (calipers.CalibrationState): accuracy, NLL, Brier and the "
        "fixed-bin errors equal the in-memory report's values, and so does ACE, whose "
        "equal-mass ranges (Nixon et al. 2019) take further passes over the file (one or "
        "two).",
        "Not in a streamed report: SmoothECE, "
        "the kernel CE_KL and CE_2^2 and the refinement (Popordanoska et al. 2024; kernel "
        "sums over all rows), and the ECE p-value and bootstrap intervals (resampling of "
        "all rows). For them, run the report on a seeded subsample of the rows that fits "
        "in memory (the report's kernel columns already use at most 5000 rows).",
        "Reliability table: the bins behind the ECE (15 equal-width bins (lo, hi]; P(y = 1) "
        "against y for 1-D binary input, else confidence against correctness), with 95% "
        "Wilson intervals of the observed frequency; empty bins left out.",
    ]
    if args.recalibrate or args.calibration:
        notes.append(
            "Recalibration was not run (--recalibrate/--calibration are ignored when files "
            "are streamed): fitting a recalibration map needs its calibration rows in memory. "
            "Fit it on a seeded subsample of the rows, or on a calibration file that fits in "
            "memory, and tabulate the recalibrated predictions."
        )
    return {
        "title": "calipers report (streamed)",
        "streamed": True,
        "chunk_rows": size,
        "sources": sources,
        "columns": ["model", "n", "n_classes"] + [k for k, _ in _STREAM_COLUMNS],
        "rows": rows,
        "reliability": reliability,
        "notes": notes,
    }


def _streamed_markdown(doc: dict[str, Any]) -> str:
    def f(v: Any) -> str:
        return "n/a" if v is None else str(v) if isinstance(v, int) else f"{v:.4f}"

    out = [f"# {doc['title']}", ""]
    out += [f"Source: {s}  " for s in doc["sources"]]
    out += ["", "| model | n | " + " | ".join(h for _, h in _STREAM_COLUMNS) + " |"]
    out.append("| --- | ---: | " + " | ".join("---:" for _ in _STREAM_COLUMNS) + " |")
    for r in doc["rows"]:
        cells = [str(r["model"]), str(r["n"])] + [f(r[k]) for k, _ in _STREAM_COLUMNS]
        out.append("| " + " | ".join(cells) + " |")
    for name, bins in doc["reliability"].items():
        out += ["", f"## Reliability table: {name}", ""]
        out.append("| slice | bin | range | n | mean score | observed | gap | 95% interval |")
        out.append("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |")
        for b in bins:
            out.append(
                f"| {b['slice']} | {b['bin']} | ({b['lower']:.3g}, {b['upper']:.3g}] | "
                f"{b['count']} | {b['mean_score']:.4f} | {b['observed']:.4f} | "
                f"{b['gap']:+.4f} | [{b['ci_lower']:.4f}, {b['ci_upper']:.4f}] |"
            )
    out += ["", "## Notes", ""] + [f"- {n}" for n in doc["notes"]]
    return "\n".join(out) + "\n"


def _streamed_figures(doc: dict[str, Any]) -> tuple[dict[str, bytes], str | None]:
    """The reliability diagram of every streamed file, drawn from its per-bin totals
    (``figures/<model>__reliability.png`` -> PNG), or why there is none."""
    from ..reports._document import _slug
    from .streaming import reliability_png

    figures: dict[str, bytes] = {}
    try:
        for row in doc["rows"]:
            name = str(row["model"])
            bins = doc["reliability"][name]
            figures[f"figures/{_slug(name)}__reliability.png"] = reliability_png(
                bins, f"{name} (streamed)", row.get("ece")
            )
    except ImportError as exc:  # matplotlib is optional
        return {}, f"No reliability diagram: {exc}."
    return figures, None


def _streamed_html(doc: dict[str, Any], figures: dict[str, bytes], why_none: str | None) -> str:
    """The streamed report as one self-contained HTML page: the table (the Markdown's
    numbers), a reliability diagram per file from its per-bin totals, the reliability
    tables (collapsed) and the notes."""
    import base64
    import html

    from ..reports._document import _CSS, _slug

    def f(v: Any) -> str:
        return "n/a" if v is None else str(v) if isinstance(v, int) else f"{v:.4f}"

    esc = html.escape
    head = "".join(f"<th>{esc(h)}</th>" for h in ["model", "n", *(h for _, h in _STREAM_COLUMNS)])
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{esc(c)}</td>"
            for c in [str(r["model"]), str(r["n"])] + [f(r[k]) for k, _ in _STREAM_COLUMNS]
        )
        + "</tr>"
        for r in doc["rows"]
    )
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(doc['title'])}</title><style>{_CSS}</style></head><body>"
        f"<h1>{esc(doc['title'])}</h1>",
        "<ul>" + "".join(f"<li>Source: {esc(s)}</li>" for s in doc["sources"]) + "</ul>",
        f'<h2>Table</h2><table class="calipers-report"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>",
    ]
    cells = []
    for r in doc["rows"]:
        name = str(r["model"])
        png = figures.get(f"figures/{_slug(name)}__reliability.png")
        if png is None:
            continue
        b64 = base64.b64encode(png).decode("ascii")
        cap = f"{name}: reliability diagram from the streamed per-bin totals"
        cells.append(
            f'<figure><img alt="{esc(cap)}" src="data:image/png;base64,{b64}">'
            f"<figcaption>{esc(cap)}</figcaption></figure>"
        )
    if cells:
        cols = f"grid-template-columns:repeat({min(len(cells), 3)},minmax(0,1fr))"
        parts.append(
            f'<h2>Figures</h2><div class="figure-grid" style="{cols}">{"".join(cells)}</div>'
        )
    elif why_none is not None:
        parts.append(f"<p>{esc(why_none)}</p>")
    for name, bins in doc["reliability"].items():
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td>{esc(c)}</td>"
                for c in (
                    str(b["slice"]),
                    str(b["bin"]),
                    f"({b['lower']:.3g}, {b['upper']:.3g}]",
                    str(b["count"]),
                    f"{b['mean_score']:.4f}",
                    f"{b['observed']:.4f}",
                    f"{b['gap']:+.4f}",
                    f"[{b['ci_lower']:.4f}, {b['ci_upper']:.4f}]",
                )
            )
            + "</tr>"
            for b in bins
        )
        heads = ("slice", "bin", "range", "n", "mean score", "observed", "gap", "95% interval")
        parts.append(
            f"<details><summary>Reliability table: {esc(name)}</summary>"
            '<table class="calipers-report"><thead><tr>'
            + "".join(f"<th>{h}</th>" for h in heads)
            + f"</tr></thead><tbody>{rows}</tbody></table></details>"
        )
    parts.append(
        "<details><summary>Notes</summary><ul>"
        + "".join(f"<li>{esc(n)}</li>" for n in doc["notes"])
        + "</ul></details></body></html>\n"
    )
    return "".join(parts)


def _cmd_report_streamed(args: argparse.Namespace, chunk_rows: int | None) -> int:
    import json

    fmt = args.format or "markdown"
    if getattr(args, "clinical", False):
        raise CalibrationInputError(
            "--clinical needs the predictions in memory (its curve and tests read every "
            "row); a streamed report (--chunk-rows, --scheduler/--workers, or a file "
            "declaring more than 2 GiB) has none: drop --chunk-rows or --clinical"
        )
    if fmt not in ("markdown", "json", "html"):
        raise CalibrationInputError(
            "a streamed report (--chunk-rows, --scheduler/--workers, or a file declaring more than 2 GiB) is "
            f"printed as markdown, json or html, not {fmt}"
        )
    doc = _streamed_report(args, chunk_rows)
    for line in doc["sources"]:
        _info(f"source: {line}")
    texts: dict[str, str | bytes] = {
        "report.md": _streamed_markdown(doc),
        "report.json": json.dumps(doc, indent=2) + "\n",
    }
    if fmt == "html" or args.out is not None:
        figures, why_none = _streamed_figures(doc)
        texts["report.html"] = _streamed_html(doc, figures, why_none)
        if args.out is not None:
            texts.update(figures)
    key = {"markdown": "report.md", "json": "report.json", "html": "report.html"}[fmt]
    _emit(str(texts[key]))
    if args.out is not None:
        from ..io.output import write_folder_atomic

        written = write_folder_atomic(Path(args.out), texts, force=args.force)
        _info(f"calipers: wrote {len(written)} files to {args.out}/")
    return EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    from .streaming import wants_streaming

    if regression_files(args, "report"):  # Gaussian predictions: calipers.regression_report
        if getattr(args, "clinical", False):
            raise CalibrationInputError(
                "--clinical reads predicted risks of an event (classification predictions); "
                f"{args.files[0]} holds regression predictions"
            )
        return cmd_regression_report(args)

    if _uses_dask(args):
        if args.chunk_rows is not None:
            raise CalibrationInputError(
                "--chunk-rows reads a file on this machine; with --scheduler/--workers each "
                "Parquet partition is one chunk"
            )
        return _cmd_report_streamed(args, None)
    sizes = [wants_streaming(Path(f), args.chunk_rows) for f in args.files]
    if any(s is not None for s in sizes):
        return _cmd_report_streamed(args, args.chunk_rows)
    models, sources = _file_models(args)
    hint = _large_input_hint(models)
    if hint is not None:
        _info(hint)
    if args.calibration and len(args.calibration) != len(models):
        raise CalibrationInputError(
            f"--calibration needs one file per prediction file ({len(models)}); "
            f"got {len(args.calibration)}"
        )
    # --calibration alone fits the demo's methods, as it fits all three for regression
    # files: a calibration file given and then not used would be a silent surprise
    spec = args.recalibrate or (DEFAULT_METHODS if args.calibration else "")
    methods = _recalibrators(spec)
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
            from ..recalibration import calibration_split_indices

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
    return write_report(rep, args)


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``report`` subcommand to the subparsers ``sub``."""
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
    add_input_options(rep)
    add_regression_options(rep)
    _add_dask(rep)
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
        f"(short names: {', '.join(sorted(METHOD_ALIASES))}; or class names; "
        f"{DEFAULT_METHODS} when only --calibration is given; 'none' for none); for "
        "regression files vscale, vplatt, quantile (variance scaling, Platt scaling of the "
        "log variance, quantile recalibration; all three when only --calibration is given)",
    )
    rep.add_argument(
        "--split",
        type=float,
        default=0.5,
        metavar="FRACTION",
        help="without --calibration: the fraction of each file used to fit the methods "
        "(stratified by label, seeded; a seeded random split for regression files; "
        "default 0.5)",
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
    rep.add_argument(
        "--seed", type=seed_option, default=0, help="seed of every random step (default 0)"
    )
    rep.add_argument(
        "--chunk-rows",
        type=_positive_int,
        default=None,
        metavar="N",
        help="read each file N rows at a time, in memory that does not grow with the rows "
        "(about 37 bytes per score of a chunk, rows x classes, plus a few MB of totals: "
        "about 390 MB for N = 1048576 rows of 10 classes; calipers table peaked at 669 MiB "
        "of RSS on 10^7 rows x 10 classes, 705 MiB on 10^8; files whose arrays declare more than 2 GiB: in "
        "chunks of 1048576 rows without it); the streamed report holds the fixed-bin metrics, "
        "accuracy, NLL, Brier and reliability tables (Markdown, JSON or HTML with a reliability "
        "diagram), and says what it leaves out (recalibration, kernel columns, p-value, "
        "intervals). An in-memory report of 10^7 scores (rows x classes) or more says so "
        "on stderr",
    )
    rep.add_argument(
        "--clinical",
        action="store_true",
        help="add the calibration hierarchy of Van Calster et al. 2016 for every row "
        "(calibration in the large, intercept and slope, flexible curve with ICI/E50/E90/"
        "Emax, Hosmer-Lemeshow and Spiegelhalter tests, C-statistic, Brier; one-vs-rest per "
        "class for multiclass), with the clinical calibration diagram under --out",
    )
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
    return rep
