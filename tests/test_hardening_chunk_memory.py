"""``--chunk-rows`` memory (issue 25, item 7): exact equal-mass columns that do not grow with the rows.

The equal-mass bins of ACE, TACE and RMSCE (Nixon et al. 2019, §4) have their edges at
order statistics of all the scores. The streamed table used to keep every row of the
grid cells holding an edge (``CalibrationState.refine``: a few per cent of the scores,
334 MB at 10**7 rows x 10 classes); it now finds the edges with
``CalibrationState.edge_search`` (:class:`calipers.stream.score_grid.EdgeSearch`), whose
memory is bounded by constants. Oracles: the in-memory functions :func:`calipers.ace`,
:func:`calipers.tace` and :func:`calipers.rmsce` on the concatenated rows (relative
1e-12: the per-bin totals are the same sums in another order), and the peak of
``tracemalloc`` over the streamed passes for 10**5 and 10**6 rows x 10 classes.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.cli import streaming
from calipers.stream import score_grid
from calipers.stream.calibration_state import CalibrationState
from calipers.validation import CalibrationInputError, Predictions, check_predictions

REL = 1e-12
K = 10


def _close(a: float, b: float) -> bool:
    return bool(a == b or abs(a - b) <= REL * max(abs(a), abs(b)))


def _chunk(i: int, rows: int, ties: bool = False, weights: bool = False) -> tuple[Any, ...]:
    """Chunk ``i``: float32 softmax probabilities of Gaussian logits, labels, weights."""
    rng = np.random.default_rng(1000 + i)
    z = 3.0 * rng.standard_normal((rows, K))
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    if ties:  # many equal scores: edges on point cells and ties across chunk borders
        p = np.round(p, 2)
        p[:, -1] = 0.0
        p[:, -1] = np.clip(1.0 - p.sum(axis=1), 0.0, 1.0)
        p /= p.sum(axis=1, keepdims=True)
    c = np.cumsum(p, axis=1)
    y = np.minimum((rng.uniform(size=(rows, 1)) > c).sum(axis=1), K - 1)
    w = rng.integers(0, 4, rows).astype(float) if weights else None
    return p.astype(np.float32).astype(np.float64), y, w


class _Chunks:
    """A re-iterable of chunks, as :class:`calipers.io.PredictionChunks` (read again per pass)."""

    def __init__(self, sizes: list[int], **kw: Any) -> None:
        self.sizes, self.kw, self.passes = sizes, kw, 0

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        self.passes += 1
        for i, m in enumerate(self.sizes):
            yield _chunk(i, m, **self.kw)


def _check(c: tuple[Any, ...]) -> Predictions:
    return check_predictions(c[0], c[1], sample_weight=c[2])


def _whole(chunks: _Chunks) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    parts = list(chunks)
    P = np.concatenate([c[0] for c in parts])
    y = np.concatenate([c[1] for c in parts])
    w = None if parts[0][2] is None else np.concatenate([c[2] for c in parts])
    return P, y, w


EQUAL_MASS = {
    "ace": lambda P, y, w: cp.ace(P, y, sample_weight=w),
    "tace": lambda P, y, w: cp.tace(P, y, sample_weight=w),
    "rmsce": lambda P, y, w: cp.rmsce(P, y, sample_weight=w),
}


# ----------------------------------------------------------------------------- exact values


@pytest.mark.parametrize(
    ("sizes", "kw"),
    [
        ([3000, 1, 2999, 4000], {}),
        ([1000] * 6, {"ties": True}),
        ([2500, 700, 2800], {"weights": True}),
        ([4096, 4096], {"ties": True, "weights": True}),
    ],
)
def test_streamed_equal_mass_columns_equal_the_in_memory_values(
    sizes: list[int], kw: dict[str, bool]
) -> None:
    chunks = _Chunks(sizes, **kw)
    P, y, w = _whole(chunks)
    states = streaming.stream_states(chunks, list(EQUAL_MASS), 15, check=_check)
    for m, f in EQUAL_MASS.items():
        assert _close(states[m].compute(), f(P, y, w)), m
        assert states[m].error_bound() == 0.0


@pytest.mark.parametrize("cells", [2, 16, 1024])
@pytest.mark.parametrize("max_rows", [0, 50])
def test_edge_search_with_tiny_budgets_needs_more_passes_and_stays_exact(
    cells: int, max_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the search takes its sizes from the module constants: tiny ones force several
    # histogram passes (no rows kept) before the edges are known
    monkeypatch.setattr(score_grid, "SEARCH_CELLS", cells)
    monkeypatch.setattr(score_grid, "SEARCH_ROWS", max_rows)
    chunks = _Chunks([1500, 1500, 1000], weights=True)
    P, y, w = _whole(chunks)
    parts = list(chunks)
    first = CalibrationState.for_metric("ace")
    for c in parts:
        first.update(*c[:2], c[2])
    st = first.edge_search()
    with pytest.raises(CalibrationInputError, match="another pass"):
        st.compute()
    passes = 1
    while st.searching:
        for c in parts:
            st.search_update(*c[:2], c[2])
        st.search_next()
        passes += 1
    assert _close(st.compute(), cp.ace(P, y, sample_weight=w))
    assert passes == 1 + st.search_passes >= (4 if cells == 2 else 2)


def test_a_pass_that_misses_rows_is_refused() -> None:
    parts = list(_Chunks([2000, 2000]))
    first = CalibrationState.for_metric("tace")
    for c in parts:
        first.update(*c[:2])
    st = first.edge_search()
    assert st.searching
    st.search_update(*parts[0][:2])  # the second chunk is missing from this pass
    with pytest.raises(CalibrationInputError, match="saw different rows"):
        st.search_next()


def test_edge_search_is_closed_to_updates_merges_and_json() -> None:
    c = _chunk(0, 500)
    first = CalibrationState.for_metric("ace")
    first.update(*c[:2])
    st = first.edge_search()
    with pytest.raises(CalibrationInputError, match="first pass is closed"):
        st.update(*c[:2])
    with pytest.raises(CalibrationInputError, match="edge search"):
        st.merge(first)
    with pytest.raises(CalibrationInputError, match="edge search"):
        st.to_json()
    with pytest.raises(CalibrationInputError, match="fixed bins"):
        CalibrationState.for_metric("ece").edge_search()


# ----------------------------------------------------------------------------- memory


def _peak(rows: int, chunk: int = 20_000) -> tuple[int, int]:
    """tracemalloc peak (bytes) of streaming ACE/TACE/RMSCE over ``rows`` x 10, and passes."""
    chunks = _Chunks([chunk] * (rows // chunk))
    gc.collect()
    tracemalloc.start()
    try:
        states = streaming.stream_states(chunks, list(EQUAL_MASS), 15, check=_check)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(np.isfinite(st.compute()) for st in states.values())
    return peak, chunks.passes


def test_streamed_equal_mass_memory_does_not_grow_with_the_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 10**5 and 10**6 rows x 10 classes in chunks of 20 000 rows; the streamed states used
    # to keep the rows of the edge cells (5.4 MB more at 10**6 rows). The rows an edge
    # search may keep (2**18 per state by default, more than these sizes need) are cut
    # to 0 so that its bound shows here: per-range histograms of a fixed size only.
    monkeypatch.setattr(score_grid, "SEARCH_ROWS", 0, raising=False)
    small, _ = _peak(100_000)
    big, passes = _peak(1_000_000)
    growth = big - small
    assert growth < 1.5e6, f"peak grew by {growth / 1e6:.1f} MB from 10**5 to 10**6 rows"
    assert passes <= 4


# ----------------------------------------------------------------------------- --help


@pytest.mark.parametrize("command", ["table", "report"])
def test_help_states_the_chunk_rows_memory_in_numbers(command: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "calipers", command, "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    flat = " ".join(out.split())
    assert "does not grow with the rows" in flat
    assert "MB" in flat and "10^7" in flat


def test_chunked_parquet_table_never_reads_the_whole_file(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # telling regression files from classification files read the whole Parquet table
    # for its column names: 4e6 rows x 10 classes took 487 MB before the first chunk
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from calipers.cli import main

    p, y, _ = _chunk(0, 3000)
    cols = {f"p{j}": p[:, j].astype(np.float32) for j in range(K)}
    path = tmp_path / "preds.parquet"
    pq.write_table(pa.table({**cols, "label": y}), path, row_group_size=1000)

    def whole(*a: Any, **k: Any) -> Any:
        raise AssertionError("the whole Parquet file was read")

    monkeypatch.setattr(pq.ParquetFile, "read", whole)
    monkeypatch.setattr(pq, "read_table", whole)
    out = tmp_path / "t.json"
    assert main(["table", str(path), "--chunk-rows", "1000", "--out", str(out)]) == 0
    import json

    row = json.loads(out.read_text())["models"][0]
    P = check_predictions(p.astype(np.float32), y)
    assert _close(row["ace"], cp.ace(P, None)) and row["n"] == 3000


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads VmRSS of /proc/self/status")
def test_a_pass_over_a_memory_mapped_npy_file_holds_one_chunk(tmp_path: Any) -> None:
    # the mapped pages of a .npy file stayed in the process: a pass over 80 MB of
    # probabilities ended with 80 MB more resident memory (the file's size)
    n, k = 2_000_000, 10
    path = tmp_path / "probs.npy"
    arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, k))
    arr[:] = np.float32(1.0 / k)
    arr.flush()
    del arr
    code = f"""
import numpy as np
from calipers.io import read_prediction_chunks
def rss():
    with open("/proc/self/status") as fh:
        return int(next(l.split()[1] for l in fh if l.startswith("VmRSS:"))) / 1024
chunks = read_prediction_chunks({str(path)!r}, 65536)
before, most, rows, total = rss(), 0.0, 0, 0.0
for c in chunks:
    rows += c.array.shape[0]
    total += float(c.array.sum(dtype=np.float64))  # reads every page of the chunk
    most = max(most, rss())
print(rows, most - before, total)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    rows, grew, total = out.stdout.split()
    assert int(rows) == n and abs(float(total) - n * float(np.float32(1.0 / k)) * k) < 1e-3 * n
    assert float(grew) < 25.0, f"resident memory grew by {grew} MiB over an 80 MB file"
