"""The ``--recalibrate METHODS`` option: recalibration methods by short name or class name."""

from __future__ import annotations

from typing import Any

from ..validation import CalibrationInputError

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
    "bbq": "BayesianBinningIntoQuantiles",
    "enir": "EnsembleOfNearIsotonicRegression",
    "mrr": "MeanReplacement",
    "va": "VennAbers",
    "spline": "SplineCalibration",
    "ksspline": "KSSplineCalibration",
    "sb": "ScalingBinning",
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
