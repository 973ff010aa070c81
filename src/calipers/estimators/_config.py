"""JSON configuration of the binning estimators that stream: equal width, fixed edges,
equal mass (Nixon et al. 2019's rule).

A :class:`~calipers.stream.calibration_state.CalibrationState` stores its binning
estimator as plain JSON (floats written with ``float.hex``, exact):
:func:`binning_to_config` writes it and :func:`binning_from_config` rebuilds it.
The k-d tree of Kirchenbauer, Oaks & Heim (2022) splits at means of the whole
data set and has none (it cannot be streamed).

Examples
--------
>>> import calipers as cp
>>> from calipers.estimators import _config
>>> _config.binning_to_config(cp.EqualWidth(10))
{'equal_width': 10, 'edge_rule': 'right'}
>>> _config.binning_from_config({"equal_width": 10, "edge_rule": "right"}).n_bins
10
"""

from __future__ import annotations

from typing import Any

from ..validation import CalibrationInputError
from .binning import Binning, EqualMass, EqualWidth, FixedEdges, KDTree

__all__ = ["binning_to_config", "binning_from_config"]


def _hex(x: float) -> str:
    return float(x).hex()


def binning_to_config(est: Binning) -> dict[str, Any]:
    """The configuration of a binning estimator that streams.

    ``EqualWidth(n_bins, edge_rule)``, ``FixedEdges(edges, closed)`` (edges as
    ``float.hex`` strings, exact) and ``EqualMass(n_bins, "nixon")`` (the rule
    of Nixon et al. 2019); the k-d tree, the ``"kumar"`` equal-mass rule and
    other estimators raise :class:`~calipers.validation.CalibrationInputError`.

    Examples
    --------
    >>> import calipers as cp
    >>> binning_to_config(cp.FixedEdges([0.0, 0.5, 1.0]))
    {'fixed_edges': ['0x0.0p+0', '0x1.0000000000000p-1', '0x1.0000000000000p+0'], 'closed': 'right'}
    """
    if isinstance(est, EqualWidth):
        return {"equal_width": int(est.n_bins), "edge_rule": est.edge_rule}
    if isinstance(est, FixedEdges):
        return {"fixed_edges": [_hex(e) for e in est.edges], "closed": est.closed}
    if isinstance(est, EqualMass):
        if est.rule != "nixon":
            raise CalibrationInputError(
                "CalibrationState streams equal-mass bins by the rule of Nixon et al. (2019) "
                f"(EqualMass(n_bins, rule='nixon')); got rule={est.rule!r}"
            )
        return {"equal_mass": int(est.n_bins), "rule": "nixon"}
    if isinstance(est, KDTree):
        raise CalibrationInputError(
            "k-d tree bins are split at means of the whole data set and are not streamable; "
            "use EqualWidth or FixedEdges bins with CalibrationState"
        )
    raise CalibrationInputError(
        f"CalibrationState needs fixed bins (EqualWidth or FixedEdges); got {est!r}"
    )


def binning_from_config(e: dict[str, Any]) -> Binning:
    """The binning estimator that :func:`binning_to_config` wrote ``e`` for.

    Examples
    --------
    >>> binning_from_config({"equal_mass": 10, "rule": "nixon"}).n_bins
    10
    """
    est: Binning
    if "equal_width" in e:
        est = EqualWidth(e["equal_width"], e["edge_rule"])
    elif "equal_mass" in e:
        est = EqualMass(e["equal_mass"], "nixon")
    else:
        est = FixedEdges([float.fromhex(v) for v in e["fixed_edges"]], e["closed"])
    return est
