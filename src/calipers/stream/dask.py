"""Binned calibration metrics on Dask arrays, Dask DataFrames and partitioned Parquet data.

Every partition (a block of rows) is reduced in parallel to a
:class:`~calipers.stream.calibration_state.CalibrationState`: the per-bin totals of
the histogram estimate of Kirchenbauer, Oaks & Heim (2022) eq. 3 and the
running sums of accuracy, NLL and Brier score. The partition states are then
added in a tree (``split_every`` at a time) and the merged state gives the
in-memory value: the ECE and MCE of Guo et al. (2017) (eq. 5 and the largest
bin gap), the static calibration error of Nixon et al. (2019), the class-wise
ECE of Kull et al. (2019), NLL, Brier score, the Murphy decomposition and the
reliability table. Bin totals only add, so the merged result differs from
:func:`calipers.ece` & co. on the concatenated rows only by the order of the
float64 additions (a relative difference of about 1e-15; the tests allow
1e-12). The equal-mass bins of Nixon et al. (2019, §4) (ACE, TACE) take a
second pass over the partitions, which collects the rows near the bin edges
and makes them exact as well (:meth:`CalibrationState.refine
<calipers.stream.calibration_state.CalibrationState.refine>`). See
:class:`~calipers.stream.calibration_state.CalibrationState` for the supported presets.

A state travels between workers as its JSON text
(:meth:`~calipers.stream.calibration_state.CalibrationState.to_json`: plain lists and
exact hexadecimal floats), never as a pickled object of calipers.

Functions
---------
:func:`calibration_states`
    Dask arrays of probabilities (or logits), labels and optional weights,
    chunked along the rows only, to one merged state per metric.
:func:`calibration_error`, :func:`ece`
    One number, as :func:`calipers.calibration_error` and :func:`calipers.ece`.
:func:`dataframe_states`
    A Dask DataFrame with a label column and one column per class (the column
    conventions of :mod:`calipers.io`: ``p0, p1, ...``, ``logit_0, ...``,
    a column named ``label``, ``y``, ``target``, ...).
:func:`read_parquet_states`
    A partitioned Parquet data set (``dask.dataframe.read_parquet``), on a
    running Dask scheduler, a local cluster of ``workers`` processes, or
    Dask's default scheduler.
:func:`table_row`
    The streamable columns of the standard calibration table for a Parquet
    data set: what the command line prints per model.

Where to compute is chosen with ``scheduler=``: ``None`` (Dask's default,
or the ``distributed.Client`` made current), a local scheduler name
(``"synchronous"``, ``"threads"``, ``"processes"``), a ``distributed.Client``,
or, for :func:`read_parquet_states` and :func:`table_row`, a scheduler address
such as ``"tcp://10.0.0.5:8786"``.

A script that starts a local cluster (``workers=``, or its own
``distributed.LocalCluster``) must do it under ``if __name__ == "__main__":``.
Dask's worker processes are started with Python's ``spawn`` method, which
runs the main script again in each of them; unguarded, every worker would
start a cluster of its own. calipers stops such a worker at once with one
line naming the guard, and the call in the script raises
:class:`RuntimeError`::

    import calipers.stream.dask as cpd

    if __name__ == "__main__":
        row = cpd.table_row("predictions.parquet", workers=4, progress=True)
        print(row["ece"])

This module needs Dask (``pip install 'calipers[dask]'``); ``import calipers``
does not import it, and Dask is imported on the first call.

Examples
--------
>>> import numpy as np
>>> import dask.array as da
>>> import calipers as cp
>>> import calipers.stream.dask as cpd
>>> rng = np.random.default_rng(0)
>>> P = rng.dirichlet(np.ones(3), size=1000)
>>> y = rng.integers(0, 3, size=1000)
>>> dP = da.from_array(P, chunks=(300, 3))
>>> dy = da.from_array(y, chunks=300)
>>> states = cpd.calibration_states(dP, dy, ["ece", "classwise_ece"], scheduler="synchronous")
>>> bool(np.isclose(states["ece"].compute(), cp.ece(P, y), rtol=1e-12, atol=0))
True
>>> bool(np.isclose(states["ece"].nll(), cp.nll(P, y), rtol=1e-12, atol=0))
True
"""

from __future__ import annotations

import importlib
import json
import math
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import reduce
from pathlib import Path
from typing import Any

import numpy as np

from ..estimators.binning import Binning
from ..io.chunks import _file_positions
from ..io.columns import _class_order, _column_roles, _labels_from_floats, _labels_from_strings
from ..io.keys import LABELS_KEYS
from ..io.parquet import _import_pyarrow
from ..metrics import registry
from ..pipeline.divergences import Divergence
from ..pipeline.lenses import Lens
from ..pipeline.selection import Selection
from ..validation import CalibrationInputError, check_predictions
from .calibration_state import CalibrationState

__all__ = [
    "calibration_states",
    "calibration_error",
    "ece",
    "dataframe_states",
    "read_parquet_states",
    "table_row",
]

#: the local schedulers of Dask, passed to ``dask.compute(scheduler=...)`` as they are
_LOCAL_SCHEDULERS = ("synchronous", "sync", "single-threaded", "threads", "threading", "processes")

#: the metric columns of the command line's calibration table (same keys, same order):
#: the binned presets among the table's columns in the metric registry
_TABLE_METRICS = tuple(registry.names(table=True, preset=True))

#: a partition's result: its number of rows and, per metric, the state's ``to_json()``
#: (first pass) or the rows near the equal-mass bin edges, per slice (second pass)
_Partial = tuple[int, dict[str, Any]]


# ----------------------------------------------------------------------------- dask imports


def _import(name: str) -> Any:
    """Import a Dask module on first use, with the install hint when it is missing."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(
            f"calipers.stream.dask needs {name.split('.')[0]} ({name}): pip install 'calipers[dask]'"
        ) from None


# ----------------------------------------------------------------------------- metrics


def _templates(
    metrics: str | Sequence[str] | Mapping[str, CalibrationState], n_bins: int
) -> dict[str, str]:
    """One empty state (as ``to_json``) per metric name or given state."""
    if isinstance(metrics, str):
        metrics = [metrics]
    items: list[tuple[str, CalibrationState]]
    if isinstance(metrics, Mapping):
        if not metrics:
            raise TypeError("metrics must name at least one metric; got an empty mapping")
        items = []
        for name, st in metrics.items():
            if not isinstance(st, CalibrationState):
                raise TypeError(
                    f"metrics[{name!r}] must be a CalibrationState (a template); got "
                    f"{type(st).__name__}"
                )
            if st.slices or st.totals[0] != 0 or st.n_classes is not None:
                raise CalibrationInputError(
                    f"metrics[{name!r}] already holds data; give an empty CalibrationState "
                    "(its configuration is used, its totals would be counted twice)"
                )
            items.append((str(name), st))
    else:
        names = list(metrics)
        if not names or not all(isinstance(m, str) for m in names):
            raise TypeError(
                f"metrics must be a metric name, a non-empty list of names or a mapping of "
                f"names to CalibrationState; got {metrics!r}"
            )
        items = [(m, CalibrationState.for_metric(m, n_bins=n_bins)) for m in names]
    return {name: st.to_json() for name, st in items}


def _is_equal_mass(config: dict[str, Any]) -> bool:
    return "equal_mass" in config["estimator"]


def _update(
    templates: dict[str, str],
    probs: Any,
    labels: Any,
    weights: Any,
    logits: bool,
    where: str,
    second: bool,
    start: int = 0,
) -> _Partial:
    """The states of one partition (the task run on a worker).

    ``start``: rows before the partition, when known; the rows a message names
    are then rows of the whole array (as :func:`calipers.check_predictions` on
    all of it would name them).

    First pass: ``update`` empty states. Second pass (equal-mass bins only):
    ``refine`` the merged first-pass states with the partition's rows, and send
    back only the rows it collected (scores, targets, weights per slice), not
    the first-pass totals every partition shares.
    """
    n = int(np.shape(probs)[0])
    n_labels = int(np.shape(labels)[0])
    if n_labels != n or (weights is not None and int(np.shape(weights)[0]) != n):
        nw = "" if weights is None else f", sample_weight {int(np.shape(weights)[0])}"
        raise CalibrationInputError(
            f"{where}: probs has {n} rows but labels {n_labels}{nw}; the arrays must have the "
            "same rows in every chunk"
        )
    if second and n == 0:
        return 0, {}
    # a partition whose weights are all zero is valid (the whole data set may have weight)
    # but CalibrationState.update refuses it: its rows are counted, its weighted sums are 0
    zero = weights is not None and n > 0 and not np.any(np.asarray(weights) != 0)
    out: dict[str, Any] = {}
    try:
        states = {name: CalibrationState.from_json(d) for name, d in templates.items()}
        if zero and any(_is_equal_mass(st.config) for st in states.values()):
            name = next(m for m, st in states.items() if _is_equal_mass(st.config))
            raise CalibrationInputError(
                "every row of this partition has weight 0, which the equal-mass bins of "
                f"{name!r} cannot take; repartition so that each partition has weight"
            )
        if n == 0:
            return 0, dict(templates)
        # validated once (as the streamed command line does), not once per metric
        P = check_predictions(probs, labels, logits=logits, sample_weight=None if zero else weights)
        if second:
            return n, {name: st.refine(P, None).edge_rows for name, st in states.items()}
        # states that differ only in how the bins are aggregated (ECE, MCE, bin-averaged
        # ECE) hold the same totals: one is updated, the others take its content
        done: dict[str, CalibrationState] = {}
        for name, st in states.items():
            key = _totals_key(st)
            if key in done:
                st = CalibrationState.from_dict({**done[key].to_dict(), "config": st.config})
            else:
                st.update(P, None)
                if zero:
                    _zero_weights(st)
                done[key] = st
            out[name] = st.to_json()
    except CalibrationInputError as exc:
        raise CalibrationInputError(f"{where}: {_file_positions(str(exc), start)}") from None
    return n, out


def _totals_key(st: CalibrationState) -> str:
    """The configuration of ``st`` without its bin aggregation: equal keys, equal totals."""
    return json.dumps({**st.config, "aggregate": None}, sort_keys=True)


def _zero_weights(st: CalibrationState) -> None:
    """The totals of rows of weight 0: the row counts stay, every weighted sum is 0."""
    for sl in st.slices.values():
        for f, a in sl.arrays.items():
            if f != "count":
                sl.arrays[f] = np.zeros_like(a)
    st.totals = np.zeros_like(st.totals)


def _merge(parts: Sequence[_Partial]) -> _Partial:
    """Add the states of several partitions (one node of the reduction tree)."""
    n = sum(p[0] for p in parts)
    merged = {
        name: reduce(
            CalibrationState.merge, [CalibrationState.from_json(p[1][name]) for p in parts]
        )
        for name in parts[0][1]
    }
    return n, {name: st.to_json() for name, st in merged.items()}


def _merge_rows(parts: Sequence[_Partial]) -> _Partial:
    """Concatenate the edge rows of several partitions (second pass)."""
    out: dict[str, dict[str, list[np.ndarray]]] = {}
    for _, rows in parts:
        for name, slices in rows.items():
            mine = out.setdefault(name, {})
            for sl, arrays in slices.items():
                old = mine.get(sl)
                mine[sl] = (
                    list(arrays)
                    if old is None
                    else [np.concatenate([u, v]) for u, v in zip(old, arrays, strict=True)]
                )
    return sum(p[0] for p in parts), out


def _tree_reduce(
    delayed: Any, merge: Callable[[Sequence[_Partial]], _Partial], leaves: list[Any], every: int
) -> Any:
    """Merge the partition results ``every`` at a time until one is left."""
    level = list(leaves)
    while len(level) > 1:
        level = [
            delayed(merge, pure=True)(level[i : i + every]) for i in range(0, len(level), every)
        ]
    return level[0]


class _Progress:
    """``label: pass 1 of 2, 3/9 partitions`` on stderr, at most once a second (and the last)."""

    def __init__(self, label: str, n_passes: int) -> None:
        self.label, self.n_passes, self.last = label, n_passes, -math.inf

    def __call__(self, pass_no: int, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < 1.0:
            return
        self.last = now
        of = f"pass {pass_no} of {self.n_passes}, " if self.n_passes > 1 else ""
        print(f"calipers: {self.label}: {of}{done}/{total} partitions", file=sys.stderr, flush=True)


def _passes(
    leaf: Callable[[dict[str, str], bool, int], Any],
    n_blocks: int,
    templates: dict[str, str],
    split_every: int,
    scheduler: Any,
    refine: bool,
    progress: str | None = None,
) -> tuple[int, dict[str, CalibrationState]]:
    """Run the first pass over the blocks, and the second one when equal-mass states need it.

    ``leaf(templates, second, i)`` is the delayed task of block ``i``. With
    ``progress`` (a label) and a ``distributed.Client``, the finished partitions
    of each pass are counted on stderr.
    """
    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        raise CalibrationInputError(f"split_every must be an integer >= 2; got {split_every!r}")
    two = refine and any(_is_equal_mass(json.loads(d)["config"]) for d in templates.values())
    tick = None if progress is None else _Progress(progress, 2 if two else 1)
    leaves = [leaf(templates, False, i) for i in range(n_blocks)]
    n, dicts = _reduce(leaves, _merge, split_every, scheduler, tick, 1)
    states = {name: CalibrationState.from_json(d) for name, d in dicts.items()}
    firsts = {
        name: d
        for name, d in dicts.items()
        if _is_equal_mass(states[name].config) and states[name].n_classes is not None
    }
    if refine and firsts:
        leaves = [leaf(firsts, True, i) for i in range(n_blocks)]
        _, rows = _reduce(leaves, _merge_rows, split_every, scheduler, tick, 2)
        for name, slices in rows.items():
            # the merge of refined states (CalibrationState.merge) without re-sending the
            # first-pass totals: the merged first pass plus every partition's edge rows
            states[name].edge_rows = slices
    return n, states


def _reduce(
    leaves: list[Any],
    merge: Callable[[Sequence[_Partial]], _Partial],
    every: int,
    scheduler: Any,
    tick: Callable[[int, int, int], None] | None,
    pass_no: int,
) -> _Partial:
    """The partition results merged ``every`` at a time, in a fixed tree (a fixed sum order).

    On a ``distributed.Client`` the leaves and the merges are submitted as
    futures, the merges running on the workers as soon as their inputs are
    done, and ``tick(pass_no, done, total)`` counts the finished partitions.
    """
    distributed = sys.modules.get("distributed")
    if distributed is None or not isinstance(scheduler, distributed.Client):
        delayed = _import("dask").delayed
        return _compute(_tree_reduce(delayed, merge, leaves, every), scheduler)
    futures = scheduler.compute(leaves)
    level = list(futures)
    while len(level) > 1:
        level = [
            scheduler.submit(merge, level[i : i + every], pure=False)
            for i in range(0, len(level), every)
        ]
    root = level[0]
    finished = distributed.as_completed(futures, loop=scheduler.loop)
    del futures, level  # a partition's result is dropped once its merge has it
    for done, _ in enumerate(finished, 1):
        if tick is not None:
            tick(pass_no, done, len(leaves))
    return root.result()  # type: ignore[no-any-return]


def _compute(graph: Any, scheduler: Any) -> _Partial:
    dask = _import("dask")
    if scheduler is None:
        (result,) = dask.compute(graph)
    else:
        if isinstance(scheduler, str) and scheduler not in _LOCAL_SCHEDULERS:
            raise CalibrationInputError(
                f"scheduler must be one of {list(_LOCAL_SCHEDULERS)}, a distributed.Client or "
                f"None here; got {scheduler!r} (a scheduler address is accepted by "
                "read_parquet_states and table_row, or connect with distributed.Client(address))"
            )
        (result,) = dask.compute(graph, scheduler=scheduler)
    return result  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- dask arrays


def _as_rows(da: Any, x: Any, name: str) -> Any:
    """``x`` as a Dask array (NumPy input is wrapped, nothing is copied or converted)."""
    arr = x if isinstance(x, da.Array) else da.asarray(x)
    if arr.ndim == 0:
        raise CalibrationInputError(f"{name} must have one entry per row; got a scalar")
    return arr


def _row_chunks(arr: Any, name: str) -> tuple[float, ...]:
    if arr.ndim == 2 and len(arr.chunks[1]) > 1:
        raise CalibrationInputError(
            f"{name} is chunked along its columns (column chunks {arr.chunks[1]}); every "
            f"partition needs whole rows: use {name}.rechunk({{1: -1}})"
        )
    return tuple(arr.chunks[0])


def _known(chunks: tuple[float, ...]) -> bool:
    return all(not (isinstance(c, float) and math.isnan(c)) for c in chunks)


def _aligned(arr: Any, name: str, target: tuple[float, ...], probs_rows: float) -> Any:
    """``arr`` with the row chunks of ``probs`` (rechunked when both are known)."""
    chunks = _row_chunks(arr, name)
    if len(chunks) == len(target) and all(
        a == b or not (_known((a,)) or _known((b,))) for a, b in zip(chunks, target, strict=True)
    ):
        return arr  # the same chunks; unknown sizes are checked in each task
    if _known(chunks) and _known(target):
        if sum(chunks) != probs_rows:
            raise CalibrationInputError(
                f"probs has {int(probs_rows)} rows but {name} has {int(sum(chunks))}; "
                "give one entry per row"
            )
        return arr.rechunk({0: target})
    raise CalibrationInputError(
        f"probs and {name} have unknown chunk sizes that differ ({target} and {chunks}); "
        "call .compute_chunk_sizes() on both, or build them from the same DataFrame partitions"
    )


def calibration_states(
    probs: Any,
    labels: Any,
    metrics: str | Sequence[str] | Mapping[str, CalibrationState] = ("ece",),
    *,
    sample_weight: Any = None,
    logits: bool = False,
    n_bins: int = 15,
    split_every: int = 8,
    scheduler: Any = None,
    refine: bool = True,
) -> dict[str, CalibrationState]:
    """Merged calibration states of Dask arrays, one per metric, computed partition by partition.

    Each row block of ``probs`` (with the matching blocks of ``labels`` and
    ``sample_weight``) is reduced on a worker to a
    :class:`~calipers.stream.calibration_state.CalibrationState` per metric, and the
    states are merged in a tree. The result's ``compute()`` is the binned
    estimate of Kirchenbauer, Oaks & Heim (2022) eq. 3 on all rows (e.g. the
    ECE of Guo et al. 2017, eq. 5), equal to the in-memory metric up to the
    order of float64 additions; ``accuracy()``, ``nll()``, ``brier()``,
    ``murphy_decomposition()`` and ``reliability_table()`` are available on
    every state.

    Parameters
    ----------
    probs : dask.array.Array, shape (n, k) or (n,)
        Probabilities (rows on the simplex) or, with ``logits=True``, logits;
        a 1-D array is P(y = 1) of a binary problem. Chunked along the rows
        only: column-chunked arrays are refused (``probs.rechunk({1: -1})``).
        A NumPy array is wrapped as one chunk.
    labels : dask.array.Array, shape (n,)
        Integer class indices ``0..k-1`` (0/1 for 1-D ``probs``). Rechunked to
        the row chunks of ``probs`` when they differ and both are known.
    metrics : str, sequence of str, or mapping of str to CalibrationState, default ("ece",)
        Names accepted by :meth:`CalibrationState.for_metric
        <calipers.stream.calibration_state.CalibrationState.for_metric>` (``"ece"``,
        ``"mce"``, ``"sce"``, ``"classwise_ece"``, ``"top_label_ece"``, ...),
        each with ``n_bins`` bins, or ``{name: empty_state}`` for any other
        configuration (only its configuration is used).
    sample_weight : dask.array.Array, shape (n,), optional
        Non-negative weight of each row; unweighted when None.
    logits : bool, default False
        Whether ``probs`` holds logits (softmax, or the sigmoid for 1-D input,
        is applied per row).
    n_bins : int, default 15
        Number of bins for metric names (ignored for given states).
    split_every : int, default 8
        How many partition states one task of the reduction tree adds.
    scheduler : None, str or distributed.Client, default None
        ``None`` uses Dask's default (the current ``distributed.Client`` if one
        exists); ``"synchronous"``, ``"threads"`` or ``"processes"`` a local
        scheduler; a ``distributed.Client`` its cluster.
    refine : bool, default True
        For states with the equal-mass bins of Nixon et al. (2019, §4)
        (``"ace"``, ``"tace"``, an ``EqualMass`` estimator): a second pass over
        the partitions (each is computed again; ``persist()`` the input to
        avoid reading it twice) collects the rows near the bin edges, and the
        result is exact. With False the one-pass value is returned, within
        its ``error_bound()``. Fixed bins always take one pass.

    Returns
    -------
    dict of str to CalibrationState
        The merged state of each metric, in the order given.

    Raises
    ------
    CalibrationInputError
        Column-chunked ``probs``, lengths that differ, or invalid values in a
        partition (the message names the partition and its rows).

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> import calipers as cp
    >>> from calipers.stream.dask import calibration_states
    >>> rng = np.random.default_rng(1)
    >>> p = rng.uniform(size=500)
    >>> y = (rng.uniform(size=500) < p).astype(int)
    >>> st = calibration_states(da.from_array(p, chunks=120), da.from_array(y, chunks=120),
    ...                         ["ece", "mce"], scheduler="synchronous")
    >>> bool(np.isclose(st["mce"].compute(), cp.mce(p, y), rtol=1e-12, atol=0))
    True
    """
    _, states = _array_states(
        probs, labels, metrics, sample_weight, logits, n_bins, split_every, scheduler, refine
    )
    return states


def _array_states(
    probs: Any,
    labels: Any,
    metrics: str | Sequence[str] | Mapping[str, CalibrationState],
    sample_weight: Any,
    logits: bool,
    n_bins: int,
    split_every: int,
    scheduler: Any,
    refine: bool,
) -> tuple[int, dict[str, CalibrationState]]:
    da = _import("dask.array")
    delayed = _import("dask").delayed
    templates = _templates(metrics, n_bins)
    P = _as_rows(da, probs, "probs")
    if P.ndim > 2:
        raise CalibrationInputError(f"probs must be (n, k) or (n,); got {P.ndim} dimensions")
    rows = _row_chunks(P, "probs")
    n_rows = P.shape[0]
    y = _as_rows(da, labels, "labels")
    if y.ndim != 1:
        raise CalibrationInputError(f"labels must be 1-D (n,); got shape {y.shape}")
    y = _aligned(y, "labels", rows, n_rows)
    w = None
    if sample_weight is not None:
        w = _as_rows(da, sample_weight, "sample_weight")
        if w.ndim != 1:
            raise CalibrationInputError(f"sample_weight must be 1-D (n,); got shape {w.shape}")
        w = _aligned(w, "sample_weight", rows, n_rows)
    p_blocks = P.to_delayed().ravel()
    y_blocks = y.to_delayed().ravel()
    w_blocks = [None] * len(p_blocks) if w is None else list(w.to_delayed().ravel())
    starts = np.concatenate([[0], np.cumsum(rows)]) if _known(rows) else None
    where = [
        f"chunk {i}"
        + ("" if starts is None else f" (rows {int(starts[i])}..{int(starts[i + 1]) - 1})")
        for i in range(len(p_blocks))
    ]

    def leaf(temps: dict[str, str], second: bool, i: int) -> Any:
        start = 0 if starts is None else int(starts[i])
        return delayed(_update, pure=True)(
            temps, p_blocks[i], y_blocks[i], w_blocks[i], logits, where[i], second, start
        )

    return _passes(leaf, len(p_blocks), templates, split_every, scheduler, refine)


def calibration_error(
    probs: Any,
    labels: Any,
    *,
    sample_weight: Any = None,
    logits: bool = False,
    lens: str | Lens = "auto",
    selection: Selection | Sequence[Selection] | None = None,
    estimator: Binning | None = None,
    divergence: str | Divergence = "l1",
    aggregate: str = "weighted",
    class_aggregate: str = "mean",
    split_every: int = 8,
    scheduler: Any = None,
) -> float:
    """Binned calibration error of Dask arrays, as :func:`calipers.calibration_error`.

    The pipeline of Kirchenbauer, Oaks & Heim (2022) (lens, selection, binning
    estimator, divergence; the histogram estimate of their eq. 3) with fixed
    bins, computed partition by partition (see :func:`calibration_states`).

    Parameters
    ----------
    probs, labels, sample_weight, logits, split_every, scheduler
        As in :func:`calibration_states`.
    lens, selection, estimator, divergence, aggregate, class_aggregate
        As in :class:`~calipers.stream.calibration_state.CalibrationState`: lens
        ``"auto"`` (top label, or P(y = 1) for 1-D input), no selection,
        ``EqualWidth(15)`` bins, the L1 divergence, bins weighted by size and
        slices averaged. Equal-mass and k-d tree bins are refused.

    Returns
    -------
    float
        The calibration error of all rows.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> import calipers as cp
    >>> from calipers.stream.dask import calibration_error
    >>> rng = np.random.default_rng(2)
    >>> P = rng.dirichlet(np.ones(4), size=400)
    >>> y = rng.integers(0, 4, size=400)
    >>> got = calibration_error(da.from_array(P, chunks=(150, 4)), da.from_array(y, chunks=150),
    ...                         lens="classwise", estimator=cp.EqualWidth(10),
    ...                         scheduler="synchronous")
    >>> want = cp.calibration_error(P, y, lens="classwise", estimator=cp.EqualWidth(10))
    >>> bool(np.isclose(got, want, rtol=1e-12, atol=0))
    True
    """
    template = CalibrationState(
        lens=lens,
        selection=selection,
        estimator=estimator,
        divergence=divergence,
        aggregate=aggregate,  # type: ignore[arg-type]
        class_aggregate=class_aggregate,  # type: ignore[arg-type]
    )
    states = calibration_states(
        probs,
        labels,
        {"calibration_error": template},
        sample_weight=sample_weight,
        logits=logits,
        split_every=split_every,
        scheduler=scheduler,
    )
    return states["calibration_error"].compute()


def ece(
    probs: Any,
    labels: Any,
    *,
    sample_weight: Any = None,
    logits: bool = False,
    n_bins: int = 15,
    split_every: int = 8,
    scheduler: Any = None,
) -> float:
    """Expected calibration error of Dask arrays, as :func:`calipers.ece`.

    The ECE of Guo et al. (2017), eq. 5: top-label confidence (P(y = 1) for 1-D
    input) in ``n_bins`` equal-width bins ``(lo, hi]``, the bins'
    ``|accuracy - confidence|`` weighted by their share of the rows; computed
    partition by partition (see :func:`calibration_states`).

    Parameters
    ----------
    probs, labels, sample_weight, logits, split_every, scheduler
        As in :func:`calibration_states`.
    n_bins : int, default 15
        Number of equal-width bins on [0, 1].

    Returns
    -------
    float
        The ECE of all rows, in [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> import calipers as cp
    >>> from calipers.stream.dask import ece
    >>> z = np.random.default_rng(3).normal(size=(300, 5))
    >>> y = np.arange(300) % 5
    >>> got = ece(da.from_array(z, chunks=(70, 5)), da.from_array(y, chunks=70), logits=True,
    ...           scheduler="synchronous")
    >>> bool(np.isclose(got, cp.ece(z, y, logits=True), rtol=1e-12, atol=0))
    True
    """
    states = calibration_states(
        probs,
        labels,
        ["ece"],
        sample_weight=sample_weight,
        logits=logits,
        n_bins=n_bins,
        split_every=split_every,
        scheduler=scheduler,
    )
    return states["ece"].compute()


# ----------------------------------------------------------------------------- dask dataframes


class _Columns:
    """Which columns of a frame hold the classes, the labels and the weights."""

    def __init__(
        self,
        names: list[str],
        where: str,
        prob_columns: Sequence[str] | None,
        label_column: str | None,
        weight_column: str | None,
        logits: bool | None,
    ) -> None:
        for option, given in (
            ("label_column", [label_column] if label_column is not None else []),
            ("weight_column", [weight_column] if weight_column is not None else []),
            ("prob_columns", list(prob_columns) if prob_columns is not None else []),
        ):
            missing = [c for c in given if c not in names]
            if missing:
                raise CalibrationInputError(
                    f"{where} has no column {missing[0]!r} ({option}); its columns are {names}"
                )
        if label_column is None:
            found = [n for n in names if n.lower() in LABELS_KEYS and n != weight_column]
            if not found:
                raise CalibrationInputError(
                    f"{where} has no label column (columns: {names}); name it one of "
                    f"{', '.join(LABELS_KEYS)} or give label_column="
                )
            if len(found) > 1:
                raise CalibrationInputError(
                    f"{where} has several label columns {found}; choose one with label_column="
                )
            label_column = found[0]
        if prob_columns is None:
            cands = [n for n in names if n not in (label_column, weight_column)]
            label_like, _, kind, _ = _column_roles(cands, where, logits)
            if label_like:
                raise CalibrationInputError(
                    f"{where} has the label column {label_column!r} and also "
                    f"{[cands[j] for j in label_like]}; choose the class columns with "
                    "prob_columns="
                )
            order, _ = _class_order(cands)
            classes = [cands[j] for j in order]
        else:
            classes = list(prob_columns)
            if not classes:
                raise CalibrationInputError("prob_columns must name at least one column")
            overlap = [c for c in classes if c in (label_column, weight_column)]
            if overlap:
                raise CalibrationInputError(
                    f"prob_columns {classes} include the label or weight column {overlap[0]!r}"
                )
            _, _, kind, _ = _column_roles(classes, where, logits)
        self.classes = classes
        self.label = label_column
        self.weight = weight_column
        self.logits = kind == "logits"

    @property
    def needed(self) -> list[str]:
        return self.classes + [self.label] + ([self.weight] if self.weight else [])


def _check_dtypes(dtypes: Any, cols: _Columns, where: str) -> None:
    """Class and weight columns must be numeric (not boolean); ``dtypes`` by column name."""
    pdt = _import("pandas").api.types
    for c in cols.needed:
        dtype = dtypes[c]
        if c != cols.label and not (pdt.is_numeric_dtype(dtype) and not pdt.is_bool_dtype(dtype)):
            raise CalibrationInputError(
                f"{where}, column {c!r} has dtype {dtype}; probability, logit and weight "
                "columns must hold numbers"
            )


def _partition_arrays(
    part: Any, cols: _Columns, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Probabilities, integer labels and weights of one pandas partition."""
    pdt = _import("pandas").api.types
    _check_dtypes(part.dtypes, cols, where)
    for c in cols.needed:
        s = part[c]
        if bool(s.isna().any()):
            i = int(np.flatnonzero(s.isna().to_numpy())[0])
            raise CalibrationInputError(
                f"{where}, column {c!r}: {int(s.isna().sum())} missing values, the first in "
                f"data row {i + 1}; every row needs a value"
            )
    block = part[cols.classes].to_numpy(dtype=np.float64)
    probs = block[:, 0] if len(cols.classes) == 1 else block
    lab = part[cols.label]
    label_where = f"{where}, column {cols.label!r}"
    if pdt.is_bool_dtype(lab.dtype) or pdt.is_integer_dtype(lab.dtype):
        labels = lab.to_numpy(dtype=np.int64)
    elif pdt.is_float_dtype(lab.dtype):
        labels = _labels_from_floats(lab.to_numpy(dtype=np.float64), f"{where},", cols.label)
    else:
        names = cols.classes if len(cols.classes) > 1 else []
        values = [str(v) for v in lab.tolist()]
        rows = range(1, len(values) + 1)
        labels = _labels_from_strings(values, names, label_where, rows, at_word="data row")
    weights = None if cols.weight is None else part[cols.weight].to_numpy(dtype=np.float64)
    return probs, labels, weights


class _PartitionError(CalibrationInputError):
    """An error in one partition, with rows counted from its first row.

    Raised on a worker; the caller, which knows (or can count) the rows of the
    partitions before it, re-raises it with the rows of the data set
    (:func:`_in_file_rows`).
    """

    def __init__(self, where: str, partition: int, inner: str) -> None:
        super().__init__(f"{where} partition {partition}{inner}")
        self.where, self.partition, self.inner = where, partition, inner

    def __reduce__(self) -> tuple[Any, tuple[str, int, str]]:  # sent back by the workers
        return (type(self), (self.where, self.partition, self.inner))


def _update_partition(
    templates: dict[str, str], part: Any, cols: _Columns, where: str, i: int, second: bool
) -> _Partial:
    try:
        probs, labels, weights = _partition_arrays(part, cols, "")
        return _update(templates, probs, labels, weights, cols.logits, "", second)
    except CalibrationInputError as exc:
        raise _PartitionError(where, i, str(exc)) from None  # starts with ": " or ", "


def _in_file_rows(exc: _PartitionError, frame: Any, label: str, scheduler: Any) -> Exception:
    """``exc`` with the rows it names counted from the data set's first row.

    The rows of the partitions before the one that failed are counted (only on
    this error path: one column of those partitions is read again), so that the
    message names the row the whole-file read names.
    """
    i = exc.partition
    if i == 0:
        return CalibrationInputError(str(exc))
    try:
        lengths = frame[[label]].partitions[:i].map_partitions(len).compute(scheduler=scheduler)
        start = int(sum(int(m) for m in lengths))
    except Exception:  # the count is a courtesy: never hide the error it locates
        return CalibrationInputError(f"{exc} (rows counted from the partition's first row)")
    return CalibrationInputError(f"{exc.where} partition {i}{_file_positions(exc.inner, start)}")


def _frame_states(
    frame: Any,
    metrics: str | Sequence[str] | Mapping[str, CalibrationState],
    n_bins: int,
    prob_columns: Sequence[str] | None,
    label_column: str | None,
    weight_column: str | None,
    logits: bool | None,
    split_every: int,
    scheduler: Any,
    refine: bool,
    where: str,
    progress: bool = False,
) -> tuple[int, dict[str, CalibrationState], _Columns]:
    dd = _import("dask.dataframe")
    delayed = _import("dask").delayed
    if not isinstance(frame, dd.DataFrame):
        raise TypeError(
            f"frame must be a dask.dataframe.DataFrame; got {type(frame).__name__} "
            "(use calibration_states for Dask arrays)"
        )
    templates = _templates(metrics, n_bins)
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names) or len(names) != len(frame.columns):
        raise CalibrationInputError(f"{where} has duplicate or non-text column names: {names}")
    cols = _Columns(names, where, prob_columns, label_column, weight_column, logits)
    _check_dtypes(frame.dtypes, cols, where)  # before any partition is read
    parts = frame[cols.needed].to_delayed()

    def leaf(temps: dict[str, str], second: bool, i: int) -> Any:
        return delayed(_update_partition, pure=True)(temps, parts[i], cols, where, i, second)

    label = where if progress else None
    try:
        n, states = _passes(leaf, len(parts), templates, split_every, scheduler, refine, label)
    except _PartitionError as exc:
        raise _in_file_rows(exc, frame, cols.label, scheduler) from None
    except KeyError as exc:  # a part of the data set without a column of the first
        raise CalibrationInputError(
            f"{where}: a partition has no column {exc}; every part of the data set needs the "
            f"columns {cols.needed}"
        ) from None
    if n == 0:
        raise CalibrationInputError(f"{where} has columns but no data rows")
    return n, states, cols


def dataframe_states(
    frame: Any,
    metrics: str | Sequence[str] | Mapping[str, CalibrationState] = ("ece",),
    *,
    prob_columns: Sequence[str] | None = None,
    label_column: str | None = None,
    weight_column: str | None = None,
    logits: bool | None = None,
    n_bins: int = 15,
    split_every: int = 8,
    scheduler: Any = None,
    refine: bool = True,
) -> dict[str, CalibrationState]:
    """Merged calibration states of a Dask DataFrame, one per metric, partition by partition.

    The columns follow the one-column-per-class layout of :mod:`calipers.io`
    (as a ``.csv`` or ``.parquet`` prediction file): a label column named
    ``label``, ``labels``, ``y``, ``y_true``, ``target`` or ``targets`` (any
    case) with class indices or class-column names, and one numeric column per
    class, put in class order by a shared prefix and trailing index (``p0,
    p1, ...``) or else in frame order; columns named ``logit_*`` hold logits;
    a single class column is P(y = 1) (or the logit) of a binary problem. Only
    the needed columns are read. Each partition is reduced to
    :class:`~calipers.stream.calibration_state.CalibrationState` totals (the histogram
    estimate of Kirchenbauer, Oaks & Heim 2022, eq. 3) and the states are
    merged in a tree, as in :func:`calibration_states`.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        One row per prediction.
    metrics : str, sequence of str, or mapping of str to CalibrationState, default ("ece",)
        As in :func:`calibration_states`.
    prob_columns : sequence of str, optional
        The class columns, in class order; by default every column other than
        the label and weight columns.
    label_column : str, optional
        The label column; by default the one column named as above.
    weight_column : str, optional
        A column of non-negative row weights; unweighted when None.
    logits : bool, optional
        Whether the class columns hold logits; by default decided by their
        names (``logit_*``).
    n_bins, split_every, scheduler, refine
        As in :func:`calibration_states`.

    Returns
    -------
    dict of str to CalibrationState

    Raises
    ------
    CalibrationInputError
        A named column that is missing, no or several label columns, a
        non-numeric class or weight column, missing values, or invalid values
        in a partition (the message names the partition).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> import dask.dataframe as dd
    >>> import calipers as cp
    >>> from calipers.stream.dask import dataframe_states
    >>> rng = np.random.default_rng(4)
    >>> P = rng.dirichlet(np.ones(3), size=600)
    >>> y = rng.integers(0, 3, size=600)
    >>> df = pd.DataFrame({"p0": P[:, 0], "p1": P[:, 1], "p2": P[:, 2], "label": y})
    >>> st = dataframe_states(dd.from_pandas(df, npartitions=4), ["ece", "sce"],
    ...                       scheduler="synchronous")
    >>> bool(np.isclose(st["sce"].compute(), cp.sce(P, y), rtol=1e-12, atol=0))
    True
    """
    _, states, _ = _frame_states(
        frame,
        metrics,
        n_bins,
        prob_columns,
        label_column,
        weight_column,
        logits,
        split_every,
        scheduler,
        refine,
        "the Dask DataFrame",
    )
    return states


# ----------------------------------------------------------------------------- parquet, clusters


#: what a script that starts a local cluster at import level must do
_GUARD_HINT = (
    "A script that starts a local cluster (workers=...) must do so under "
    '`if __name__ == "__main__":`: each worker process starts by running the '
    "script again (Python's spawn start method), and unguarded calls at import "
    "level start a cluster again there."
)


def _refuse_in_child(workers: int) -> None:
    """One clear message where a worker process re-runs an unguarded script.

    Python's ``spawn`` start method (the one Dask's worker processes use)
    runs the main script again, as ``__mp_main__``, in every new process;
    while it does, ``multiprocessing`` refuses to start processes, and each
    worker printed a long traceback (472 lines for two workers). Here the
    worker stops at once with one line naming the ``if __name__ ==
    "__main__":`` guard (``SystemExit`` with the message: no traceback), and
    the script's own process raises :class:`RuntimeError` with the same hint.
    """
    me = multiprocessing.current_process()
    main = sys.modules.get("__main__")
    if getattr(main, "__name__", "") != "__mp_main__" and not getattr(me, "_inheriting", False):
        return
    message = (
        f"calipers.stream.dask: a local cluster of {workers} worker processes was asked for "
        f"inside the worker process {me.name!r} while it ran the main script again at "
        f"start-up. {_GUARD_HINT}"
    )
    if getattr(me, "_inheriting", False):  # still starting: stop this process quietly
        raise SystemExit(message)
    raise RuntimeError(message)


@contextmanager
def _connected(scheduler: Any, workers: int | None) -> Iterator[Any]:
    """What to pass to ``dask.compute(scheduler=...)``; a cluster started here is closed after."""
    if workers is not None:
        if scheduler is not None:
            raise CalibrationInputError(
                "give scheduler= (an address or a Dask scheduler) or workers= (a local "
                "cluster), not both"
            )
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise CalibrationInputError(f"workers must be an integer >= 1; got {workers!r}")
        _refuse_in_child(workers)
        distributed = _import("distributed")
        dask = _import("dask")
        # Dask's workers start with MALLOC_TRIM_THRESHOLD_=65536, which turns off glibc's
        # dynamic mmap threshold: every NumPy temporary of a partition (8 MB per array at
        # 2**20 rows) was then a fresh mmap and its page faults, and a 10**7-row table
        # took 44 s instead of 20 s on two workers. The cluster started here keeps
        # Dask's thread limits and leaves malloc's default
        # (a Nanny also writes it into this process's os.environ, where the next
        # cluster's workers inherit it: removed for the start when it is Dask's value)
        pre = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
        dask_trim = pre.pop("MALLOC_TRIM_THRESHOLD_", None)
        inherited = None
        if dask_trim is not None and os.environ.get("MALLOC_TRIM_THRESHOLD_") == str(dask_trim):
            inherited = os.environ.pop("MALLOC_TRIM_THRESHOLD_")
        try:
            with dask.config.set({"distributed.nanny.pre-spawn-environ": pre}):
                cluster = distributed.LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",
                )
        except Exception as exc:  # the workers' own tracebacks were printed above
            raise RuntimeError(
                f"calipers.stream.dask could not start a local Dask cluster of {workers} worker "
                f"processes ({type(exc).__name__}: {exc}). If the worker processes stopped "
                f"at start-up: {_GUARD_HINT[0].lower()}{_GUARD_HINT[1:]}"
            ) from None
        finally:
            if inherited is not None:
                os.environ["MALLOC_TRIM_THRESHOLD_"] = inherited
        with cluster, distributed.Client(cluster, set_as_default=False) as client:
            yield client
        return
    if isinstance(scheduler, str) and scheduler not in _LOCAL_SCHEDULERS:
        distributed = _import("distributed")
        try:
            client = distributed.Client(scheduler, set_as_default=False, timeout="30s")
        except OSError as exc:
            raise CalibrationInputError(
                f"cannot reach the Dask scheduler at {scheduler!r} ({exc}); give the address "
                "printed by `dask scheduler` (e.g. tcp://host:8786) or one of "
                f"{list(_LOCAL_SCHEDULERS)}"
            ) from None
        with client:
            yield client
        return
    yield scheduler


#: rows per partition that ``_read_parquet`` aims at: the chunk of the streamed
#: command line (``calipers table --chunk-rows``'s default, 2**20 rows)
_PARTITION_ROWS = 1 << 20


def _read_parquet(path: str | Path) -> Any:
    """The data set as a Dask DataFrame of about ``_PARTITION_ROWS`` rows per partition.

    Dask's default puts up to 256 MiB of a file in one partition: a single
    10**7-row binary file (160 MB) was one task on one worker, with no
    parallelism and the whole file in that worker's memory. Row groups are
    combined (never split) up to ``_PARTITION_ROWS`` rows of float64 columns.
    """
    dd = _import("dask.dataframe")
    pa, _, _ = _import_pyarrow(
        Path(path)
    )  # refuses pyarrow releases that unpickle (CVE-2023-47248)
    _check_parts(path)
    try:
        frame = dd.read_parquet(str(path))
        blocksize = max(1, len(frame.columns)) * 8 * _PARTITION_ROWS
        return dd.read_parquet(str(path), blocksize=blocksize)
    except FileNotFoundError:
        raise CalibrationInputError(f"Parquet data set '{path}' does not exist") from None
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise CalibrationInputError(
            f"Parquet data set '{path}' cannot be read ({type(exc).__name__}: {exc}); write it "
            "again, e.g. with DataFrame.to_parquet"
        ) from None


#: File names Dask reads as the parts of a Parquet directory.
_PARQUET_SUFFIXES = (".parquet", ".parq", ".pq")


def _check_parts(path: str | Path) -> None:
    """Refuse a local Parquet data set that Dask would fail on inside a task.

    Every file of a local directory (as Dask finds them: ``.parquet``, ``.parq``,
    ``.pq``, not under a name starting with ``_`` or ``.``) has its footer read
    (no data): a damaged or truncated file, a file without a column of the first
    one, and a data set without files or without rows are refused with a message
    naming the file. Remote data sets and globs are left to Dask.
    """
    p = Path(path)
    if not p.is_dir():
        files = [p] if p.is_file() else []
        if not files:
            return  # a glob or a URL: Dask resolves it
    else:
        files = sorted(
            f
            for f in p.rglob("*")
            if f.suffix.lower() in _PARQUET_SUFFIXES
            and f.is_file()
            and not any(part.startswith(("_", ".")) for part in f.relative_to(p).parts)
        )
        if not files:
            raise CalibrationInputError(
                f"Parquet data set '{path}' holds no Parquet files (names ending in "
                f"{', '.join(_PARQUET_SUFFIXES)})"
            )
    pa, pq, _ = _import_pyarrow(p)
    first: list[str] | None = None
    rows = 0
    for f in files:
        try:
            with open(f, "rb") as fh:
                meta = pq.ParquetFile(fh, pre_buffer=False).metadata
                names = [str(n) for n in meta.schema.to_arrow_schema().names]
                rows += int(meta.num_rows)
        except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
            raise CalibrationInputError(
                f"Parquet data set '{path}': the file '{f}' is damaged or not a Parquet file "
                f"({exc}); write it again, e.g. with DataFrame.to_parquet"
            ) from None
        names = [n for n in names if not n.startswith("__index_level_")]
        if first is None:
            first = names
            first_file = f
            continue
        missing = [n for n in first if n not in names]
        if missing:
            raise CalibrationInputError(
                f"Parquet data set '{path}': the file '{f}' has no column(s) {missing} (its "
                f"columns: {names}) but '{first_file}' has them; every file of a data set "
                f"needs the same columns ({first})"
            )
    if rows == 0:
        raise CalibrationInputError(f"Parquet data set '{path}' has columns but no data rows")


def read_parquet_states(
    path: str | Path,
    metrics: str | Sequence[str] | Mapping[str, CalibrationState] = ("ece",),
    *,
    prob_columns: Sequence[str] | None = None,
    label_column: str | None = None,
    weight_column: str | None = None,
    logits: bool | None = None,
    n_bins: int = 15,
    split_every: int = 8,
    scheduler: Any = None,
    workers: int | None = None,
    refine: bool = True,
    progress: bool = False,
) -> dict[str, CalibrationState]:
    """Merged calibration states of a (partitioned) Parquet data set, read by Dask.

    ``dask.dataframe.read_parquet(path)`` opens a file, a directory of files
    (e.g. one per partition, as written by ``DataFrame.to_parquet``) or a glob;
    each partition is reduced where it is read and the states are merged as in
    :func:`dataframe_states` (the histogram estimate of Kirchenbauer, Oaks &
    Heim 2022, eq. 3, with the presets of Guo et al. 2017 and Nixon et al.
    2019). The columns follow the layout described there.

    Parameters
    ----------
    path : str or pathlib.Path
        The Parquet file, directory or glob (any URL Dask reads).
    metrics, prob_columns, label_column, weight_column, logits, n_bins, split_every, refine
        As in :func:`dataframe_states` (with ``refine``, equal-mass states read
        the data set twice).
    scheduler : None, str or distributed.Client, default None
        A scheduler address (``"tcp://host:8786"``), a local scheduler name
        (``"synchronous"``, ``"threads"``, ``"processes"``), a
        ``distributed.Client``, or None for Dask's default.
    workers : int, optional
        Start a local cluster of this many worker processes (one thread
        each) for this call, and close it afterwards. Not with ``scheduler``.
        A script that does so must call this under ``if __name__ ==
        "__main__":`` (each worker process runs the script again at start-up;
        without the guard the workers stop with a message saying so and this
        call raises :class:`RuntimeError`).
    progress : bool, default False
        On a ``distributed`` cluster (``workers``, an address or a client),
        write the finished partitions of each pass to stderr (at most once a
        second): ``calipers: '<path>': pass 1 of 2, 4/9 partitions``.

    Returns
    -------
    dict of str to CalibrationState

    Notes
    -----
    Partitions hold about 2**20 rows (row groups combined up to that size,
    never split), as the chunks of the streamed command line: Dask's default
    of 256 MiB per partition made a single 10**7-row binary file one task on
    one worker. On one machine a local cluster costs its start (a few
    seconds) and the transfer of the partition states; a single file that
    fits in memory is faster read whole (:func:`calipers.io.read_predictions`)
    or in chunks (``calipers table --chunk-rows``).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> import calipers as cp
    >>> from calipers.stream.dask import read_parquet_states
    >>> rng = np.random.default_rng(5)
    >>> p = rng.uniform(size=800)
    >>> y = (rng.uniform(size=800) < p).astype(int)
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> for i in range(3):  # a data set of three files
    ...     part = slice(300 * i, 300 * (i + 1))
    ...     pd.DataFrame({"p": p[part], "y": y[part]}).to_parquet(folder / f"part.{i}.parquet")
    >>> st = read_parquet_states(folder, ["ece"], scheduler="synchronous")
    >>> bool(np.isclose(st["ece"].compute(), cp.ece(p, y), rtol=1e-12, atol=0))
    True
    """
    frame = _read_parquet(path)
    pa = _import_pyarrow(Path(str(path)))[0]
    with _connected(scheduler, workers) as sched:
        try:
            _, states, _ = _frame_states(
                frame,
                metrics,
                n_bins,
                prob_columns,
                label_column,
                weight_column,
                logits,
                split_every,
                sched,
                refine,
                f"'{path}'",
                progress,
            )
        except (pa.ArrowException, OSError) as exc:  # a part damaged after its footer
            raise CalibrationInputError(
                f"Parquet data set '{path}' cannot be read ({type(exc).__name__}: {exc}); "
                "write it again, e.g. with DataFrame.to_parquet"
            ) from None
    return states


def table_row(
    path: str | Path,
    *,
    n_bins: int = 15,
    scheduler: Any = None,
    workers: int | None = None,
    model: str | None = None,
    prob_columns: Sequence[str] | None = None,
    label_column: str | None = None,
    logits: bool | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """One row of the standard calibration table for a Parquet data set, computed by Dask.

    The columns of the command line's table, with its keys: ``accuracy``,
    ``nll`` (nats), ``brier`` (summed over classes), ``ece`` and ``mce`` (Guo
    et al. 2017), ``sce``, ``ace``, ``tace`` and ``rmsce`` (Nixon et al.
    2019), ``classwise_ece`` (Kull et al. 2019) and ``bin_averaged_ece``, with
    ``n_bins`` bins each, as :func:`calipers.ece` & co. compute them in memory
    (up to the order of additions). The equal-mass bins of ACE, TACE and RMSCE
    need a second pass, so the data set is read twice.

    Parameters
    ----------
    path : str or pathlib.Path
        The Parquet file, directory or glob, as in :func:`read_parquet_states`.
    n_bins : int, default 15
        Bins per metric.
    scheduler : None, str or distributed.Client, default None
        A scheduler address, a local scheduler name, a client or None.
    workers : int, optional
        Start a local cluster of this many worker processes for this call.
    model : str, optional
        The row's name; by default the last part of ``path``.
    prob_columns, label_column, logits
        As in :func:`dataframe_states`.
    progress : bool, default False
        As in :func:`read_parquet_states`.

    Returns
    -------
    dict
        ``{"model", "n", "n_classes", "accuracy", "nll", "brier", "ece",
        "ace", "sce", "tace", "mce", "rmsce", "classwise_ece",
        "bin_averaged_ece"}`` (floats; ``n`` and ``n_classes`` integers).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> import calipers as cp
    >>> from calipers.stream.dask import table_row
    >>> rng = np.random.default_rng(6)
    >>> P = rng.dirichlet(np.ones(3), size=500)
    >>> y = rng.integers(0, 3, size=500)
    >>> df = pd.DataFrame({"p0": P[:, 0], "p1": P[:, 1], "p2": P[:, 2], "label": y})
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "preds.parquet"
    >>> df.to_parquet(path)
    >>> row = table_row(path, scheduler="synchronous")
    >>> row["model"], row["n"], row["n_classes"]
    ('preds.parquet', 500, 3)
    >>> bool(np.isclose(row["tace"], cp.tace(P, y), rtol=1e-12, atol=0))
    True
    """
    # each column's state has its function's own pipeline (registry row), so the
    # numbers are the function's: e.g. RMSCE with the equal-mass bins of cp.rmsce
    metrics = {
        name: CalibrationState(**registry.get(name).parts(n_bins=n_bins)) for name in _TABLE_METRICS
    }
    frame = _read_parquet(path)
    with _connected(scheduler, workers) as sched:
        n, states, _ = _frame_states(
            frame,
            metrics,
            n_bins,
            prob_columns,
            label_column,
            None,
            logits,
            8,
            sched,
            True,
            f"'{path}'",
            progress,
        )
    first = states["ece"]
    row: dict[str, Any] = {
        "model": model if model is not None else Path(str(path)).name,
        "n": n,
        "n_classes": first.n_classes,
        "accuracy": first.accuracy(),
        "nll": first.nll(),
        "brier": first.brier(),
    }
    for name in _TABLE_METRICS:
        row[name] = states[name].compute()
    return row
