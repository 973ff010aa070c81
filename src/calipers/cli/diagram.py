"""``calipers diagram``: one diagram of one prediction file, as PNG, SVG or PDF.

Reliability, smooth reliability, calibration-sharpness, class-wise grid or
top-k bars (:mod:`calipers.diagrams`), written atomically to ``--out``.
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


def _cmd_diagram(args: argparse.Namespace) -> int:
    from .. import diagrams

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


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``diagram`` subcommand to the subparsers ``sub``."""
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
    add_input_options(dia)
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
    return dia
