"""Hardening of the metric objects (:mod:`calipers.stream.torchmetrics`): one reading per state.

A state fixes how it reads its input at the first batch (1-D scores P(y = 1) or
``(n, k)`` rows, the number of classes, the resolved lens, and for the binned
objects the dtype its bin edges are in) and refuses a later batch that reads
differently, naming the update; its configuration travels with it, so that
``load_state_dict``, ``merge_state``, ``forward`` and a distributed ``sync`` refuse a
state made with other settings and say which setting differs. A 0-d batch is
refused, as the functions refuse it. The oracle throughout is the calipers function
on the concatenated accepted batches.
"""

from __future__ import annotations

import numpy as np
import pytest

from ddp_processes import run_two_ranks

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

import calipers as cp  # noqa: E402
import calipers.stream.torchmetrics as tm  # noqa: E402
from calipers.estimators.binning import EqualWidth  # noqa: E402
from calipers.stream.torchmetrics import ECE, NLL, BinnedProperCE, Brier, ClasswiseECE  # noqa: E402

# Every object the module exports, with the calipers function it must equal on the
# concatenated batches (the oracle).
OBJECTS = {
    "ECE": (lambda **kw: ECE(n_bins=10, **kw), lambda p, y: cp.ece(p, y, n_bins=10)),
    "ClasswiseECE": (
        lambda **kw: ClasswiseECE(n_bins=10, **kw),
        lambda p, y: cp.classwise_ece(p, y, n_bins=10),
    ),
    "BinnedProperCE": (
        lambda **kw: BinnedProperCE(n_bins=10, **kw),
        lambda p, y: cp.calibration_error(p, y, estimator=EqualWidth(10), divergence="kl"),
    ),
    "NLL": (lambda **kw: NLL(**kw), lambda p, y: cp.nll(p, y)),
    "Brier": (lambda **kw: Brier(**kw), lambda p, y: cp.brier(p, y)),
}


# merging into an object that has had no update() makes torchmetrics warn that compute()
# comes "before the update": the state is not empty, the warning is torchmetrics' own
pytestmark = pytest.mark.filterwarnings("ignore:The ``compute`` method of metric")


def test_every_exported_object_is_covered() -> None:
    assert set(OBJECTS) == set(tm.__all__)


def _binary(n: int, seed: int, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, size=n)
    p[:11] = np.arange(11) / 10  # some scores on the bin edges
    p[0], p[10] = 0.05, 0.95
    y = rng.integers(0, 2, size=n)
    return torch.as_tensor(p).to(dtype), torch.as_tensor(y)


def _rows(n: int, k: int, seed: int, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.8), size=n)
    return torch.as_tensor(p).to(dtype), torch.as_tensor(rng.integers(0, k, size=n))


def _close(a, b) -> None:
    a, b = float(a), float(b)
    assert a == pytest.approx(b, rel=0, abs=1e-12), (a, b)


# --------------------------------------------------------------------------- item 2: one reading


@pytest.mark.parametrize("name", sorted(OBJECTS))
@pytest.mark.parametrize("order", ["1-D first", "rows first"])
def test_mixed_1d_and_two_column_batches_are_refused(name, order) -> None:
    make, oracle = OBJECTS[name]
    p, y = _binary(300, 1)
    two = torch.stack([1 - p, p], 1)
    first, second = (p, two) if order == "1-D first" else (two, p)
    m = make()
    m.update(first[:100], y[:100])
    m.update(first[100:150], y[100:150])
    with pytest.raises(cp.CalibrationInputError, match=r"update #3") as err:
        m.update(second[150:], y[150:])
    msg = str(err.value)
    assert "1-D" in msg and "(n, k)" in msg and "first batch" in msg, msg
    # the refused batch left the state as it was: the function on the accepted batches
    _close(m.compute(), oracle(first[:150], y[:150]))
    # the same through forward() (Lightning's self.metric(preds, target))
    m = make()
    m(first[:100], y[:100])
    m(first[100:150], y[100:150])
    with pytest.raises(cp.CalibrationInputError, match=r"update #3"):
        m(second[150:], y[150:])
    _close(m.compute(), oracle(first[:150], y[:150]))


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_a_change_in_the_number_of_classes_is_refused(name) -> None:
    make, oracle = OBJECTS[name]
    p3, y3 = _rows(200, 3, 2)
    p4, y4 = _rows(50, 4, 3)
    m = make()
    m.update(p3, y3)
    with pytest.raises(cp.CalibrationInputError, match=r"update #2.*classes.*4.*3"):
        m.update(p4, y4)
    _close(m.compute(), oracle(p3, y3))


@pytest.mark.parametrize("name", ["ECE", "ClasswiseECE", "BinnedProperCE"])
def test_binned_objects_refuse_a_change_of_dtype(name) -> None:
    # The bin edges are j / n_bins in the input's dtype: a float32 score of 0.6 is the
    # edge in float32 but above it in float64, so a state mixing the two bins the same
    # score two ways and equals no function call on the concatenated data.
    make, oracle = OBJECTS[name]
    p, y = _binary(200, 4)
    two = torch.stack([1 - p, p], 1)
    m = make()
    m.update(two[:100].float(), y[:100])
    with pytest.raises(cp.CalibrationInputError, match=r"update #2.*dtype.*float64.*float32"):
        m.update(two[100:], y[100:])
    _close(m.compute(), oracle(two[:100].float(), y[:100]))


def test_lens_fixed_by_first_batch_of_auto() -> None:
    # lens="auto" reads 1-D input with the binary lens and rows by their top label
    p, y = _binary(120, 5)
    m = ECE(n_bins=10)
    m.update(p[:60], y[:60])
    with pytest.raises(cp.CalibrationInputError, match=r"update #2"):
        m.update(torch.stack([1 - p[60:], p[60:]], 1), y[60:])


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_a_refused_batch_in_forward_keeps_the_earlier_batches(name) -> None:
    # torchmetrics' forward() empties the state, adds the batch, merges the state back:
    # an error in between (here a NaN) must not lose the batches before it
    make, oracle = OBJECTS[name]
    p, y = _rows(300, 3, 22)
    bad = p[200:].clone()
    bad[5, 0] = float("nan")
    m = make()
    m(p[:100], y[:100])
    m(p[100:200], y[100:200])
    with pytest.raises(cp.CalibrationInputError, match=r"update #3"):
        m(bad, y[200:])
    _close(m.compute(), oracle(p[:200], y[:200]))
    m(p[200:], y[200:])  # and it goes on as update() would
    _close(m.compute(), oracle(p, y))


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_reset_frees_the_reading(name) -> None:
    make, oracle = OBJECTS[name]
    p, y = _binary(100, 6)
    P, Y = _rows(100, 3, 7)
    m = make()
    m.update(p, y)
    m.reset()
    m.update(P, Y)
    _close(m.compute(), oracle(P, Y))


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_random_sequences_equal_the_function_on_the_accepted_batches(name) -> None:
    # Any mix of update, forward, merge_state, a load_state_dict round trip and empty
    # batches, interleaved with refused batches of another reading: compute() is the
    # function on the concatenated accepted batches.
    make, oracle = OBJECTS[name]
    rng = np.random.default_rng(25)
    refused = 0
    for trial in range(9):
        k, dtype = (1, 2, 3)[trial % 3], (torch.float64, torch.float32)[trial % 2]
        if k == 1:
            p, y = _binary(300, trial, dtype)
            other = torch.stack([1 - p, p], 1)  # the same problem as (n, 2) rows
        else:
            p, y = _rows(300, k, trial, dtype)
            other = p[:, 1] if k == 2 else _rows(300, 4, trial, dtype)[0]
        m, i, fixed = make(), 0, False
        while i < len(y):
            step = int(rng.integers(0, 50))
            sl = slice(i, min(len(y), i + step))
            op = rng.choice(["update", "forward", "merge", "load", "refused"])
            if op == "refused":
                if fixed:
                    call = m.update if rng.random() < 0.5 else m
                    with pytest.raises(cp.CalibrationInputError, match=r"update #"):
                        call(other[:7], y[:7] % 2)
                    refused += 1
                continue
            if op == "update":
                m.update(p[sl], y[sl])
            elif op == "forward":
                m(p[sl], y[sl])
            elif op == "merge":
                part = make()
                part.update(p[sl], y[sl])
                m.merge_state(part)
            else:
                m.update(p[sl], y[sl])
                m.persistent(True)
                loaded = make()
                loaded.persistent(True)
                loaded.load_state_dict(m.state_dict())
                m = loaded
            fixed = fixed or sl.stop > sl.start
            i = sl.stop
        with pytest.raises(cp.CalibrationInputError, match=r"update #"):
            m(other[:7], y[:7] % 2)  # (at least one refused batch per sequence)
        _close(m.compute(), oracle(p, y))
        refused += 1
    assert refused > 9


# --------------------------------------------------------------------------- item 3: 0-d batches


@pytest.mark.parametrize("name", sorted(OBJECTS))
def test_zero_dim_batch_is_refused_as_the_function_refuses_it(name) -> None:
    make, oracle = OBJECTS[name]
    with pytest.raises(cp.CalibrationInputError, match=r"shape"):
        oracle(torch.tensor(0.5), torch.tensor(1))
    with pytest.raises(cp.CalibrationInputError, match=r"shape"):
        oracle(0.5, 1)
    m = make()
    with pytest.raises(cp.CalibrationInputError, match=r"update #1.*shape"):
        m.update(torch.tensor(0.5), torch.tensor(1))
    # nothing was added: the next batch alone gives the function's value
    p, y = _binary(50, 8)
    m.update(p, y)
    _close(m.compute(), oracle(p, y))


# --------------------------------------------------------------------------- cost guard


def test_classwise_state_size_is_guarded_like_any_binning() -> None:
    # the class-wise state is num_classes x n_bins totals per array: bounded by
    # calipers.validation.MAX_BINS (as any binning's totals), refused before allocating
    from calipers.validation import MAX_BINS

    with pytest.raises(cp.CalibrationInputError, match=r"num_classes.*n_bins.*MAX_BINS"):
        ClasswiseECE(num_classes=2**40)
    with pytest.raises(cp.CalibrationInputError, match=r"num_classes.*n_bins.*MAX_BINS"):
        ClasswiseECE(num_classes=MAX_BINS // 15 + 1, n_bins=15)
    ClasswiseECE(num_classes=MAX_BINS // 15, n_bins=15)  # the largest accepted
    with pytest.raises(cp.CalibrationInputError, match=r"num_classes must be an integer"):
        ClasswiseECE(num_classes=3.0)
    # num_classes=None: the first batch says how many classes, and is checked the same way
    m = ClasswiseECE(n_bins=2**18)
    p, y = _rows(3, 5, 23)
    with pytest.raises(cp.CalibrationInputError, match=r"update #1.*5 x 262144"):
        m.update(p, y)
    assert m.count.numel() == 0


# --------------------------------------------------------------------------- item 3: load


def _state(m) -> dict:
    m.persistent(True)
    return m.state_dict()


def test_load_state_dict_with_other_n_bins_is_refused() -> None:
    p, y = _binary(300, 9)
    a = ECE(n_bins=15)
    a.update(p, y)
    b = ECE(n_bins=10)
    b.persistent(True)
    with pytest.raises(cp.CalibrationInputError, match=r"n_bins.*self: 10.*state_dict: 15"):
        b.load_state_dict(_state(a))
    # b is untouched and still works
    b.update(p, y)
    _close(b.compute(), cp.ece(p, y, n_bins=10))


@pytest.mark.parametrize(
    ("make_a", "make_b", "setting"),
    [
        (lambda: ECE(edge_rule="left"), lambda: ECE(), "edge_rule"),
        (lambda: ECE(logits=True), lambda: ECE(), "logits"),
        (lambda: ECE(lens="binary"), lambda: ECE(lens="top_label"), "lens"),
        (lambda: ClasswiseECE(num_classes=2), lambda: ClasswiseECE(num_classes=3), "classes"),
        (lambda: NLL(clip=1e-15), lambda: NLL(), "clip"),
        (lambda: Brier(reduction="mean"), lambda: Brier(), "reduction"),
        (lambda: NLL(logits=True), lambda: NLL(), "logits"),
    ],
)
def test_load_and_merge_name_the_setting_that_differs(make_a, make_b, setting) -> None:
    p, y = _binary(200, 10)
    two = torch.stack([1 - p, p], 1)
    a, b = make_a(), make_b()
    a.update(two, y)
    with pytest.raises(cp.CalibrationInputError, match=rf"{setting}.*self.*other"):
        b.merge_state(a)
    b.persistent(True)
    with pytest.raises(cp.CalibrationInputError, match=rf"{setting}.*self.*state_dict"):
        b.load_state_dict(_state(a))
    assert float(b.count.sum() if hasattr(b, "count") else b.n) == 0  # b untouched


def test_load_state_dict_round_trip_equals_the_function() -> None:
    p, y = _rows(400, 4, 11)
    for make, oracle in OBJECTS.values():
        a = make()
        a.update(p[:250], y[:250])
        b = make()
        b.persistent(True)
        b.load_state_dict(_state(a))
        b.update(p[250:], y[250:])
        _close(b.compute(), oracle(p, y))
        # the loaded state keeps the reading of the one it came from
        with pytest.raises(cp.CalibrationInputError, match=r"classes"):
            b.update(*_rows(10, 3, 12))


def test_load_state_dict_without_its_configuration_is_refused() -> None:
    p, y = _binary(100, 13)
    a = ECE(n_bins=10)
    a.update(p, y)
    sd = _state(a)
    del sd["config"]
    b = ECE(n_bins=10)
    b.persistent(True)
    with pytest.raises(cp.CalibrationInputError, match=r"config"):
        b.load_state_dict(sd)


# --------------------------------------------------------------------------- item 3: merge


def test_merge_different_n_bins_is_a_clear_error() -> None:
    p, y = _binary(200, 14)
    a, b = ECE(n_bins=15), ECE(n_bins=10)
    a.update(p, y)
    b.update(p, y)
    with pytest.raises(cp.CalibrationInputError, match=r"n_bins.*self: 10.*other: 15"):
        b.merge_state(a)
    _close(b.compute(), cp.ece(p, y, n_bins=10))  # b untouched


def test_binary_lens_does_not_merge_into_top_label() -> None:
    p, y = _rows(200, 2, 15)
    a, b = ECE(lens="binary"), ECE(lens="top_label")
    a.update(p, y)
    b.update(p, y)
    with pytest.raises(cp.CalibrationInputError, match=r"lens.*'top_label'.*'binary'"):
        b.merge_state(a)
    # auto resolved to the binary lens (1-D input) does not merge into top_label either
    q, z = _binary(100, 16)
    c = ECE()
    c.update(q, z)
    with pytest.raises(cp.CalibrationInputError, match=r"lens"):
        b.merge_state(c)


def test_merge_refuses_another_reading() -> None:
    p, y = _binary(200, 17)
    for make, _ in OBJECTS.values():
        a, b = make(), make()
        a.update(p, y)
        b.update(torch.stack([1 - p, p], 1), y)
        with pytest.raises(cp.CalibrationInputError, match=r"form"):
            b.merge_state(a)


def test_merge_refuses_a_dict_without_configuration() -> None:
    p, y = _binary(100, 18)
    a, b = ECE(n_bins=10), ECE(n_bins=10)
    a.update(p, y)
    with pytest.raises(cp.CalibrationInputError, match=r"config"):
        b.merge_state({"count": a.count, "sum_score": a.sum_score, "sum_target": a.sum_target})


@pytest.mark.parametrize("k", [1, 2, 4])
def test_merge_and_forward_equal_the_function(k) -> None:
    p, y = _binary(600, 19) if k == 1 else _rows(600, k, 19)
    for make, oracle in OBJECTS.values():
        ref = oracle(p, y)
        # two objects, each on its part, merged (also into a fresh object, and a fresh one in)
        a, b, fresh = make(), make(), make()
        a.update(p[:250], y[:250])
        b.update(p[250:], y[250:])
        a.merge_state(b)
        a.merge_state(make())
        _close(a.compute(), ref)
        fresh.merge_state(a)
        _close(fresh.compute(), ref)
        # forward() batch by batch (the per-batch value is the function on the batch)
        m = make()
        for sl in (slice(0, 1), slice(1, 100), slice(100, 100), slice(100, 600)):
            out = m(p[sl], y[sl])
            if sl.stop > sl.start:
                _close(out, oracle(p[sl], y[sl]))
        _close(m.compute(), ref)


def test_classwise_ece_without_num_classes_forward_and_merge() -> None:
    p, y = _rows(500, 3, 20)
    m = ClasswiseECE(n_bins=10)
    m(p[:200], y[:200])
    m(p[200:], y[200:])
    _close(m.compute(), cp.classwise_ece(p, y, n_bins=10))
    a, b = ClasswiseECE(n_bins=10), ClasswiseECE(n_bins=10)
    a.update(p[:200], y[:200])
    b.merge_state(a)  # empty (no rows yet) <- 3 classes
    a.merge_state(ClasswiseECE(n_bins=10))  # 3 classes <- empty
    b.update(p[200:], y[200:])
    _close(b.compute(), cp.classwise_ece(p, y, n_bins=10))
    _close(a.compute(), cp.classwise_ece(p[:200], y[:200], n_bins=10))


# --------------------------------------------------------------------------- item 3: sync


def _fake_sync(m, other):
    """``m.compute()`` as if a second process held ``other``'s state (gather = [mine, theirs]).

    compute() synchronises the states (torchmetrics' ``sync``, with each state's
    ``dist_reduce_fx``), computes, and restores the local state.
    """
    theirs = {id(getattr(m, attr)): getattr(other, attr) for attr in m._defaults}

    def gather(t, group=None):
        return [t, theirs[id(t)]]

    saved = m.dist_sync_fn, m.distributed_available_fn
    m.dist_sync_fn, m.distributed_available_fn = gather, lambda: True
    try:
        return m.compute()
    finally:
        m.dist_sync_fn, m.distributed_available_fn = saved


def test_sync_equals_the_function_and_refuses_other_settings() -> None:
    p, y = _rows(400, 3, 21)
    for make, oracle in OBJECTS.values():
        a, b = make(), make()
        a.update(p[:150], y[:150])
        b.update(p[150:], y[150:])
        _close(_fake_sync(a, b), oracle(p, y))
        a.update(p[:0], y[:0])  # (an update drops compute()'s cache)
        _close(a.compute(), oracle(p[:150], y[:150]))  # the local state is back
    a, b = ECE(n_bins=10), ECE(n_bins=15)
    a.update(p, y)
    b.update(p, y)
    with pytest.raises(cp.CalibrationInputError, match=r"n_bins.*10.*15"):
        _fake_sync(a, b)
    a, b = Brier(), Brier()
    a.update(p, y)
    b.update(p[:, 0], (y == 0).long())
    with pytest.raises(cp.CalibrationInputError, match=r"form"):
        _fake_sync(a, b)


_DDP_WORKER = """
import json, sys
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, {src!r})
import calipers as cp
from calipers.stream.torchmetrics import ECE, Brier

rank = int(sys.argv[1])
dist.init_process_group(
    "gloo", init_method={init!r}, rank=rank, world_size=2, timeout=timedelta(seconds=60)
)
g = torch.Generator().manual_seed(rank)
p = torch.rand(200, generator=g, dtype=torch.float64)
y = (torch.rand(200, generator=g) < p).long()
out = {{}}
cases = {{
    "n_bins": (ECE(n_bins=10 if rank == 0 else 15), p),
    "form": (Brier(), p if rank == 0 else torch.stack([1 - p, p], 1)),
    "same": (ECE(n_bins=10), p),
}}
for name, (m, preds) in cases.items():
    m.update(preds, y)
    try:
        out[name] = float(m.compute())
    except cp.CalibrationInputError as err:
        out[name] = "CalibrationInputError: " + str(err)
with open({result!r} + str(rank) + ".json", "w") as f:
    json.dump(out, f)
dist.barrier()
dist.destroy_process_group()
"""


def test_ddp_processes_with_other_settings_refuse_to_synchronise(tmp_path) -> None:
    results = run_two_ranks(tmp_path, _DDP_WORKER)
    for out in results:
        assert out["n_bins"].startswith("CalibrationInputError"), out
        assert "n_bins differs (process 0: 10, process 1: 15)" in out["n_bins"], out
        assert "form differs" in out["form"], out
    # the two processes' data together, as one process sees it
    ps, ys = [], []
    for rank in (0, 1):
        g = torch.Generator().manual_seed(rank)
        p = torch.rand(200, generator=g, dtype=torch.float64)
        ps.append(p)
        ys.append((torch.rand(200, generator=g) < p).long())
    ref = float(cp.ece(torch.cat(ps), torch.cat(ys), n_bins=10))
    assert results[0]["same"] == pytest.approx(ref, rel=0, abs=1e-12)
    assert results[1]["same"] == results[0]["same"]
