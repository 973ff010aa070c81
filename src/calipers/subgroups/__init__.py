"""Calibration within groups: per-group errors, the worst group, multicalibration.

For fairness audits and deployment slices: the calibration error and
reliability table of each group with intervals, the worst group over a set of
groups or feature thresholds, and the multicalibration audit of Hébert-Johnson
et al. (2018) (the largest calibration violation over a family of subgroups,
beside the noise level at that group's size).
"""

from __future__ import annotations

from ._calibration_by_group import GroupStatistics, SubgroupCalibration, calibration_by_group
from ._multicalibration_audit import MulticalibrationAudit, multicalibration_audit
from ._worst_group import WorstGroup, worst_group

__all__: list[str] = [
    "GroupStatistics",
    "MulticalibrationAudit",
    "SubgroupCalibration",
    "WorstGroup",
    "calibration_by_group",
    "multicalibration_audit",
    "worst_group",
]
