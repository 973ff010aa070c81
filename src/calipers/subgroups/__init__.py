"""Calibration within groups: per-group errors, the worst group, multicalibration.

For fairness audits and deployment slices: the calibration error and
reliability table of each group with intervals, the worst group over a set of
groups or feature thresholds, and the multicalibration audit of Hébert-Johnson
et al. (2018) (the largest calibration violation over a family of subgroups,
beside the noise level at that group's size).
"""

from __future__ import annotations

__all__: list[str] = []
