"""Mergeable state: metrics accumulated batch by batch and merged across processes.

:class:`CalibrationState` keeps the sufficient statistics of the binned metrics,
the proper scores and the reliability table; :class:`ScoreGrid` streams equal-mass
bins and :class:`EdgeSearch` finds their exact edges in further passes; :class:`SmoothECEState` and :class:`CalibrationSharpnessState` stream the
kernel metrics. ``calipers.stream.dask`` runs them on a Dask cluster and
``calipers.stream.torchmetrics`` wraps them as ``torchmetrics.Metric`` objects;
neither is imported by this package (Dask and torchmetrics are optional).

The names below are the documented surface of this package; the modules that
implement them are listed in docs/architecture.md.
"""

from __future__ import annotations

from .calibration_sharpness_state import CalibrationSharpnessState
from .calibration_state import CalibrationState
from .score_grid import EdgeSearch, ScoreGrid, score_cells
from .smooth_ece_state import SmoothECEState

__all__ = [
    "CalibrationState",
    "ScoreGrid",
    "EdgeSearch",
    "score_cells",
    "SmoothECEState",
    "CalibrationSharpnessState",
]
