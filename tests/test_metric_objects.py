"""The metric objects of :mod:`calipers.stream.torchmetrics`: streamed, O(bins) state, DDP-summed.

Batches through ``update`` then ``compute`` give the calipers function's value
on the concatenated data (to 1e-12), for 1-D binary and ``(n, k)`` input, in
float32 and float64, with scores exactly on bin edges; the state does not grow
with the data; ``reset`` empties it; and two ``torch.distributed`` processes
(gloo, CPU), each on its part of the data, compute the single-process value.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ddp_processes import run_two_ranks

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

import calipers as cp  # noqa: E402
from calipers.estimators.binning import EqualWidth  # noqa: E402
from calipers.stream.torchmetrics import ECE, NLL, BinnedProperCE, Brier, ClasswiseECE  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"


def _data(n: int, k: int, dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded predictions with some scores exactly on the edges j/5, j/10, j/15."""
    rng = np.random.default_rng(seed)
    y = torch.as_tensor(rng.integers(0, max(k, 2), size=n))
    if k == 1:  # 1-D P(y = 1)
        p = rng.uniform(0, 1, size=n)
        edges = np.concatenate([np.arange(16) / 15, np.arange(11) / 10, [0.0, 1.0]])
        p[: len(edges)] = edges
        return torch.as_tensor(p).to(dtype), y
    p = rng.dirichlet(np.full(k, 0.7), size=n)
    # rows whose top probability is an edge value (in either dtype): c, rest spread evenly
    for i, c in enumerate([0.6, 0.8, 1.0, 0.4, 2 / 3, 0.7, 0.9, 1 / 3 + 1e-9]):
        if c >= 1 / k:
            p[i] = (1 - c) / (k - 1)
            p[i, i % k] = c
    return torch.as_tensor(p).to(dtype), y


def _batches(n: int, sizes: tuple[int, ...] = (1, 7, 64, 300)) -> list[slice]:
    out, i, j = [], 0, 0
    while i < n:
        step = sizes[j % len(sizes)]
        out.append(slice(i, min(n, i + step)))
        i += step
        j += 1
    return out


def _stream(metric, p: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    for sl in _batches(len(y)):
        metric.update(p[sl], y[sl])
    return metric.compute()


def _close(a, b) -> None:
    a, b = float(a), float(b)
    assert a == pytest.approx(b, rel=0, abs=1e-12), (a, b)


CASES = [(k, dtype) for k in (1, 2, 5) for dtype in (torch.float32, torch.float64)]


@pytest.mark.parametrize(("k", "dtype"), CASES)
@pytest.mark.parametrize("lens", ["auto", "top_label"])
@pytest.mark.parametrize("edge_rule", ["right", "left"])
def test_ece_mce_rmsce_stream_equals_function(k, dtype, lens, edge_rule) -> None:
    p, y = _data(1000, k, dtype, seed=k)
    for n_bins in (5, 15):
        kw = dict(n_bins=n_bins, lens=lens, edge_rule=edge_rule)
        _close(_stream(ECE(**kw), p, y), cp.ece(p, y, **kw))
        _close(_stream(ECE(norm="max", **kw), p, y), cp.mce(p, y, **kw))
        rms = cp.rmsce(p, y, lens=lens, estimator=EqualWidth(n_bins, edge_rule))
        _close(_stream(ECE(norm="l2", **kw), p, y), rms)


@pytest.mark.parametrize(("k", "dtype"), CASES)
@pytest.mark.parametrize("score", ["log", "brier"])
def test_binned_proper_ce_stream_equals_function(k, dtype, score) -> None:
    p, y = _data(900, k, dtype, seed=30 + k)
    div = "kl" if score == "log" else "squared_l2"
    for lens in ("auto", "top_label"):
        got = _stream(BinnedProperCE(score=score, n_bins=10, lens=lens), p, y)
        ref = cp.calibration_error(p, y, lens=lens, estimator=EqualWidth(10), divergence=div)
        _close(got, ref)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_binary_lens_on_two_columns(dtype) -> None:
    p, y = _data(500, 2, dtype, seed=7)
    _close(_stream(ECE(lens="binary"), p, y), cp.ece(p, y, lens="binary"))


@pytest.mark.parametrize(("k", "dtype"), CASES)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_classwise_ece_stream_equals_function(k, dtype, reduction) -> None:
    p, y = _data(800, k, dtype, seed=10 + k)
    m = ClasswiseECE(num_classes=max(k, 2), n_bins=10, reduction=reduction)
    _close(_stream(m, p, y), cp.classwise_ece(p, y, n_bins=10, reduction=reduction))


@pytest.mark.parametrize(("k", "dtype"), CASES)
def test_nll_brier_stream_equals_function(k, dtype) -> None:
    p, y = _data(700, k, dtype, seed=20 + k)
    _close(_stream(NLL(), p, y), cp.nll(p, y))
    _close(_stream(Brier(), p, y), cp.brier(p, y))
    if k > 1:
        _close(_stream(Brier(reduction="mean"), p, y), cp.brier(p, y, reduction="mean"))


@pytest.mark.parametrize("k", [1, 4])
def test_logits(k) -> None:
    rng = np.random.default_rng(3)
    z = torch.as_tensor(rng.normal(0, 3, size=(600,) if k == 1 else (600, k)))
    y = torch.as_tensor(rng.integers(0, max(k, 2), size=600))
    _close(_stream(ECE(logits=True), z, y), cp.ece(z, y, logits=True))
    _close(_stream(NLL(logits=True), z, y), cp.nll(z, y, logits=True))
    _close(_stream(Brier(logits=True), z, y), cp.brier(z, y, logits=True))
    m = ClasswiseECE(num_classes=max(k, 2), logits=True)
    _close(_stream(m, z, y), cp.classwise_ece(z, y, logits=True))


def _n_state(metric) -> int:
    return sum(int(getattr(metric, name).numel()) for name in metric._defaults)


def test_state_size_does_not_depend_on_n() -> None:
    small, large = _data(10, 3, torch.float64, 0), _data(5000, 3, torch.float64, 1)
    # the totals, plus the config (settings and reading: 7, 6 and 4 numbers)
    for make, expected in [
        (lambda: ECE(n_bins=15), 3 * 15 + 7),
        (lambda: ClasswiseECE(num_classes=3, n_bins=15), 3 * 3 * 15 + 6),
        (lambda: BinnedProperCE(n_bins=15), 3 * 15 + 7),
        (NLL, 2 + 4),
        (Brier, 2 + 4),
    ]:
        sizes = []
        for p, y in (small, large):
            m = make()
            _stream(m, p, y)
            sizes.append(_n_state(m))
        assert sizes == [expected, expected]


def test_reset_and_empty() -> None:
    p, y = _data(300, 3, torch.float64, 5)
    m = ECE()
    with pytest.warns(UserWarning, match="before the ``update``"):
        assert torch.isnan(m.compute())
    m.update(p, y)
    first = m.compute()
    m.reset()
    assert float(m.count.sum()) == 0
    m.update(p[:100], y[:100])
    _close(m.compute(), cp.ece(p[:100], y[:100]))
    m.reset()
    m.update(p, y)
    _close(m.compute(), first)
    m.update(p[:0], y[:0])  # an empty batch changes nothing
    _close(m.compute(), first)


def test_bad_arguments() -> None:
    with pytest.raises(cp.CalibrationInputError):
        ECE(norm="l3")
    with pytest.raises(cp.CalibrationInputError):
        ECE(lens="classwise")
    with pytest.raises(cp.CalibrationInputError):
        ClasswiseECE(num_classes=3).update(*_data(10, 4, torch.float64, 0))
    with pytest.raises(cp.CalibrationInputError):
        ECE().update(np.array([0.2]), np.array([1]))


def test_import_calipers_does_not_import_it() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import sys, calipers; print('torchmetrics' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- distributed

_WORKER = textwrap.dedent(
    """
    import json, sys
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    sys.path.insert(0, {src!r})
    sys.path.insert(0, {tests!r})
    from test_metric_objects import _data, _batches
    from calipers.stream.torchmetrics import ECE, NLL, BinnedProperCE, Brier, ClasswiseECE

    rank = int(sys.argv[1])
    dist.init_process_group(
        "gloo", init_method={init!r}, rank=rank, world_size=2, timeout=timedelta(seconds=60)
    )
    out = {{}}
    for k, dtype in [(1, torch.float32), (4, torch.float64), (4, torch.float32)]:
        p, y = _data(1001, k, dtype, seed=k)
        part = slice(0, 600) if rank == 0 else slice(600, None)   # unequal halves
        ms = {{
            "ece": ECE(n_bins=10), "mce": ECE(n_bins=10, norm="max"),
            "rms": ECE(n_bins=10, norm="l2"), "cw": ClasswiseECE(max(k, 2), n_bins=10),
            "nll": NLL(), "brier": Brier(), "kl": BinnedProperCE(n_bins=10),
        }}
        for name, m in ms.items():
            for sl in _batches(len(y[part])):
                m.update(p[part][sl], y[part][sl])
            out[f"{{k}}-{{dtype}}-{{name}}"] = float(m.compute())
    with open({result!r} + str(rank) + ".json", "w") as f:
        json.dump(out, f)
    dist.barrier()
    dist.destroy_process_group()
    """
)


def test_ddp_two_processes_equal_single_process(tmp_path) -> None:
    results = run_two_ranks(tmp_path, _WORKER, tests=str(Path(__file__).resolve().parent))
    assert results[0] == results[1]  # every process computes the synchronised value
    for k, dtype in [(1, torch.float32), (4, torch.float64), (4, torch.float32)]:
        p, y = _data(1001, k, dtype, seed=k)
        expected = {
            "ece": cp.ece(p, y, n_bins=10),
            "mce": cp.mce(p, y, n_bins=10),
            "rms": cp.rmsce(p, y, estimator=EqualWidth(10)),
            "cw": cp.classwise_ece(p, y, n_bins=10),
            "nll": cp.nll(p, y),
            "brier": cp.brier(p, y),
            "kl": cp.calibration_error(p, y, estimator=EqualWidth(10), divergence="kl"),
        }
        for name, value in expected.items():
            _close(results[0][f"{k}-{dtype}-{name}"], value)
