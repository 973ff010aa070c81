"""Estimators of E[target | score]: binning, Nadaraya-Watson and the Dirichlet kernel.

Binning (equal width, Guo et al. 2017; equal mass, Nixon et al. 2019; the k-d
tree of Kirchenbauer, Oaks & Heim 2022), Nadaraya-Watson regression on a 1-D
score (Chidambaram & Ge 2024) and the Dirichlet-kernel estimate on the simplex
(Popordanoska et al. 2024), with the cost guard of the all-pairs estimators.

The names below are the documented surface of this package; the modules that
implement them are listed in docs/architecture.md.
"""

from __future__ import annotations

from .binning import (
    Binning,
    BinStatistics,
    EqualMass,
    EqualWidth,
    FixedEdges,
    KDTree,
    bin_statistics,
    equal_width_edges,
    nixon_even_bins,
)
from .dirichlet_kernel import (
    DirichletKernel,
    log_kernel_matrix,
    loo_log_likelihood,
    select_bandwidth,
)
from .nadaraya_watson import NadarayaWatson, epanechnikov_kernel, gaussian_kernel
from .quadratic_cost import (
    REFUSE_SECONDS,
    WARN_SECONDS,
    CalibrationCostWarning,
    check_quadratic_cost,
)

__all__ = [
    "nixon_even_bins",
    "Binning",
    "BinStatistics",
    "EqualWidth",
    "EqualMass",
    "FixedEdges",
    "KDTree",
    "bin_statistics",
    "equal_width_edges",
    "NadarayaWatson",
    "gaussian_kernel",
    "epanechnikov_kernel",
    "DirichletKernel",
    "log_kernel_matrix",
    "loo_log_likelihood",
    "select_bandwidth",
    "CalibrationCostWarning",
    "check_quadratic_cost",
    "WARN_SECONDS",
    "REFUSE_SECONDS",
]
