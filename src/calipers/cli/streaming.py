"""Out-of-core ``calipers table`` and ``report``: per-chunk totals in calibration states.

A prediction file is read in chunks of rows (:func:`calipers.io.read_prediction_chunks`)
and every chunk is added to one :class:`calipers.CalibrationState` per streamable
column, so memory stays flat however long the file is. The fixed-bin metrics
(ECE, MCE, bin-averaged ECE of Guo et al. 2017 and Nixon et al. 2019; SCE of
Nixon et al. 2019; class-wise ECE of Kull et al. 2019), accuracy, NLL and the Brier
score are sums over bins or rows, so the merged totals give the in-memory values
(Kirchenbauer, Oaks & Heim 2022 eq. 3 for the binned estimate). Equal-mass bins
(ACE, TACE, RMSCE) need quantiles of all the scores: they are exact after further
passes over the file (``--equal-mass two-pass``: one or two more, in memory that does
not grow with the rows; :meth:`calipers.CalibrationState.edge_search`), within a
printed bound after one pass, or left out with a note.

:func:`stream_states` is the one streaming step on one machine; :func:`dask_model`
computes the same states on a Dask cluster, partition by partition (``--scheduler`` /
``--workers``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..io import PredictionChunk, PredictionFileError, read_prediction_chunks
from ..io.declared import declared_size
from ..metrics import registry
from ..metrics.scores import nll
from ..stream.calibration_state import CalibrationState
from ..validation import CalibrationInputError, Predictions
from .options import local_cluster_notice

#: Files whose arrays declare more than this (bytes, once read) are read in chunks
#: without ``--chunk-rows`` (2 GiB).
STREAM_ABOVE_BYTES = 2 * 1024**3

#: Rows per chunk when a file is streamed because of its size (2**20).
DEFAULT_CHUNK_ROWS = 1 << 20

#: The table columns that a calibration state computes exactly chunk by chunk (the
#: metric registry's table presets with fixed bins).
STREAMED_COLUMNS = tuple(registry.names(table=True, streaming="exact"))

#: Why the equal-mass columns are not exact from one pass over the chunks.
NOT_STREAMED_WHY = {
    m: str(registry.get(m).not_streamed) for m in registry.names(table=True, streaming="equal_mass")
}


def wants_streaming(path: Path, chunk_rows: int | None) -> int | None:
    """The chunk size to read ``path`` with, or None to read it whole.

    ``--chunk-rows N`` streams every file in chunks of N rows; without it, files
    whose arrays declare more than :data:`STREAM_ABOVE_BYTES` once read are
    streamed in chunks of :data:`DEFAULT_CHUNK_ROWS` rows (``.pt`` files
    excepted: they are read whole anyway). The bytes are those the file
    declares (:func:`calipers.io.declared.declared_size`: ``.npy`` headers, the
    ``.npz`` zip directory and member headers, the Parquet footer, the size on
    disk for CSV), not its size on disk: a 4 MB ``.npz`` of deflated zeros can
    declare gigabytes. A declaration the file cannot hold raises
    :class:`~calipers.io.PredictionFileError` naming the file and the member.
    """
    declared = declared_size(path)  # refuses impossible declarations, with --chunk-rows too
    if chunk_rows is not None:
        return chunk_rows
    if path.suffix.lower() in (".pt", ".pth"):
        return None
    return DEFAULT_CHUNK_ROWS if declared.nbytes > STREAM_ABOVE_BYTES else None


#: How equal-mass columns (ACE, TACE, RMSCE) are computed from chunks (``--equal-mass``).
EQUAL_MASS_MODES = ("two-pass", "one-pass", "skip")


def state_for(metric: str, n_bins: int) -> CalibrationState:
    """The state of one table column: its function's pipeline, from the metric registry.

    RMSCE, ACE and TACE get their functions' equal-mass bins
    (``EqualMass(n_bins, "nixon")``). Raises
    :class:`~calipers.validation.CalibrationInputError` when the column has no
    streamable state.
    """
    spec = registry.get(metric)
    if spec.pipeline is None or spec.streaming is None:
        raise CalibrationInputError(f"the column {metric} has no streamable state")
    return CalibrationState(**spec.parts(n_bins=n_bins))


def is_equal_mass(state: CalibrationState) -> bool:
    """True when the state's bins are equal-mass (exact only after a second pass)."""
    return "equal_mass" in state.config["estimator"]


def stream_states(
    chunks: Iterable[PredictionChunk],
    metrics: Sequence[str],
    n_bins: int,
    *,
    check: Callable[[PredictionChunk], Predictions] | None = None,
    on_chunk: Callable[[Predictions], None] | None = None,
    equal_mass: str = "two-pass",
) -> dict[str, CalibrationState]:
    """One :class:`CalibrationState` per metric, updated chunk by chunk.

    ``check`` validates a chunk (default: :meth:`PredictionChunk.check`);
    ``on_chunk`` sees every validated chunk of the first pass (for extra
    totals). States with equal-mass bins (ACE, TACE, RMSCE) are exact after
    further passes over ``chunks`` (``equal_mass="two-pass"``, which needs
    ``chunks`` to be iterable again, as :class:`calipers.io.PredictionChunks`
    is: :meth:`CalibrationState.edge_search`, usually one or two more passes,
    in memory that does not grow with the rows); with
    ``"one-pass"`` they keep their one-pass value, within
    :meth:`CalibrationState.error_bound` of the in-memory one. A metric
    without a streamable state raises
    :class:`~calipers.validation.CalibrationInputError` before any row is read.
    """
    if equal_mass not in EQUAL_MASS_MODES:
        raise ValueError(f"equal_mass must be one of {EQUAL_MASS_MODES}; got {equal_mass!r}")
    wanted = {m: state_for(m, n_bins) for m in metrics}
    # states that differ only in how bins are aggregated (ECE, MCE, bin-averaged ECE)
    # hold the same totals: update one and read the others from its plain content
    shared: dict[str, str] = {}
    states: dict[str, CalibrationState] = {}
    for m, st in wanted.items():
        key = json.dumps({**st.config, "aggregate": None}, sort_keys=True)
        if key in shared:
            continue
        shared[key] = m
        states[m] = st

    def first(P: Predictions) -> None:
        for st in states.values():
            st.update(P, None)
        if on_chunk is not None:
            on_chunk(P)

    _read_pass(chunks, check, first)
    for m, st in wanted.items():
        if m not in states:
            src = states[shared[json.dumps({**st.config, "aggregate": None}, sort_keys=True)]]
            states[m] = CalibrationState.from_dict({**src.to_dict(), "config": st.config})
    states = {m: states[m] for m in metrics}
    second = [m for m, st in states.items() if is_equal_mass(st)]
    if second and equal_mass == "two-pass":
        # exact edges in bounded memory: further passes until every edge is found
        # (CalibrationState.edge_search; refine would keep the rows of the edge cells)
        for m in second:
            states[m] = states[m].edge_search()

        def search(P: Predictions) -> None:
            for m in second:
                states[m].search_update(P, None)

        while any(states[m].searching for m in second):
            _read_pass(chunks, check, search)
            for m in second:
                states[m].search_next()
    return states


def _read_pass(
    chunks: Iterable[PredictionChunk],
    check: Callable[[PredictionChunk], Predictions] | None,
    use: Callable[[Predictions], Any],
) -> None:
    """One pass over ``chunks``, each validated and given to ``use``.

    A function of its own so that the last chunk of a pass is freed when the pass
    ends, before the next pass reads its first chunk (two chunks would be held).
    """
    for chunk in chunks:
        use(chunk.check() if check is None else check(chunk))


@dataclass
class StreamedModel:
    """What a streamed file gives the table and the report."""

    name: str
    source: str
    chunk_rows: int
    access: str
    states: dict[str, CalibrationState]
    not_streamed: list[str]
    equal_mass: str = "two-pass"
    n: int = 0
    n_classes: int = 0
    binary: bool = False
    zero_true_class: int = 0
    nll_clipped_total: float = 0.0

    def value(self, key: str) -> float | None:
        """The value of a table column, None when it was not computed."""
        first = next(iter(self.states.values()))
        if key == "accuracy":
            return first.accuracy()
        if key == "nll":
            return first.nll()
        if key == "brier":
            return first.brier()
        if key == "nll_clipped":
            return self.nll_clipped_total / self.n
        if key in self.states:
            return float(self.states[key].compute())
        return None

    def bounds(self) -> dict[str, float]:
        """Error bounds of one-pass equal-mass columns (``--equal-mass one-pass``)."""
        if self.equal_mass != "one-pass":
            return {}
        return {m: float(st.error_bound()) for m, st in self.states.items() if is_equal_mass(st)}


def dask_model(
    name: str, path: Path, args: argparse.Namespace, metrics: Sequence[str]
) -> StreamedModel:
    """The states of ``metrics`` for a Parquet data set, computed on a Dask cluster.

    ``args.scheduler`` (an address) or ``args.workers`` (a local cluster of that
    many worker processes) says where; every partition is reduced where it is
    read and the states are merged (:func:`calipers.stream.dask.read_parquet_states`),
    equal-mass columns with a second pass. Needs the ``dask`` extra. A local
    cluster on one file that fits in memory gets a one-line note on stderr
    (:func:`~calipers.cli.options.local_cluster_notice`): reading it whole is faster.
    """
    from ..stream.dask import read_parquet_states

    note = local_cluster_notice(path, args.workers)
    if note is not None:
        print(note, file=sys.stderr, flush=True)
    ok, refused = _streamable(metrics, args.bins, "two-pass")
    states = read_parquet_states(
        path,
        {m: state_for(m, args.bins) for m in ok},
        logits=True if args.logits else None,
        n_bins=args.bins,
        scheduler=args.scheduler,
        workers=args.workers,
        progress=True,
    )
    where = (
        f"the Dask scheduler at {args.scheduler}"
        if args.scheduler
        else f"a local Dask cluster of {args.workers} worker processes"
    )
    model = StreamedModel(name, f"{path} (Parquet, read by {where})", 0, "dask", states, refused)
    first = states[ok[0]]
    model.n = int(round(float(first.totals[0])))
    model.n_classes, model.binary = int(first.n_classes or 0), bool(first.binary)
    return model


def _streamable(
    metrics: Sequence[str], n_bins: int, equal_mass: str
) -> tuple[list[str], list[str]]:
    ok, refused = [], []
    for m in metrics:
        try:
            st = state_for(m, n_bins)
        except CalibrationInputError:
            refused.append(m)
            continue
        if is_equal_mass(st) and (
            equal_mass == "skip"
            or (equal_mass == "one-pass" and st.config["divergence"] != "l1")  # no bound
        ):
            refused.append(m)
        else:
            ok.append(m)
    return ok, refused


def stream_model(
    name: str,
    path: Path,
    chunk_rows: int,
    args: argparse.Namespace,
    metrics: Sequence[str],
    nll_clip: float | None = None,
) -> StreamedModel:
    """Read one file in chunks into the states of ``metrics`` (those that can be streamed).

    ``args`` holds the input options and ``bins``; ``equal_mass`` (default
    ``"two-pass"``) says how equal-mass columns are computed (:func:`stream_states`).
    """
    equal_mass = getattr(args, "equal_mass", "two-pass")
    ok, refused = _streamable(metrics, args.bins, equal_mass)
    logits_flag = True if args.logits else (False if getattr(args, "probs", False) else None)
    chunks = read_prediction_chunks(
        path,
        chunk_rows,
        probs_key=args.probs_key,
        logits_key=args.logits_key,
        labels_key=args.labels_key,
        labels_path=args.labels,
        logits=logits_flag,
    )
    for flag, given in (("--renormalize", args.renormalize), ("--clip", args.clip)):
        if given and chunks.kind == "logits":
            raise PredictionFileError(
                f"{flag} applies to probabilities, but {chunks.source} holds logits ({chunks.note})"
            )
    model = StreamedModel(name, "", chunk_rows, chunks.access, {}, refused, equal_mass)

    def check(chunk: PredictionChunk) -> Predictions:
        return chunk.check(renormalize=args.renormalize, clip=args.clip, sum_tol=args.sum_tol)  # type: ignore[no-any-return]

    def on_chunk(P: Predictions) -> None:
        m = int(P.n_samples)
        model.n += m
        model.n_classes, model.binary = int(P.n_classes), bool(P.binary)
        if nll_clip is not None:
            model.nll_clipped_total += m * float(nll(P, None, clip=nll_clip))
        probs = np.asarray(P.full_probs())
        labels = np.asarray(P.labels)
        model.zero_true_class += int(
            np.count_nonzero(np.take_along_axis(probs, labels[:, None], axis=1) == 0)
        )

    model.states = stream_states(
        chunks, ok, args.bins, check=check, on_chunk=on_chunk, equal_mass=equal_mass
    )
    # the equal-mass columns' exact edges take one or more further passes (edge_search)
    n_passes = 1 + max((st.search_passes for st in model.states.values()), default=0)
    passes = "one pass" if n_passes == 1 else f"{n_passes} passes"
    model.source = (
        f"{chunks.source}: {chunks.note}; n = {model.n}, {model.n_classes} classes; read in "
        f"chunks of at most {chunk_rows} rows ({chunks.access}, {passes})"
    )
    return model


def not_streamed_note(models: Sequence[StreamedModel], headers: dict[str, str]) -> list[str]:
    """Notes on streamed rows: columns left out and why, and one-pass bounds."""
    notes = []
    order = list(headers)
    refused = sorted({m for model in models for m in model.not_streamed}, key=order.index)
    if refused:
        names = ", ".join(f"{m.name} (chunks of {m.chunk_rows} rows)" for m in models)
        cols = ", ".join(
            f"{headers[m]} ({NOT_STREAMED_WHY.get(m, 'needs all rows')})" for m in refused
        )
        notes.append(
            f"not computed (n/a) for {names}: {cols}. Equal-mass bins are quantiles of all the "
            "scores: read in chunks they need a second pass over the file (--equal-mass "
            "two-pass, the default) or a bound (--equal-mass one-pass, ACE and TACE only); "
            "--equal-mass skip leaves them out. The other columns are sums over fixed bins "
            "or rows, equal to the in-memory values."
        )
    for model in models:
        bounds = model.bounds()
        if bounds:
            text = ", ".join(f"{headers[m]} within {b:.2g}" for m, b in bounds.items())
            notes.append(
                f"{model.name}: equal-mass columns from one pass over the file (--equal-mass "
                f"one-pass; Nixon et al. 2019 bins on a score grid): {text} of the in-memory "
                "value (bounds known from the state); --equal-mass two-pass gives them exactly."
            )
    return notes


def is_infinite_nll(model: StreamedModel) -> bool:
    """True when the streamed NLL is infinite."""
    v = model.value("nll")
    return v is not None and math.isinf(v)


def reliability_png(bins: Sequence[dict], title: str, ece: float | None = None) -> bytes:
    """:func:`reliability_figure` as PNG bytes (150 dpi)."""
    import io

    from ..diagrams._style import plain_text, require_matplotlib

    plt = require_matplotlib()
    fig = reliability_figure(bins, plain_text(title), ece)  # a file name, not a formula
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=150)
    plt.close(fig)
    return buf.getvalue()


def reliability_figure(bins: Sequence[dict], title: str, ece: float | None = None) -> Any:
    """A reliability diagram drawn from per-bin totals alone (a matplotlib Figure).

    ``bins`` are the rows of :meth:`calipers.CalibrationState.reliability_table` (one
    lens slice; ``lower``, ``upper``, ``count``, ``mean_score``, ``observed``,
    ``ci_lower``, ``ci_upper``): what a streamed file leaves once every chunk is added,
    so no row is needed. As :func:`calipers.reliability_diagram` draws it (Guo et al.
    2017, Fig. 1): a bar per non-empty bin as high as its observed frequency, a hatched
    box between that and the bin's mean score (the gap whose weighted mean is the ECE,
    Kirchenbauer, Oaks & Heim (2022) eq. 3), the bin's 95 % Wilson interval, the diagonal
    and, below, the number of rows per bin. Needs matplotlib.
    """
    from ..diagrams._style import (
        HIST_COLOR,
        IDEAL_COLOR,
        new_figure,
        rc_context,
        style_axes,
    )
    from ..diagrams.reliability import _draw_bins

    top = not bins or str(bins[0]["slice"]) == "top-label"
    xname, yname = (
        ("Confidence", "Accuracy") if top else ("Predicted probability", "Observed frequency")
    )
    lo = np.array([b["lower"] for b in bins], dtype=np.float64)
    hi = np.array([b["upper"] for b in bins], dtype=np.float64)
    obs = np.array([b["observed"] for b in bins], dtype=np.float64)
    conf = np.array([b["mean_score"] for b in bins], dtype=np.float64)
    count = np.array([b["count"] for b in bins], dtype=np.float64)
    cil = np.array([b["ci_lower"] for b in bins], dtype=np.float64)
    cih = np.array([b["ci_upper"] for b in bins], dtype=np.float64)
    with rc_context():
        fig = new_figure(3.5, 4.2)
        ax, axh = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
        _draw_bins(ax, lo, hi, obs, conf, np.ones(len(lo), bool), True, yname)
        mid = (lo + hi) / 2
        ax.errorbar(
            mid,
            obs,
            yerr=[obs - cil, cih - obs],
            fmt="none",
            ecolor="#222222",
            elinewidth=0.8,
            capsize=1.5,
            label="95% Wilson interval",
            zorder=4,
        )
        ax.plot([0, 1], [0, 1], ls="--", color=IDEAL_COLOR, lw=1.0, label="Perfect calibration")
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.0)
        ax.set_ylabel(yname)
        ax.set_title(title)
        ax.legend(loc="upper left", fontsize=7)
        if ece is not None and math.isfinite(ece):
            ax.text(
                0.97,
                0.04,
                f"ECE = {100 * ece:.2f}%",
                transform=ax.transAxes,
                ha="right",
                va="bottom",
                fontsize=8,
                bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "#CCCCCC"},
            )
        axh.bar(
            lo,
            count,
            width=hi - lo,
            align="edge",
            color=HIST_COLOR,
            edgecolor="white",
            linewidth=0.4,
        )
        axh.set_xlabel(xname)
        axh.set_ylabel("Rows")
        for a in (ax, axh):
            style_axes(a)
    return fig
