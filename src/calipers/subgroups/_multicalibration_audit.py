"""The multicalibration audit of Hébert-Johnson, Kim, Reingold & Rothblum (2018).

A predictor is multicalibrated with respect to a family ``C`` of subgroups when
it is calibrated on every group of ``C`` at every level of its predictions,
not only on average. With the predictions discretised into ``1 / lambda``
score bins ``v`` (the paper's lambda-discretisation), the audit measures every
cell (group ``S``, bin ``v``) and reports the largest violation:

* ``normalization="joint"`` (default): ``|E[(y - p) 1{x in S, p in v}]|``,
  the residual summed over the cell divided by all rows: the statistical
  query the paper's algorithm checks; a cell of small mass cannot show a
  large value, so no size threshold is needed;
* ``normalization="conditional"``: ``|E[y - p | x in S, p in v]|``, the
  quantity that alpha-multicalibration bounds by ``alpha`` for the groups
  with ``P(S) >= gamma`` (the paper exempts the cells of negligible mass
  within a group); here the groups with a share below ``gamma`` and the
  cells with fewer than ``min_cell_size`` rows are left out.

The noise level is the maximum of the same statistic over the whole family
when the labels are drawn from the predictions (seeded): what a perfectly
calibrated model with these predictions shows at this sample size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._docstrings import fill_doc
from ..estimators.binning import EqualWidth
from ..inference._resampling import numpy_predictions
from ..pipeline.lenses import lens_arrays
from ..validation import CalibrationInputError, check_integer, check_predictions
from ._calibration_by_group import frame_or_records
from ._family import build_family
from ._null import CellSums, monte_carlo_p_value, null_generator

__all__ = ["MulticalibrationAudit", "multicalibration_audit"]

NORMALIZATIONS = ("joint", "conditional")


@dataclass(frozen=True)
class MulticalibrationAudit:
    """The largest multicalibration violation, where it is, and the noise level.

    Returned by :func:`multicalibration_audit`.

    Attributes
    ----------
    violation : float
        The largest violation over the eligible cells (see ``normalization``).
    group : object
        The group of that cell.
    bin : int
        Its score bin (0 = lowest), covering ``(bin_lower, bin_upper]``
        (the first bin includes 0).
    bin_lower, bin_upper : float
        The bin's edges, ``bin / n_bins`` and ``(bin + 1) / n_bins``.
    n : int
        Rows in the cell.
    share : float
        The cell's share of the total weight, ``P(x in S, p in v)``.
    mean_predicted, observed_rate : float
        Weighted mean prediction and observed rate in the cell (their
        difference, ``observed_rate - mean_predicted``, is ``E[y - p | S, v]``).
    normalization : {"joint", "conditional"}
        ``|E[(y - p) 1{S, v}]|`` or ``|E[y - p | S, v]|``.
    n_bins : int
        Score bins (``1 / lambda``).
    n_groups, n_cells : int
        Groups in the family and eligible non-empty cells.
    null_mean, null_q95 : float
        Mean and 95th percentile of the largest violation over the family
        under labels drawn from the predictions.
    p_value : float
        ``(1 + #{null >= violation}) / (1 + n_null)``.
    n_null : int
        Draws behind the noise level.
    """

    violation: float
    group: Any
    bin: int
    bin_lower: float
    bin_upper: float
    n: int
    share: float
    mean_predicted: float
    observed_rate: float
    normalization: str
    n_bins: int
    n_groups: int
    n_cells: int
    null_mean: float
    null_q95: float
    p_value: float
    n_null: int
    null_distribution: np.ndarray = field(repr=False, compare=False)
    _cells: dict[str, np.ndarray] = field(repr=False, compare=False)

    def __post_init__(self) -> None:
        a = np.array(self.null_distribution, dtype=np.float64)
        a.setflags(write=False)
        object.__setattr__(self, "null_distribution", a)

    @property
    def exceeds_noise(self) -> bool:
        """``violation > null_q95``: larger than 95 % of a calibrated model's largest violations."""
        return bool(self.violation > self.null_q95)

    def __str__(self) -> str:
        word = "exceeds" if self.exceeds_noise else "is within"
        return (
            f"largest {self.normalization} violation {self.violation:.4g} in group "
            f"{self.group!s}, scores ({self.bin_lower:g}, {self.bin_upper:g}] (n = {self.n}: "
            f"predicted {self.mean_predicted:.3f}, observed {self.observed_rate:.3f}); a "
            f"calibrated model's largest: mean {self.null_mean:.4g}, 95th percentile "
            f"{self.null_q95:.4g} (p = {self.p_value:.3g}); the violation {word} the noise"
        )

    def table(self, as_frame: bool | None = None) -> Any:
        """Every non-empty cell: group, bin, edges, n, share, means, violation, eligible.

        A pandas DataFrame (``as_frame=True``, or by default when pandas is
        installed), else a NumPy record array; largest violation first.
        """
        c = self._cells
        order = np.argsort(-np.where(c["eligible"], c["violation"], -1.0), kind="stable")
        return frame_or_records({k: v[order] for k, v in c.items()}, as_frame)

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values of the summary (JSON-ready; the cells are in ``table()``)."""
        g = self.group
        out: dict[str, Any] = {
            k: getattr(self, k)
            for k in (
                "violation",
                "bin",
                "bin_lower",
                "bin_upper",
                "n",
                "share",
                "mean_predicted",
                "observed_rate",
                "normalization",
                "n_bins",
                "n_groups",
                "n_cells",
                "null_mean",
                "null_q95",
                "p_value",
                "n_null",
            )
        }
        out["group"] = g.item() if isinstance(g, np.generic) else g
        out["exceeds_noise"] = self.exceeds_noise
        return out


def _fraction(v: Any, name: str) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        f = float("nan")
    if not 0.0 <= f < 1.0:
        raise CalibrationInputError(f"{name} must be a number in [0, 1); got {v!r}")
    return f


@fill_doc
def multicalibration_audit(
    probs: Any,
    labels: Any = None,
    *,
    groups: Any = None,
    attributes: Any = None,
    masks: Any = None,
    features: Any = None,
    n_thresholds: int = 4,
    combine: str = "both",
    include_all: bool = True,
    n_bins: int = 10,
    normalization: str = "joint",
    gamma: float = 0.0,
    min_size: int = 1,
    min_cell_size: int = 1,
    n_null: int = 1000,
    seed: int | None = 0,
    lens: str = "auto",
    sample_weight: Any = None,
    logits: bool = False,
    classes: Any = None,
) -> MulticalibrationAudit:
    """Largest calibration violation over a family of subgroups and score bins (Hébert-Johnson et al. 2018).

    Hébert-Johnson, Kim, Reingold & Rothblum (2018), "Multicalibration:
    calibration for the (computationally-identifiable) masses" (ICML): a
    predictor ``p`` is multicalibrated with respect to a family ``C`` of
    subgroups when ``E[y - p | x in S, p in v]`` is small for every ``S`` in
    ``C`` and every level ``v`` of the predictions. The predictions are
    discretised into ``n_bins`` equal-width score bins (``lambda = 1 /
    n_bins``, bins ``(j lambda, (j + 1) lambda]``, the first including 0) and
    every non-empty cell (group, bin) is measured:

    * ``normalization="joint"``: ``|sum_{i in S, p_i in v} w_i (y_i - p_i)| /
      sum_i w_i``, the estimate of ``|E[(y - p) 1{x in S, p in v}]|``, the
      statistical query the paper's algorithm checks against ``alpha``. It
      weighs a cell by its mass, so small cells need no threshold.
    * ``normalization="conditional"``: ``|E[y - p | x in S, p in v]|``,
      what alpha-multicalibration bounds by ``alpha`` for the groups with
      ``P(S) >= gamma``; the cells of groups with a smaller share, and cells
      with fewer than ``min_cell_size`` rows, are left out (the paper exempts
      cells of negligible mass).

    The largest violation is reported with its group and bin, beside the
    noise level: the maximum of the same statistic over the whole family when
    every label is drawn from its prediction (``n_null`` seeded draws), i.e.
    what a perfectly calibrated model with these predictions shows at this
    sample size. ``exceeds_noise`` says whether the violation is larger than
    95 % of those maxima; ``p_value`` is the Monte-Carlo p-value of the
    maximum, so it is already corrected for the size of the family.

    For ``(n, k)`` probabilities the audit is of the top label (``p`` the
    confidence, ``y`` whether the prediction is right) unless ``lens="binary"``
    (``(n, 2)`` input: the positive class).

    Parameters
    ----------
    {probs}
    {labels}
    groups, attributes, masks, features, n_thresholds, combine
        The family of groups, as in :func:`calibration_by_group` (here
        ``combine="both"`` by default: every attribute and every intersection).
    include_all : bool, default True
        Add the whole population (group ``"all"``) to the family.
    n_bins : int, default 10
        Score bins, ``1 / lambda``.
    normalization : {"joint", "conditional"}, default "joint"
    gamma : float, default 0.0
        ``"conditional"`` only: the smallest share ``P(S)`` of a group audited.
    min_size : int, default 1
        Groups with fewer rows are left out of the family.
    min_cell_size : int, default 1
        ``"conditional"`` only: cells with fewer rows are left out.
    n_null : int, default 1000
        Draws of labels from the predictions (at least 1).
    seed : int or None, default 0
        Seed of the draws: ``numpy.random.default_rng([seed, 1])``, a stream
        apart from ``default_rng(seed)``, which your predictions may come from.
    lens : {"auto", "binary", "top_label"}, default "auto"
        ``"auto"``: P(y = 1) for 1-D input, the top label for ``(n, k)``.
    {sample_weight}
    {logits}
    {classes}

    Returns
    -------
    MulticalibrationAudit

    Raises
    ------
    CalibrationInputError
        No groups, groups of the wrong length, empty masks, bad options, or no
        eligible cell.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers.subgroups import multicalibration_audit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=5000)
    >>> a, b = rng.integers(0, 2, 5000), rng.integers(0, 2, 5000)
    >>> # calibrated on a = 0 and on b = 0; too high where a = 1 and b = 1
    >>> q = np.where((a == 1) & (b == 1), np.clip(p + 0.2, 0, 1), p)
    >>> y = (rng.uniform(size=5000) < p).astype(int)
    >>> audit = multicalibration_audit(q, y, attributes={"a": a, "b": b}, n_null=200)
    >>> audit.group, audit.bin, round(audit.violation, 4), round(audit.null_q95, 4)
    ('all', 9, 0.0148, 0.0056)
    >>> audit = multicalibration_audit(q, y, attributes={"a": a, "b": b}, n_null=200,
    ...                                normalization="conditional", min_cell_size=20)
    >>> audit.group, audit.bin, round(audit.violation, 4), audit.exceeds_noise
    ('a=1 & b=1', 5, 0.2397, True)

    The joint violation weighs a cell by its mass, so the largest one lies in
    the whole population's top bin, where the shifted risks pile up; the
    conditional one finds the intersection.
    """
    P = numpy_predictions(
        check_predictions(
            probs, labels, sample_weight=sample_weight, logits=logits, classes=classes
        )
    )
    n = P.n_samples
    if normalization not in NORMALIZATIONS:
        raise CalibrationInputError(
            f"normalization must be 'joint' or 'conditional'; got {normalization!r}"
        )
    if lens not in ("auto", "binary", "top_label"):
        raise CalibrationInputError(f"lens must be 'auto', 'binary' or 'top_label'; got {lens!r}")
    if not isinstance(include_all, (bool, np.bool_)):
        raise CalibrationInputError(f"include_all must be True or False; got {include_all!r}")
    nb = check_integer(n_bins, "n_bins", minimum=1, maximum=1 << 16)
    g0 = _fraction(gamma, "gamma")
    mc = check_integer(min_cell_size, "min_cell_size", minimum=1)
    D = check_integer(n_null, "n_null", minimum=1, maximum=10**6)
    if seed is not None and (
        isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0
    ):
        raise CalibrationInputError(f"seed must be a non-negative integer or None; got {seed!r}")
    family = build_family(
        n,
        groups=groups,
        attributes=attributes,
        masks=masks,
        features=features,
        n_thresholds=n_thresholds,
        combine=combine,
        min_size=min_size,
    )
    names = list(family.names)
    rows = list(family.rows)
    if include_all:
        names.append("all")
        rows.append(np.arange(n))
    s, t, w1 = lens_arrays(P, lens)
    w = w1 if P.sample_weight is None else np.asarray(P.sample_weight, dtype=np.float64)
    ids, _ = EqualWidth(nb, "right").assign(s, None)
    cells = CellSums(rows, np.asarray(ids, dtype=np.int64), nb, s, w)
    W = float(np.sum(w))
    group_share = cells.group_weight / W  # every group has rows, hence cells, in order
    if normalization == "joint":
        denom = np.full(cells.cell_weight.shape, W)
        eligible = np.ones(cells.cell_weight.shape, dtype=bool)
    else:
        denom = cells.cell_weight
        eligible = (group_share[cells.cell_group] >= g0) & (cells.cell_count >= mc)
        eligible &= cells.cell_weight > 0
    if not eligible.any():
        raise CalibrationInputError(
            f"no cell is audited: no group has a share >= gamma = {g0} with a score bin of "
            f"min_cell_size = {mc} rows or more; lower gamma or min_cell_size"
        )
    safe = np.where(denom > 0, denom, 1.0)
    observed = cells.sums(t[None, :])[0]
    violation = np.where(eligible, np.abs(observed) / safe, np.nan)
    k = int(np.nanargmax(violation))
    rng = null_generator(None if seed is None else int(seed))
    null = np.empty(D)
    done = 0
    step = cells.batch(D)
    while done < D:
        b = min(step, D - done)
        U = rng.random((b, n))
        S = np.abs(cells.sums((U < s).astype(np.float64))) / safe
        null[done : done + b] = np.max(S[:, eligible], axis=1)
        done += b
    cw = cells.cell_weight
    mean_pred = np.divide(cells.cell_score, cw, out=np.full(cw.shape, np.nan), where=cw > 0)
    events = cells._sum(w * t)
    obs_rate = np.divide(events, cw, out=np.full(cw.shape, np.nan), where=cw > 0)
    group_names = np.empty(len(names), dtype=object)
    group_names[:] = names
    table = {
        "group": group_names[cells.cell_group],
        "bin": cells.cell_bin.astype(np.int64),
        "bin_lower": cells.cell_bin / nb,
        "bin_upper": (cells.cell_bin + 1) / nb,
        "n": cells.cell_count.astype(np.int64),
        "share": cw / W,
        "mean_predicted": mean_pred,
        "observed_rate": obs_rate,
        "violation": np.where(eligible, np.abs(observed) / safe, np.nan),
        "eligible": eligible,
    }
    vk = float(violation[k])
    return MulticalibrationAudit(
        violation=vk,
        group=names[int(cells.cell_group[k])],
        bin=int(cells.cell_bin[k]),
        bin_lower=float(cells.cell_bin[k] / nb),
        bin_upper=float((cells.cell_bin[k] + 1) / nb),
        n=int(cells.cell_count[k]),
        share=float(cw[k] / W),
        mean_predicted=float(mean_pred[k]),
        observed_rate=float(obs_rate[k]),
        normalization=normalization,
        n_bins=nb,
        n_groups=len(rows),
        n_cells=int(np.count_nonzero(eligible)),
        null_mean=float(np.mean(null)),
        null_q95=float(np.quantile(null, 0.95)),
        p_value=monte_carlo_p_value(vk, null),
        n_null=D,
        null_distribution=null,
        _cells=table,
    )
