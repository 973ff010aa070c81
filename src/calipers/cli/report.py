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
from .methods import METHOD_ALIASES, _recalibrators
from .options import EPILOG
from .outputs import _emit, _info

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


def _run_report(
    test_sets: dict[str, Any],
    is_logits: dict[str, bool],
    cal_sets: dict[str, Any] | None,
    recalibrators: list[Any],
    args: argparse.Namespace,
    figures: bool,
) -> Any:
    from ..report import report

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
    return rep
