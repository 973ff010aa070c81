"""JSON configuration of the pipeline parts that stream: lenses, selections, divergences.

A :class:`~calipers.stream.calibration_state.CalibrationState` stores the parts
of its pipeline (Kirchenbauer, Oaks & Heim 2022) as plain JSON, so that a saved
state can be merged with states of other machines and read back exactly. Each
part is written by its ``*_to_config`` function and rebuilt by its
``*_from_config`` one; floats are written with ``float.hex`` (exact). The parts
that have a configuration:

* lenses: the named ones (``"auto"``, ``"top_label"``,
  ``"top_label_per_class"``, ``"classwise"``, ``"binary"``), kept as their name,
  and :func:`~calipers.pipeline.lenses.top_k` as ``{"top_k": k}``;
* selections: :class:`~calipers.pipeline.selection.ScoreInterval` (hence
  :func:`~calipers.pipeline.selection.threshold`) and
  :class:`~calipers.pipeline.selection.LabelSelection`, a list of them
  (combined with AND);
* divergences: the named ones, :class:`~calipers.pipeline.divergences.Lp`,
  :class:`~calipers.pipeline.divergences.TVD` and
  :class:`~calipers.pipeline.divergences.KL`.

The binning estimators have theirs in :mod:`calipers.estimators._config`.

Examples
--------
>>> import calipers as cp
>>> from calipers.pipeline import _config
>>> _config.lens_to_config(cp.top_k(3)), _config.lens_from_config({"top_k": 3}).__name__
({'top_k': 3}, 'top_3')
>>> _config.selection_to_config(cp.threshold(0.5))
[{'score_interval': ['0x1.0000000000000p-1', 'inf'], 'closed': 'right', 'dim': 0}]
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..validation import CalibrationInputError
from .divergences import KL, TVD, Divergence, Lp, get_divergence
from .lenses import Lens, get_lens, top_k
from .selection import LabelSelection, ScoreInterval, Selection, combine

__all__ = [
    "NAMED_LENSES",
    "NAMED_DIVERGENCES",
    "lens_to_config",
    "lens_from_config",
    "selection_to_config",
    "selection_from_config",
    "divergence_to_config",
    "divergence_from_config",
]

NAMED_LENSES = ("auto", "top_label", "top_label_per_class", "classwise", "binary")
NAMED_DIVERGENCES = ("l1", "tvd", "l2", "squared_l2", "kl")


def _hex(x: float) -> str:
    return float(x).hex()


def lens_to_config(lens: str | Lens) -> Any:
    """The configuration of ``lens``: its name, or ``{"top_k": k}`` for :func:`~calipers.pipeline.lenses.top_k`.

    Other lenses (class-wise with a chosen class, grouping, canonical, custom
    callables) have none and raise
    :class:`~calipers.validation.CalibrationInputError`.

    Examples
    --------
    >>> import calipers as cp
    >>> lens_to_config("classwise"), lens_to_config(cp.top_k(2))
    ('classwise', {'top_k': 2})
    """
    if isinstance(lens, str):
        if lens not in NAMED_LENSES:
            raise CalibrationInputError(
                f"CalibrationState needs a lens among {list(NAMED_LENSES)} or top_k(k); got {lens!r}"
            )
        return lens
    m = re.fullmatch(r"top_(\d+)", getattr(lens, "__name__", ""))
    if m is None:
        raise CalibrationInputError(
            f"CalibrationState needs a lens among {list(NAMED_LENSES)} or top_k(k); got {lens!r}"
        )
    return {"top_k": int(m.group(1))}


def lens_from_config(lspec: Any) -> Lens:
    """The lens that :func:`lens_to_config` wrote ``lspec`` for.

    Examples
    --------
    >>> lens_from_config("top_label").__name__, lens_from_config({"top_k": 2}).__name__
    ('top_label', 'top_2')
    """
    return get_lens(lspec) if isinstance(lspec, str) else top_k(lspec["top_k"])


def selection_to_config(selection: Selection | Iterable[Selection] | None) -> list[Any]:
    """The configuration of a selection (or of several, combined with AND): a list, one entry each.

    A :class:`~calipers.pipeline.selection.ScoreInterval` is written with its
    bounds as ``float.hex`` strings (exact), a
    :class:`~calipers.pipeline.selection.LabelSelection` with its classes;
    ``None`` (every row) is ``[]``. Other selections raise
    :class:`~calipers.validation.CalibrationInputError`.

    Examples
    --------
    >>> import calipers as cp
    >>> selection_to_config(cp.LabelSelection([0, 2])), selection_to_config(None)
    ([{'labels': [0, 2]}], [])
    """
    if selection is None:
        return []
    sels = [selection] if callable(selection) else list(selection)
    out: list[Any] = []
    for s in sels:
        if isinstance(s, ScoreInterval):
            out.append(
                {
                    "score_interval": [_hex(s.low), _hex(s.high)],
                    "closed": s.closed,
                    "dim": s.dim,
                }
            )
        elif isinstance(s, LabelSelection):
            out.append({"labels": list(s.classes)})
        else:
            raise CalibrationInputError(
                f"CalibrationState supports ScoreInterval, threshold and LabelSelection selections; got {s!r}"
            )
    return out


def selection_from_config(config: list[Any]) -> Selection | None:
    """The selection that :func:`selection_to_config` wrote ``config`` for (``None`` for ``[]``).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.pipeline.lenses import LensSlice
    >>> sel = selection_from_config(
    ...     [{"score_interval": ["0x1.0p-2", "inf"], "closed": "right", "dim": 0}]
    ... )  # threshold(0.25)
    >>> sel(LensSlice(np.array([0.1, 0.5]), np.array([0.0, 1.0]), np.array([0, 1]), None)).tolist()
    [False, True]
    >>> selection_from_config([]) is None
    True
    """
    sels: list[Selection] = []
    for s in config:
        if "labels" in s:
            sels.append(LabelSelection(s["labels"]))
        else:
            lo, hi = (float.fromhex(v) for v in s["score_interval"])
            sels.append(ScoreInterval(lo, hi, s["closed"], s["dim"]))
    return combine(sels)


def divergence_to_config(divergence: str | Divergence) -> Any:
    """The configuration of a divergence: its name, or the parameters of Lp, TVD and KL.

    A name must be one of :func:`~calipers.pipeline.divergences.get_divergence`'s;
    ``Lp(p, root)`` is written with ``p`` as a ``float.hex`` string (exact).
    Other divergences raise :class:`~calipers.validation.CalibrationInputError`.

    Examples
    --------
    >>> import calipers as cp
    >>> divergence_to_config("l1"), divergence_to_config(cp.Lp(2.0, root=False))
    ('l1', {'lp': '0x1.0000000000000p+1', 'root': False})
    """
    if isinstance(divergence, str):
        if divergence not in NAMED_DIVERGENCES:
            get_divergence(divergence)  # raises the usual message
        return divergence
    if isinstance(divergence, Lp):
        return {"lp": _hex(divergence.p), "root": divergence.root_}
    if isinstance(divergence, TVD):
        return {"tvd": True}
    if isinstance(divergence, KL):
        return {"kl": True}
    raise CalibrationInputError(
        f"CalibrationState supports named divergences, Lp, TVD and KL; got {divergence!r}"
    )


def divergence_from_config(d: Any) -> Divergence:
    """The divergence that :func:`divergence_to_config` wrote ``d`` for.

    Examples
    --------
    >>> divergence_from_config({"lp": "0x1.8p+1", "root": True}).p
    3.0
    """
    div: Divergence
    if isinstance(d, str):
        div = get_divergence(d)
    elif "lp" in d:
        div = Lp(float.fromhex(d["lp"]), d["root"])
    elif "tvd" in d:
        div = TVD()
    else:
        div = KL()
    return div
