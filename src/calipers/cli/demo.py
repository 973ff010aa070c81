"""``calipers demo``: the whole job on the embedded default.

The calibration table of the three models of
:func:`calipers.datasets.load_default_predictions`; then recalibration methods
fitted on the calibration half and evaluated on the test half, and the report
(HTML, JSON, Markdown, LaTeX, figures) with the table, written whole into one
folder.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..io.output import write_folder_atomic
from .exit_status import EXIT_OK
from .formatting import _FORMATTERS, _format_text
from .inputs import _default_models
from .methods import DEFAULT_METHODS, _recalibrators
from .options import EPILOG, _add_common, seed_option
from .outputs import _emit, _info
from .report import _run_report
from .table import _build_table


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
    from ..datasets import load_default_predictions

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
        f"calipers: {_fitted_text(rep, len(_recalibrators(args.recalibrate)))}; wrote "
        f"{len(written)} files to {out}/ (open {out / 'report.html'})"
    )
    return EXIT_OK


def _fitted_text(rep: Any, n_methods: int) -> str:
    """What was fitted, per model: ``"recalibration fitted on the calibration half and
    evaluated on the test half: 5 of 5 methods for a; 3 of 5 methods for b and c (not
    applicable: X, Y (needs logits))"``.

    Models with the same methods applied share one clause; a method that could not be
    applied is named with the first clause of its reason (the report's notes hold it
    whole).
    """
    from ..reports._report import UNCALIBRATED

    if n_methods == 0:
        return "no recalibration (--recalibrate none)"
    applied: dict[str, tuple[int, tuple[str, ...]]] = {}
    for model in dict.fromkeys(r.model for r in rep.rows):
        rows = [r for r in rep.rows if r.model == model and r.method != UNCALIBRATED]
        na: dict[str, list[str]] = {}  # first clause of the reason -> methods
        for r in rows:
            why = rep._na_reason(r)
            if why is not None:
                first = str(why).split("; ", 1)[0].split(". ", 1)[0].rstrip(".")
                na.setdefault(first.removeprefix(r.method + " "), []).append(r.method)
        n_na = sum(len(v) for v in na.values())
        whys = tuple(f"{', '.join(ms)} ({why})" for why, ms in na.items())
        applied[model] = (len(rows) - n_na, whys)
    groups: dict[tuple[int, tuple[str, ...]], list[str]] = {}
    for model, key in applied.items():
        groups.setdefault(key, []).append(model)
    clauses = []
    for (k, whys), models in sorted(groups.items(), key=lambda g: -g[0][0]):
        names = models[0] if len(models) == 1 else ", ".join(models[:-1]) + " and " + models[-1]
        text = f"{k} of {n_methods} method{'s' * (n_methods != 1)} for {names}"
        if whys:
            text += f" (not applicable: {'; '.join(whys)})"
        clauses.append(text)
    return (
        "recalibration fitted on the calibration half and evaluated on the test half: "
        + "; ".join(clauses)
    )


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``demo`` subcommand to the subparsers ``sub``."""
    demo = sub.add_parser(
        "demo",
        help="the whole job on the embedded default: table, recalibration, HTML report, figures",
        description="Run the whole job on the embedded default (out-of-fold predictions of "
        "three scikit-learn models on the digits data set): print the calibration table, fit "
        "recalibration methods on the calibration half, evaluate them on the test half and "
        "write report.html (self-contained), report.json, report.md, report.tex, figures/*.png "
        "(three per model and method), table.md and table.json into --out (calipers-demo/ by "
        "default: plain 'calipers demo' writes them all there). --table-only prints the table "
        "and writes only table.md and table.json.",
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
    demo.add_argument(
        "--seed", type=seed_option, default=0, help="seed of every random step (default 0)"
    )
    demo.set_defaults(func=_cmd_demo)
    return demo
