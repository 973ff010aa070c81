"""The ``calipers`` program: its parser, made of the subcommands' parsers, and :func:`main`.

:func:`main` parses the arguments, runs the subcommand and turns every error
into an exit status (:mod:`calipers.cli.exit_status`) and a one-line message
(``calipers: error: ...``) in the words of the command line, without a
traceback; only an unexpected error (a bug) prints one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Sequence

from .. import __version__
from ..io import PredictionFileError
from ..io.output import OutputExistsError, terminate_on_sigterm
from ..validation import CalibrationInputError
from . import demo, diagram, report, sweep, table
from .exit_status import EXIT_INPUT, EXIT_OK, EXIT_UNEXPECTED, EXIT_USAGE
from .options import EPILOG
from .outputs import _info, _OutputError


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
    for command in (table, demo, report, diagram, sweep):
        command.add_parser(sub)
    return parser


def _check_usage(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.command == "table":
        table.check_usage(parser, args)


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
        from ..io import output

        if output.SIGTERM_RECEIVED:  # interrupted inside an import, which re-raised it
            return 143
        traceback.print_exc()
        _info(
            "calipers: unexpected error (a bug in calipers?); please report it with the "
            "traceback above"
        )
        return EXIT_UNEXPECTED
