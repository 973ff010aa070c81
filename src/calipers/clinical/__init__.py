"""The calibration hierarchy of clinical risk models.

Van Calster et al. (2016) order the calibration of predicted risks in levels:
calibration in the large (mean predicted risk against the observed event rate),
weak calibration (the calibration intercept and slope of Cox 1958), moderate
calibration (a flexible calibration curve) and, for summaries of that curve,
the integrated calibration index and its quantiles (Austin & Steyerberg 2019);
beside them the classic tests (Hosmer & Lemeshow 1980, Spiegelhalter 1986) and
the calibration belt (Finazzi et al. 2011; Nattino, Finazzi & Bertolini 2014).
"""

from __future__ import annotations

__all__: list[str] = []
