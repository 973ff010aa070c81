"""Cost of the quadratic (all-pairs) estimators, said before they start.

The exact kernel estimators (SKCE's unbiased and biased U/V-statistics,
Widmann et al. 2019; the Dirichlet-kernel proper calibration error of
Popordanoska et al. 2024) sum over all ``n^2`` pairs of rows. Their memory is
bounded (tiles), but their time is not: ``n = 10^7`` rows is ``10^14`` pairs.
:func:`check_quadratic_cost` estimates the time from the measured throughput
of this implementation and

* warns (:class:`CalibrationCostWarning`) when the estimate exceeds
  :data:`WARN_SECONDS` (30 s), with the estimate and a linear-time
  alternative;
* refuses (:class:`~calipers.validation.CalibrationInputError`) when it
  exceeds :data:`REFUSE_SECONDS` (1 hour) on the CPU, with the same
  information. PyTorch input on a GPU is only warned about (a GPU is 10-100
  times faster; the estimate is for the CPU).

The throughputs are those measured by ``benchmarks/bench_mmce_skce.py`` and
``benchmarks/bench_dirichlet.py`` on a 2-core x86-64 machine (SKCE: about
0.8 ns per pair and class, Dirichlet kernel: about 1.9 ns); faster machines
finish sooner than estimated, which only makes the warning conservative.
"""

from __future__ import annotations

import warnings

from ..validation import CalibrationInputError

__all__ = [
    "CalibrationCostWarning",
    "check_quadratic_cost",
    "WARN_SECONDS",
    "REFUSE_SECONDS",
]

#: Estimated seconds above which a quadratic estimator warns.
WARN_SECONDS = 30.0
#: Estimated CPU seconds above which a quadratic estimator refuses to start.
REFUSE_SECONDS = 3600.0


class CalibrationCostWarning(UserWarning):
    """An estimator is about to run for a long time (the message says how long)."""


def _human(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


def check_quadratic_cost(
    n: int,
    k: int,
    *,
    seconds_per_pair: float,
    what: str,
    alternative: str,
    on_gpu: bool = False,
) -> float:
    """Estimate ``n^2 * k * seconds_per_pair`` seconds; warn or refuse past the limits.

    Parameters
    ----------
    n : int
        Rows (pairs are ``n^2``).
    k : int
        Columns each pair costs (classes).
    seconds_per_pair : float
        Measured seconds per pair and column.
    what : str
        The estimator, for the message.
    alternative : str
        What to do instead (a linear-time estimator, a subsample).
    on_gpu : bool, default False
        Input on a GPU: warn only, never refuse.

    Returns
    -------
    float
        The estimate in seconds.

    Examples
    --------
    >>> from calipers.estimators.quadratic_cost import check_quadratic_cost
    >>> round(check_quadratic_cost(10_000, 10, seconds_per_pair=8e-10, what="SKCE",
    ...                            alternative="estimator='block'"), 2)
    0.8
    >>> check_quadratic_cost(10**7, 10, seconds_per_pair=8e-10, what="SKCE",
    ...                      alternative="estimator='block'")
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: SKCE sums over all 10000000^2 pairs of rows: about 9 days on this implementation's CPU throughput (refused above 1 hour). Use estimator='block'.
    """
    est = float(n) * float(n) * max(int(k), 1) * seconds_per_pair
    if est > REFUSE_SECONDS and not on_gpu:
        raise CalibrationInputError(
            f"{what} sums over all {n}^2 pairs of rows: about {_human(est)} on this "
            f"implementation's CPU throughput (refused above 1 hour). Use {alternative}."
        )
    if est > WARN_SECONDS:
        where = " (estimated for the CPU; a GPU is faster)" if on_gpu else ""
        warnings.warn(
            f"{what} sums over all {n}^2 pairs of rows: about {_human(est)}{where}. "
            f"For a quicker answer use {alternative}.",
            CalibrationCostWarning,
            stacklevel=3,
        )
    return est
