"""The registry of named metrics: one row per metric, read by every part that lists metrics.

A named metric reaches users through several doors: its function, the mergeable
state (:meth:`calipers.CalibrationState.for_metric`), Dask
(``calipers.stream.dask``), the command line (``calipers table``, ``--chunk-rows``,
``calipers sweep --metrics``), the fast bootstrap of
:func:`calipers.confidence_interval` and the report. Each door reads the row of
the metric here instead of keeping its own list of names, so a metric is added
in one place.

A row (:class:`MetricSpec`) says:

* ``name`` (the name on the command line, in tables, JSON and ``for_metric``),
  ``aliases`` and ``label`` (the column header);
* ``function``: the public function;
* ``pipeline``: for a preset of :func:`calipers.calibration_error` (Kirchenbauer,
  Oaks & Heim 2022), the factory of its pipeline parts (lens, selection,
  estimator, divergence, aggregation) from the preset's parameters, the one
  place where the preset's pipeline is written;
* ``streaming``: how a :class:`~calipers.CalibrationState` accumulates it:
  ``"exact"`` (fixed bins: per-bin totals add up), ``"equal_mass"`` (equal-mass
  bins of Nixon et al. 2019: within a printed bound in one pass, exact after a
  second) or ``None``; ``not_streamed`` says why not, or what to use instead;
* ``resampler``: the name of its vectorised form in the bootstrap engine
  (:mod:`calipers.inference`), with the keyword arguments that form accepts;
* ``table`` and ``sweep``: whether it is a column of the standard calibration
  table and a choice of ``calipers sweep --metrics``.

Adding a metric: write its function (and, for a binned preset, its pipeline
factory in :mod:`calipers.metrics.binned`), add its row to :data:`METRICS`, export
the function from :mod:`calipers.metrics` and document it on its API page. The
state, Dask, the command line and the bootstrap then know it.

Examples
--------
>>> from calipers.metrics.registry import METRICS, get, names
>>> get("ece").label, get("ece").streaming
('ECE', 'exact')
>>> names(table=True)[:5]
['accuracy', 'nll', 'brier', 'ece', 'ace']
>>> get("dirichlet").name          # an alias
'ce_kl'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..estimators.binning import EqualWidth
from ..validation import CalibrationInputError
from . import binned
from ._calibration_sharpness import confidence_calibration_error
from ._kde_calibration_error import kde_calibration_error
from ._mmce import mmce
from ._proper_calibration_error import ce_kl, ce_squared_l2
from ._skce import skce
from .kolmogorov_smirnov import ks_calibration_error
from .scores import accuracy, brier, nll
from .smooth_ece import smece
from .upper_bound import rbs

__all__ = ["MetricSpec", "METRICS", "get", "names", "of_function"]

Streaming = Literal["exact", "equal_mass"]


@dataclass(frozen=True)
class MetricSpec:
    """One named metric: its function, pipeline, and how each part of calipers handles it.

    Attributes
    ----------
    name : str
        The metric's name on the command line, in tables and JSON, and in
        :meth:`calipers.CalibrationState.for_metric`.
    label : str
        Its column header in tables and reports.
    function : callable
        The public function ``f(probs, labels, **kwargs)``.
    pipeline : callable, optional
        For a preset of :func:`calipers.calibration_error`: ``pipeline(**params)``
        returns the keyword arguments (lens, selection, estimator, divergence,
        aggregate, class_aggregate) that the preset passes, from the preset's own
        parameters that choose them (``n_bins``, ``threshold``, ...).
    streaming : {"exact", "equal_mass"} or None
        How a :class:`~calipers.CalibrationState` accumulates the metric; None:
        it does not.
    not_streamed : str, optional
        Why it cannot be streamed (and what to use instead), or, for
        ``"equal_mass"``, what a one-pass stream cannot give exactly.
    stream_estimator : callable, optional
        ``stream_estimator(n_bins)``: the bins that
        :meth:`~calipers.CalibrationState.for_metric` gives its state in place of
        the preset's default: a k-d tree cannot be streamed (``top_k_ece``), and
        ``for_metric("rmsce")`` is the one-pass equal-width RMSCE. The tables
        (``calipers table``, Dask) build their states from ``pipeline`` alone, so
        their numbers are the function's.
    resampler : str, optional
        The name of its vectorised form in the bootstrap engine
        (``calipers.inference._resampling``); None: the generic evaluator.
    resampler_kwargs : frozenset of str
        The keyword arguments that vectorised form reproduces.
    table : bool
        A column of the standard calibration table (``calipers table``), in the
        order of :data:`METRICS`.
    sweep : bool
        A choice of ``calipers sweep --metrics``.
    aliases : tuple of str
        Other names accepted for it.
    report : str, optional
        Its column key in :func:`calipers.report` (the report's JSON keeps the keys
        it has always had, e.g. ``"ce_l2sq"``); None: not in the report. The
        report's columns follow the order of :data:`METRICS`.
    """

    name: str
    label: str
    function: Callable[..., Any]
    pipeline: Callable[..., dict[str, Any]] | None = None
    streaming: Streaming | None = None
    not_streamed: str | None = None
    stream_estimator: Callable[[int], Any] | None = None
    resampler: str | None = None
    resampler_kwargs: frozenset[str] = frozenset()
    table: bool = False
    sweep: bool = True
    aliases: tuple[str, ...] = ()
    report: str | None = None

    def parts(self, **params: Any) -> dict[str, Any]:
        """The pipeline parts of this preset for its parameters ``params``.

        Raises
        ------
        CalibrationInputError
            The metric is not a preset of :func:`calipers.calibration_error`.

        Examples
        --------
        >>> from calipers.metrics.registry import get
        >>> get("mce").parts(n_bins=10)["aggregate"]
        'max'
        """
        if self.pipeline is None:
            raise CalibrationInputError(
                f"{self.name} is not a preset of calibration_error: it has no pipeline parts"
            )
        return self.pipeline(**params)


_SUBSAMPLE = (
    "compute it on a seeded subsample, e.g. rows numpy.random.default_rng(0).choice(n, m, "
    "replace=False)"
)
_PAIRS = (
    "it sums a kernel over all pairs of rows (Popordanoska et al. 2024 for the Dirichlet-kernel "
    "CE; Widmann et al. 2019 for the SKCE), so no per-row totals add up to it; "
)
_EQUAL_WIDTH = EqualWidth  # a class is a callable n_bins -> bins


def _rows() -> tuple[MetricSpec, ...]:
    b = binned
    return (
        # the standard calibration table, in its column order
        MetricSpec(
            "accuracy", "accuracy", accuracy, resampler="accuracy", table=True, report="accuracy"
        ),
        MetricSpec(
            "nll",
            "NLL",
            nll,
            resampler="nll",
            resampler_kwargs=frozenset({"clip"}),
            table=True,
            report="nll",
        ),
        MetricSpec(
            "brier",
            "Brier",
            brier,
            resampler="brier",
            resampler_kwargs=frozenset({"reduction"}),
            table=True,
            report="brier",
        ),
        MetricSpec("rbs", "RBS", rbs, report="rbs"),
        MetricSpec(
            "ece",
            "ECE",
            b.ece,
            b.ece_pipeline,
            "exact",
            resampler="fixed_bins",
            resampler_kwargs=frozenset({"lens", "n_bins", "edge_rule"}),
            table=True,
            report="ece",
        ),
        MetricSpec(
            "ace",
            "ACE",
            b.ace,
            b.ace_pipeline,
            "equal_mass",
            "equal-mass ranges",
            resampler="classwise_equal_mass",
            resampler_kwargs=frozenset({"n_bins"}),
            table=True,
            report="ace",
        ),
        MetricSpec("sce", "SCE", b.sce, b.sce_pipeline, "exact", table=True),
        MetricSpec(
            "tace",
            "TACE",
            b.tace,
            b.tace_pipeline,
            "equal_mass",
            "equal-mass ranges",
            resampler="classwise_equal_mass",
            resampler_kwargs=frozenset({"n_bins", "threshold"}),
            table=True,
        ),
        MetricSpec("mce", "MCE", b.mce, b.mce_pipeline, "exact", table=True),
        MetricSpec(
            "rmsce",
            "RMSCE",
            b.rmsce,
            b.rmsce_pipeline,
            "equal_mass",
            "equal-mass bins",
            stream_estimator=_EQUAL_WIDTH,
            table=True,
        ),
        MetricSpec(
            "classwise_ece",
            "classwise ECE",
            b.classwise_ece,
            b.classwise_ece_pipeline,
            "exact",
            table=True,
        ),
        MetricSpec(
            "bin_averaged_ece",
            "bin-avg ECE",
            b.bin_averaged_ece,
            b.bin_averaged_ece_pipeline,
            "exact",
            table=True,
            sweep=False,
        ),
        # other binned presets
        MetricSpec(
            "top_label_ece", "top-label ECE", b.top_label_ece, b.top_label_ece_pipeline, "exact"
        ),
        MetricSpec(
            "top_k_ece",
            "top-k ECE",
            b.top_k_ece,
            b.top_k_ece_pipeline,
            "exact",
            stream_estimator=_EQUAL_WIDTH,
            sweep=False,
        ),
        MetricSpec("full_ece", "full ECE", b.full_ece, b.full_ece_pipeline),
        MetricSpec("tce_p", "TCE_p", b.tce_p, b.tce_p_pipeline, "exact", sweep=False),
        MetricSpec("cwce_p", "CWCE_p", b.cwce_p, b.cwce_p_pipeline, "exact", sweep=False),
        MetricSpec("ce_p", "CE_p", b.ce_p, b.ce_p_pipeline, sweep=False),
        # kernel and binning-free errors
        MetricSpec(
            "smece",
            "SmoothECE",
            smece,
            not_streamed="use calipers.stream.SmoothECEState, which streams the kernel-grid masses",
            resampler="smooth_ece",
            resampler_kwargs=frozenset({"lens", "bandwidth"}),
            aliases=("smooth_ece",),
            report="smece",
        ),
        MetricSpec(
            "kde",
            "KDE CE",
            kde_calibration_error,
            not_streamed=_PAIRS + _SUBSAMPLE,
            aliases=("kde_calibration_error",),
        ),
        MetricSpec(
            "ks",
            "KS CE",
            ks_calibration_error,
            not_streamed="the KS calibration error (Gupta et al. 2021) is a maximum over the "
            "cumulative sums of all rows sorted by score; " + _SUBSAMPLE,
            aliases=("ks_calibration_error",),
        ),
        MetricSpec(
            "cce",
            "CCE",
            confidence_calibration_error,
            not_streamed="use calipers.stream.CalibrationSharpnessState, which streams the "
            "Nadaraya-Watson grid masses (Chidambaram & Ge 2024)",
            aliases=("confidence_calibration_error", "calibration_sharpness"),
        ),
        MetricSpec(
            "ce_kl",
            "CE_KL",
            ce_kl,
            not_streamed=_PAIRS + _SUBSAMPLE,
            aliases=("dirichlet", "dirichlet_kernel"),
            report="ce_kl",
        ),
        MetricSpec(
            "ce_squared_l2",
            "CE_2^2",
            ce_squared_l2,
            not_streamed=_PAIRS + _SUBSAMPLE,
            aliases=("ce2", "ce_2"),
            report="ce_l2sq",
        ),
        MetricSpec(
            "skce",
            "SKCE",
            skce,
            not_streamed=_PAIRS
            + _SUBSAMPLE
            + ", or use calipers.skce(..., estimator='block'), which is linear (a mean over "
            "disjoint blocks of rows: chunks cut at block boundaries average to it)",
            sweep=False,
            aliases=("skce_unbiased", "skce_biased"),
        ),
        MetricSpec("mmce", "MMCE", mmce, sweep=False),
    )


#: Every named metric, by name, in the order of the calibration table and then
#: the other presets and the kernel errors.
METRICS: dict[str, MetricSpec] = {m.name: m for m in _rows()}

_ALIASES: dict[str, str] = {a: m.name for m in METRICS.values() for a in m.aliases}


def get(name: str) -> MetricSpec:
    """The row of the metric called ``name`` (or one of its aliases).

    Raises
    ------
    CalibrationInputError
        No metric of that name; the message lists the known names.

    Examples
    --------
    >>> from calipers.metrics.registry import get
    >>> get("tace").pipeline(n_bins=10)["selection"]
    ScoreInterval(low=0.01, high=inf, closed='right', dim=0)
    >>> get("no such")
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: unknown metric 'no such'; known: accuracy, ...
    """
    spec = METRICS.get(_ALIASES.get(name, name)) if isinstance(name, str) else None
    if spec is None:
        raise CalibrationInputError(f"unknown metric {name!r}; known: {', '.join(METRICS)}")
    return spec


def of_function(function: Callable[..., Any]) -> MetricSpec | None:
    """The row whose function is ``function`` (the same object), or None.

    Examples
    --------
    >>> import calipers as cp
    >>> from calipers.metrics.registry import of_function
    >>> of_function(cp.tace).name, of_function(print)
    ('tace', None)
    """
    return next((m for m in METRICS.values() if m.function is function), None)


def names(
    *,
    table: bool | None = None,
    sweep: bool | None = None,
    streaming: Streaming | Literal["any"] | None = None,
    preset: bool | None = None,
) -> list[str]:
    """The names of the metrics with the given properties, in registry order.

    ``None`` does not filter; ``streaming="any"`` keeps the streamable ones;
    ``preset=True`` keeps the presets of :func:`calipers.calibration_error`.

    Examples
    --------
    >>> from calipers.metrics.registry import names
    >>> names(table=True, streaming="exact")
    ['ece', 'sce', 'mce', 'classwise_ece', 'bin_averaged_ece']
    """
    out = []
    for m in METRICS.values():
        if table is not None and m.table != table:
            continue
        if sweep is not None and m.sweep != sweep:
            continue
        if preset is not None and (m.pipeline is not None) != preset:
            continue
        if streaming == "any" and m.streaming is None:
            continue
        if streaming in ("exact", "equal_mass") and m.streaming != streaming:
            continue
        out.append(m.name)
    return out
