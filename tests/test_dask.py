"""calipers.stream.dask: states of Dask partitions, merged on a real cluster, equal the in-memory values.

A ``distributed.LocalCluster`` of two worker processes (one thread each) is started
once for the module. The oracle is calipers itself on the whole NumPy array
(``cp.ece``, ``cp.nll``, ``cp.reliability_table``, ...), computed in this process
without Dask. Partition states are merged in another order than the in-memory sums,
so values are compared with a relative tolerance of 1e-12 (bin counts exactly).
The real predictions come from the shared data folder (``$CALIPERS_SHARED_DATA`` or
``<repo>/../shared/data``, skipped only when absent); the rest of the module is
skipped only when Dask or distributed is not installed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

import pandas as pd  # noqa: E402  (after the skips: dask.dataframe needs pandas)

import calipers as cp  # noqa: E402
import calipers.stream.dask as cpd  # noqa: E402
from calipers.stream.calibration_state import CalibrationState  # noqa: E402
from calipers.validation import CalibrationInputError  # noqa: E402
from shared_data import load as _load  # noqa: E402

REL = 1e-12

#: uneven row chunks of 10 000 rows, one of them empty
UNEVEN = (1234, 3000, 17, 0, 4000, 1749)

#: the metric functions that the presets of CalibrationState.for_metric reproduce
ORACLES: dict[str, Callable[..., float]] = {
    "ece": cp.ece,
    "mce": cp.mce,
    "sce": cp.sce,
    "classwise_ece": cp.classwise_ece,
    "top_label_ece": cp.top_label_ece,
    "bin_averaged_ece": cp.bin_averaged_ece,
}

#: the presets with equal-mass bins, which take a second pass
EQUAL_MASS: dict[str, Callable[..., float]] = {"ace": cp.ace, "tace": cp.tace}

#: the columns of the command line's table that calipers.stream.dask.table_row computes
TABLE = {
    "ece": cp.ece,
    "ace": cp.ace,
    "sce": cp.sce,
    "tace": cp.tace,
    "mce": cp.mce,
    "rmsce": cp.rmsce,
    "classwise_ece": cp.classwise_ece,
    "bin_averaged_ece": cp.bin_averaged_ece,
    "accuracy": cp.accuracy,
    "nll": cp.nll,
    "brier": cp.brier,
}


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as c,
    ):
        yield c


def _close(got: float, want: float, what: str) -> None:
    assert np.isfinite(want), what
    assert abs(got - want) <= REL * abs(want), f"{what}: {got!r} != {want!r}"


def _same_table(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype.names == want.dtype.names
    for c in want.dtype.names:
        if want[c].dtype.kind in "fc":
            np.testing.assert_allclose(got[c], want[c], rtol=REL, atol=1e-15, err_msg=c)
        else:
            assert got[c].tolist() == want[c].tolist(), c


def _write_parts(folder: Path, frame: pd.DataFrame, sizes: tuple[int, ...]) -> Path:
    """A partitioned Parquet data set: one file per row block, as Dask writes them."""
    folder.mkdir()
    start = 0
    for i, size in enumerate(sizes):
        frame.iloc[start : start + size].to_parquet(folder / f"part.{i}.parquet", index=False)
        start += size
    assert start == len(frame)
    return folder


def _frame(P: np.ndarray, y: np.ndarray) -> pd.DataFrame:
    cols = {f"p{j}": P[:, j] for j in range(P.shape[1])}
    # class columns out of order: the class index in the name decides
    return pd.DataFrame({"label": y, **dict(reversed(list(cols.items())))})


# ----------------------------------------------------------------------------- dask arrays


def test_real_probs_on_the_cluster(client: Any) -> None:
    d = _load("labelerrors_cifar10.npz")
    P, y = d["probs"], d["labels"]
    dP = da.from_array(P, chunks=(UNEVEN, (P.shape[1],)))
    dy = da.from_array(y, chunks=(2500,))  # other chunks than probs: rechunked
    states = cpd.calibration_states(dP, dy, list(ORACLES), split_every=3, scheduler=client)
    assert list(states) == list(ORACLES)
    for name, oracle in ORACLES.items():
        _close(states[name].compute(), oracle(P, y), name)
    st = states["ece"]
    _close(st.accuracy(), cp.accuracy(P, y), "accuracy")
    _close(st.nll(), cp.nll(P, y), "nll")
    _close(st.brier(), cp.brier(P, y), "brier")
    _same_table(st.reliability_table(as_frame=False), cp.reliability_table(P, y, as_frame=False))
    _same_table(
        states["classwise_ece"].reliability_table(empty="keep", as_frame=False),
        cp.reliability_table(P, y, lens="classwise", empty="keep", as_frame=False),
    )


def test_equal_mass_bins_take_a_second_pass(client: Any) -> None:
    d = _load("labelerrors_imdb.npz")
    P, y = d["probs"], d["labels"]  # 25000 x 2, rows sum to 1 within 2e-5
    chunks = (9000, 1, 0, 12000, 3999)
    dP, dy = da.from_array(P, chunks=(chunks, (2,))), da.from_array(y, chunks=(chunks,))
    exact = cpd.calibration_states(dP, dy, list(EQUAL_MASS), scheduler=client)
    one_pass = cpd.calibration_states(dP, dy, list(EQUAL_MASS), scheduler=client, refine=False)
    for name, oracle in EQUAL_MASS.items():
        want = oracle(P, y)
        _close(exact[name].compute(), want, name)
        assert exact[name].error_bound() == 0.0
        bound = one_pass[name].error_bound()
        assert abs(one_pass[name].compute() - want) <= bound + 1e-15, name


def test_real_logits_with_weights_on_the_cluster(client: Any) -> None:
    d = _load("densenet40_c10_test.npz")
    z, y = d["logits"], d["labels"]
    w = np.random.default_rng(0).gamma(2.0, size=y.shape[0])
    w[::101] = 0.0
    chunks = (3333, 1, 2666, 4000)
    est = cp.EqualWidth(10)
    metrics = {
        "ece": CalibrationState.for_metric("ece"),
        "top_label": CalibrationState(lens="top_label", estimator=est),
        "tce_p": CalibrationState.for_metric("tce_p", p=2.0),
    }
    states = cpd.calibration_states(
        da.from_array(z, chunks=(chunks, (10,))),
        da.from_array(y, chunks=(chunks,)),
        metrics,
        sample_weight=da.from_array(w, chunks=(chunks,)),
        logits=True,
        scheduler=client,
    )
    _close(states["ece"].compute(), cp.ece(z, y, logits=True, sample_weight=w), "ece")
    _close(states["tce_p"].compute(), cp.tce_p(z, y, p=2.0, logits=True, sample_weight=w), "tce_p")
    _close(states["ece"].nll(), cp.nll(z, y, logits=True, sample_weight=w), "nll")
    _close(states["ece"].brier(), cp.brier(z, y, logits=True, sample_weight=w), "brier")
    got = states["top_label"].murphy_decomposition()
    want = cp.murphy_decomposition(
        z, y, lens="top_label", estimator=est, logits=True, sample_weight=w
    )
    for name in want.__dataclass_fields__:
        assert abs(getattr(got, name) - getattr(want, name)) <= 1e-12, name
    _same_table(
        states["top_label"].reliability_table(as_frame=False),
        cp.reliability_table(
            z, y, lens="top_label", estimator=est, logits=True, sample_weight=w, as_frame=False
        ),
    )


def test_binary_forecasts_and_the_one_number_functions(client: Any) -> None:
    d = _load("niamey2016_EMOS.npz")
    p, y = d["p"], d["y"]  # 92 rows, labels stored as floats 0.0 / 1.0
    dp, dy = da.from_array(p, chunks=30), da.from_array(y, chunks=30)
    _close(cpd.ece(dp, dy, n_bins=10, scheduler=client), cp.ece(p, y, n_bins=10), "ece")
    sel = cp.threshold(0.2)
    got = cpd.calibration_error(
        dp, dy, selection=sel, divergence="l2", aggregate="mean", scheduler=client
    )
    want = cp.calibration_error(p, y, selection=sel, divergence="l2", aggregate="mean")
    _close(got, want, "calibration_error")


def test_the_synchronous_scheduler_gives_the_cluster_result_bit_for_bit(client: Any) -> None:
    d = _load("labelerrors_imdb.npz")
    P, y = d["probs"], d["labels"]
    chunks = ((7000, 11000, 6999, 1), (2,))
    dP, dy = da.from_array(P, chunks=chunks), da.from_array(y, chunks=(chunks[0],))
    on_cluster = cpd.calibration_states(dP, dy, ["ece", "classwise_ece"], scheduler=client)
    local = cpd.calibration_states(dP, dy, ["ece", "classwise_ece"], scheduler="synchronous")
    for name in on_cluster:
        # the same tree of merges: the same float64 additions in the same order
        assert on_cluster[name].to_json() == local[name].to_json(), name
    # another tree (pairs) adds in another order: equal to rounding
    pairs = cpd.calibration_states(
        dP, dy, ["ece", "classwise_ece"], split_every=2, scheduler="synchronous"
    )
    for name in on_cluster:
        _close(pairs[name].compute(), on_cluster[name].compute(), name)
        _close(pairs[name].compute(), ORACLES[name](P, y), name)


def test_arrays_of_unknown_chunk_sizes_from_one_frame() -> None:
    P, y = _seeded(700, 4, seed=3)
    ddf = dd.from_pandas(_frame(P, y), npartitions=3)
    probs = ddf[[f"p{j}" for j in range(4)]].to_dask_array()
    labels = ddf["label"].to_dask_array()
    assert np.isnan(probs.chunks[0][0])
    got = cpd.ece(probs, labels, scheduler="synchronous")
    _close(got, cp.ece(P, y), "ece")


# ----------------------------------------------------------------------------- dataframes, parquet


def _seeded(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(k, 0.7), size=n)
    y = np.array([rng.choice(k, p=p) for p in P])
    return P, y


@pytest.fixture(scope="module")
def cifar10_parquet(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, np.ndarray, np.ndarray]:
    d = _load("labelerrors_cifar10.npz")
    P, y = d["probs"], d["labels"]
    folder = tmp_path_factory.mktemp("parquet") / "cifar10"
    return _write_parts(folder, _frame(P, y), (2001, 17, 5000, 2982)), P, y


def test_partitioned_parquet_on_the_scheduler_address(
    client: Any, cifar10_parquet: tuple[Path, np.ndarray, np.ndarray]
) -> None:
    folder, P, y = cifar10_parquet
    metrics = ["ece", "mce", "sce", "classwise_ece"]
    states = cpd.read_parquet_states(folder, metrics, scheduler=client.scheduler.address)
    for name in metrics:
        _close(states[name].compute(), ORACLES[name](P, y), name)
    _close(states["sce"].nll(), cp.nll(P, y), "nll")


def test_table_row_on_the_cluster(
    client: Any, cifar10_parquet: tuple[Path, np.ndarray, np.ndarray]
) -> None:
    # what the command line calls: every column of its table
    folder, P, y = cifar10_parquet
    row = cpd.table_row(folder, scheduler=client, model="cifar10")
    assert list(row) == ["model", "n", "n_classes", "accuracy", "nll", "brier", *list(TABLE)[:8]]
    assert (row["model"], row["n"], row["n_classes"]) == ("cifar10", 10_000, 10)
    for name, oracle in TABLE.items():
        _close(row[name], oracle(P, y), name)


def test_a_local_cluster_of_workers(tmp_path: Path) -> None:
    # one worker process: starting a cluster takes seconds (the module's cluster has two)
    P, y = _seeded(900, 3, seed=4)
    folder = _write_parts(tmp_path / "small", _frame(P, y), (400, 500))
    states = cpd.read_parquet_states(folder, ["ece", "classwise_ece"], workers=1)
    _close(states["ece"].compute(), cp.ece(P, y), "ece")
    _close(states["classwise_ece"].compute(), cp.classwise_ece(P, y), "classwise_ece")


def test_dataframe_columns_weights_logits_and_class_names() -> None:
    rng = np.random.default_rng(5)
    z = rng.normal(size=(600, 3)) * 2
    y = rng.integers(0, 3, size=600)
    w = rng.uniform(0, 2, size=600)
    names = np.array(["cat", "dog", "eel"])
    frame = pd.DataFrame(
        {
            "logit_cat": z[:, 0],
            "logit_dog": z[:, 1],
            "logit_eel": z[:, 2],
            "truth": names[y],  # labels given by class-column name
            "w": w,
        }
    )
    ddf = dd.from_pandas(frame, npartitions=5)
    with pytest.raises(CalibrationInputError, match="no column 'weights'"):
        cpd.dataframe_states(ddf, label_column="truth", weight_column="weights")
    # the class names of logit columns are their full names
    states = cpd.dataframe_states(
        ddf.assign(truth="logit_" + ddf["truth"]),
        ["ece", "classwise_ece"],
        label_column="truth",
        weight_column="w",
        scheduler="synchronous",
    )
    _close(states["ece"].compute(), cp.ece(z, y, logits=True, sample_weight=w), "ece")
    _close(
        states["classwise_ece"].compute(),
        cp.classwise_ece(z, y, logits=True, sample_weight=w),
        "classwise_ece",
    )
    # explicit class columns in class order; the others are not read
    binary = cpd.dataframe_states(
        dd.from_pandas(pd.DataFrame({"q": z[:, 0], "y": (y == 0).astype(float)}), npartitions=2),
        prob_columns=["q"],
        logits=True,
        scheduler="synchronous",
    )
    _close(
        binary["ece"].compute(), cp.ece(z[:, 0], (y == 0).astype(int), logits=True), "binary ece"
    )


# ----------------------------------------------------------------------------- bad input


def test_column_chunked_probabilities_are_refused() -> None:
    P, y = _seeded(100, 4, seed=6)
    with pytest.raises(CalibrationInputError, match=r"chunked along its columns.*rechunk"):
        cpd.calibration_states(da.from_array(P, chunks=(50, 2)), da.from_array(y, chunks=50))


def test_a_partition_of_zero_weights_and_equal_mass_bins_is_refused() -> None:
    P, y = _seeded(100, 3, seed=11)
    w = np.ones(100)
    w[50:] = 0.0
    dP, dy, dw = (da.from_array(a, chunks=50) for a in (P, y, w))
    # fixed bins: the zero-weight rows are counted, as in memory
    st = cpd.calibration_states(dP, dy, sample_weight=dw, scheduler="sync")
    _close(st["ece"].compute(), cp.ece(P, y, sample_weight=w), "ece")
    _same_table(
        st["ece"].reliability_table(as_frame=False),
        cp.reliability_table(P, y, sample_weight=w, as_frame=False),
    )
    with pytest.raises(CalibrationInputError, match=r"chunk 1 \(rows 50\.\.99\):.*weight 0"):
        cpd.calibration_states(dP, dy, ["ace"], sample_weight=dw, scheduler="sync")


def test_lengths_that_differ_are_refused() -> None:
    P, y = _seeded(100, 4, seed=7)
    with pytest.raises(CalibrationInputError, match="probs has 100 rows but labels has 99"):
        cpd.ece(da.from_array(P, chunks=(50, 4)), da.from_array(y[:99], chunks=50))
    with pytest.raises(CalibrationInputError, match="sample_weight has 101"):
        cpd.ece(
            da.from_array(P, chunks=(50, 4)),
            da.from_array(y, chunks=50),
            sample_weight=da.ones(101, chunks=50),
        )


def test_invalid_values_name_their_chunk() -> None:
    P, y = _seeded(100, 4, seed=8)
    y = y.copy()
    y[73] = 4
    with pytest.raises(CalibrationInputError, match=r"chunk 1 \(rows 60\.\.99\):.*label"):
        cpd.ece(da.from_array(P, chunks=(60, 4)), da.from_array(y, chunks=60), scheduler="sync")


def test_missing_or_ambiguous_columns_are_refused(tmp_path: Path) -> None:
    P, y = _seeded(50, 2, seed=9)
    frame = _frame(P, y)
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(CalibrationInputError, match=r"no column 'p7' \(prob_columns\)"):
        cpd.dataframe_states(ddf, prob_columns=["p0", "p7"])
    with pytest.raises(CalibrationInputError, match="no label column"):
        cpd.dataframe_states(ddf.drop(columns="label"))
    with pytest.raises(CalibrationInputError, match="several label columns"):
        cpd.dataframe_states(ddf.assign(y=ddf["label"]))
    with pytest.raises(CalibrationInputError, match=r"column 'p1' has dtype (object|str)"):
        cpd.dataframe_states(ddf.assign(p1="x"))  # from the frame's dtypes, nothing computed
    holes = frame.copy()
    holes.loc[40, "p0"] = np.nan
    with pytest.raises(CalibrationInputError, match=r"partition 1, column 'p0': 1 missing"):
        cpd.dataframe_states(dd.from_pandas(holes, npartitions=2), scheduler="synchronous")
    folder = _write_parts(tmp_path / "d", frame, (50,))
    with pytest.raises(CalibrationInputError, match="not both"):
        cpd.read_parquet_states(folder, scheduler="synchronous", workers=2)
    with pytest.raises(CalibrationInputError, match="does not exist"):
        cpd.read_parquet_states(tmp_path / "absent")


def test_bad_options_are_refused() -> None:
    P, y = _seeded(40, 3, seed=10)
    dP, dy = da.from_array(P, chunks=(20, 3)), da.from_array(y, chunks=20)
    with pytest.raises(CalibrationInputError, match="split_every"):
        cpd.calibration_states(dP, dy, split_every=1)
    with pytest.raises(CalibrationInputError, match="scheduler must be one of"):
        cpd.ece(dP, dy, scheduler="tcp://127.0.0.1:1")
    used = CalibrationState.for_metric("ece")
    used.update(P, y)
    with pytest.raises(CalibrationInputError, match="already holds data"):
        cpd.calibration_states(dP, dy, {"ece": used})
    with pytest.raises(CalibrationInputError, match="ks cannot be streamed"):
        cpd.calibration_states(dP, dy, ["ks"])
    with pytest.raises(TypeError, match="dask.dataframe.DataFrame"):
        cpd.dataframe_states(pd.DataFrame({"p": [0.5], "y": [1]}))


def test_the_command_line_table_on_the_scheduler(
    client: Any,
    cifar10_parquet: tuple[Path, np.ndarray, np.ndarray],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `calipers table DIR --scheduler ADDRESS` prints every column of the in-memory table
    from calipers.cli import main

    folder, P, y = cifar10_parquet
    np.savez(tmp_path / "cifar10.npz", probs=P, labels=y)
    assert main(["table", str(tmp_path / "cifar10.npz"), "--format", "csv"]) == 0
    whole = capsys.readouterr().out.strip().splitlines()
    args = ["table", str(folder), "--scheduler", client.scheduler.address, "--format", "csv"]
    assert main(args) == 0
    captured = capsys.readouterr()
    dask = captured.out.strip().splitlines()
    assert dask[0] == whole[0]
    assert "Parquet, read by the Dask scheduler at tcp://" in captured.err
    want = dict(zip(whole[0].split(","), whole[1].split(","), strict=True))
    got = dict(zip(dask[0].split(","), dask[1].split(","), strict=True))
    assert got.pop("model") == "cifar10" and want.pop("model") == "cifar10"
    for key, value in want.items():
        assert float(got[key]) == pytest.approx(float(value), rel=1e-12), key


def test_the_command_line_report_on_the_scheduler(
    client: Any,
    cifar10_parquet: tuple[Path, np.ndarray, np.ndarray],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `calipers report DIR --scheduler ADDRESS`: the streamed report's rows, from Dask
    import json

    from calipers.cli import main

    folder, P, y = cifar10_parquet
    args = ["report", str(folder), "--scheduler", client.scheduler.address, "--format", "json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["rows"]
    assert row["n"] == 10_000
    for key, oracle in (("ece", cp.ece), ("ace", cp.ace), ("sce", cp.sce), ("nll", cp.nll)):
        assert row[key] == pytest.approx(float(oracle(P, y)), rel=1e-12), key
    assert doc["notes"][0].startswith("Computed on Dask")
    assert main([*args, "--chunk-rows", "10"]) != 0  # one or the other


# ----------------------------------------------------------------------------- one machine


def test_one_file_is_split_into_partitions_by_row_groups(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Dask's default put a whole file of up to 256 MiB in one partition: a 10**7-row binary
    # file was one task on one worker. Row groups are now combined up to about
    # _PARTITION_ROWS rows (2**20; 1000 here), and the finished partitions of each pass
    # are counted on stderr
    monkeypatch.setattr(cpd, "_PARTITION_ROWS", 1000)
    rng = np.random.default_rng(11)
    p = rng.uniform(size=5000)
    y = (rng.uniform(size=5000) < p).astype(np.int64)
    path = tmp_path / "one.parquet"
    pd.DataFrame({"p": p, "y": y}).to_parquet(path, row_group_size=1000)
    assert cpd._read_parquet(path).npartitions == 5
    row = cpd.table_row(path, scheduler=client, progress=True)
    err = capsys.readouterr().err
    assert "calipers: 'one.parquet': pass 1 of 2, 5/5 partitions" in err.replace(
        str(tmp_path) + "/", ""
    )
    assert "pass 2 of 2, 5/5 partitions" in err
    for name, oracle in TABLE.items():
        _close(row[name], oracle(p, y), name)


def test_the_command_line_says_when_a_local_cluster_is_not_worth_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from calipers.cli import main
    from calipers.cli.options import local_cluster_notice

    rng = np.random.default_rng(12)
    p = rng.uniform(size=3000)
    y = (rng.uniform(size=3000) < p).astype(np.int64)
    path = tmp_path / "small.parquet"
    pd.DataFrame({"p": p, "y": y}).to_parquet(path)
    note = local_cluster_notice(path, 2)
    assert note is not None and "fits in memory" in note and "--chunk-rows" in note
    assert local_cluster_notice(tmp_path, 2) is None  # a directory: a data set of parts
    assert local_cluster_notice(path, None) is None
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert local_cluster_notice(path, 4) is None  # enough workers to be worth it
    monkeypatch.undo()
    assert main(["table", str(path), "--workers", "1", "--format", "csv"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[0].startswith("calipers: note: ") and "small.parquet" in lines[0]
    assert any(line.endswith("pass 2 of 2, 1/1 partitions") for line in lines)
    keys, values = captured.out.strip().splitlines()
    got = dict(zip(keys.split(","), values.split(","), strict=True))
    _close(float(got["ece"]), cp.ece(p, y), "ece")
    _close(float(got["ace"]), cp.ace(p, y), "ace")
    # the streamed report on a cluster says it too
    out = tmp_path / "rep"
    assert main(["report", str(path), "--workers", "1", "--out", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("calipers: note: ") and "small.parquet" in err[0]
    assert (out / "report.json").is_file()


def test_an_unguarded_script_gets_one_clear_message(tmp_path: Path) -> None:
    # a script that starts a local cluster at import level, without
    # `if __name__ == "__main__":`, printed 472 lines of multiprocessing tracebacks
    import subprocess
    import sys
    import textwrap

    data = tmp_path / "d.parquet"
    pd.DataFrame({"p": [0.2, 0.7, 0.9], "y": [0, 1, 1]}).to_parquet(data)
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from calipers.stream.dask import read_parquet_states
            states = read_parquet_states({str(data)!r}, ["ece"], workers=1)
            print(states["ece"].compute())
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode != 0
    lines = proc.stderr.splitlines()
    assert len(lines) <= 30, proc.stderr
    assert 'if __name__ == "__main__":' in lines[0]  # the worker's one line
    assert lines[-1].startswith("RuntimeError: calipers.stream.dask could not start a local Dask")
    assert 'if __name__ == "__main__":' in lines[-1]
    assert "bootstrapping phase" not in proc.stderr


def _worker_environ() -> dict[str, str | None]:
    import os

    return {k: os.environ.get(k) for k in ("MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS")}


def test_a_local_cluster_keeps_malloc_defaults_in_its_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Dask's MALLOC_TRIM_THRESHOLD_=65536 turns off glibc's dynamic mmap threshold, and every
    # NumPy temporary of a partition became a fresh mmap: --workers 2 on 10**7 rows took 44 s
    # instead of 20 s. The workers calipers starts keep Dask's thread limits only, also
    # when an earlier cluster's Nanny left Dask's value in this process's environment
    import os

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with cpd._connected(None, 1) as client:
        envs = client.run(_worker_environ)
    assert list(envs.values()) == [{"MALLOC_TRIM_THRESHOLD_": None, "OMP_NUM_THREADS": "1"}]
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536"  # this process's is given back
