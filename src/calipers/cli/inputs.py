"""The input options, declared once for every subcommand, and the reading of prediction files.

Every subcommand that reads prediction files adds its input options with
:func:`add_input_options`: :data:`INPUT_OPTIONS` (``--logits``, ``--probs``,
``--labels``, ``--probs-key``, ``--logits-key``, ``--labels-key``) and, where
probabilities may be repaired before validation, :data:`REPAIR_OPTIONS`
(``--renormalize``, ``--clip``, ``--sum-tol``). ``calipers table`` takes the
repair options, leaves out ``--probs`` and words the help by file type; the
others take the set as declared. The options are read the same way everywhere
(:func:`_file_models`): each file through :func:`calipers.io.read_predictions`,
then validated once by :func:`calipers.check_predictions`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..io import PredictionFileError, read_predictions
from ..validation import CalibrationInputError, Predictions, check_predictions

#: The input options, each declared once: flag -> keyword arguments of ``add_argument``.
INPUT_OPTIONS: dict[str, dict[str, Any]] = {
    "--logits": {"action": "store_true", "help": "the predictions are logits"},
    "--probs": {"action": "store_true", "help": "the predictions are probabilities"},
    "--labels": {"metavar": "FILE", "default": None, "help": "labels file"},
    "--probs-key": {"metavar": "KEY", "default": None, "help": "array of probabilities"},
    "--logits-key": {"metavar": "KEY", "default": None, "help": "array of logits"},
    "--labels-key": {"metavar": "KEY", "default": None, "help": "array of labels"},
}

#: Options that repair probabilities before they are validated, with their defaults.
REPAIR_OPTIONS: dict[str, dict[str, Any]] = {
    "--renormalize": {
        "action": "store_true",
        "help": "divide each probability row by its sum (otherwise rows must sum to 1)",
    },
    "--clip": {
        "action": "store_true",
        "help": "clip probabilities into [0, 1] (for tiny rounding errors in a file)",
    },
    "--sum-tol": {
        "type": float,
        "default": None,
        "metavar": "TOL",
        "help": "tolerance on |row sum - 1| (default: max(1e-4, k * machine epsilon))",
    },
}


def add_input_options(
    parser: argparse.ArgumentParser,
    *,
    repair: bool = False,
    omit: Sequence[str] = (),
    helps: Mapping[str, str] | None = None,
) -> None:
    """Add the input options (:data:`INPUT_OPTIONS`) to a subcommand's parser.

    ``repair`` also adds :data:`REPAIR_OPTIONS`; without them their attributes
    still exist, at their defaults (nothing repaired). ``omit`` leaves options
    out and ``helps`` words an option's help for one subcommand.
    """
    helps = helps or {}
    for flag, kwargs in INPUT_OPTIONS.items():
        if flag not in omit:
            parser.add_argument(flag, **{**kwargs, "help": helps.get(flag, kwargs["help"])})
    if repair:
        for flag, kwargs in REPAIR_OPTIONS.items():
            parser.add_argument(flag, **kwargs)
    else:
        parser.set_defaults(renormalize=False, clip=False, sum_tol=None)


def _default_models(renormalize: bool) -> tuple[list[tuple[str, Predictions]], list[str]]:
    from ..datasets import load_default_predictions

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
