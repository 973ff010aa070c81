"""Peak resident memory of ``calipers table --chunk-rows N`` as the file grows.

Usage::

    python benchmarks/bench_chunk_memory.py                   # 10**6 and 10**7 rows x 10 classes
    python benchmarks/bench_chunk_memory.py --big             # also 10**8 rows (hours on 2 cores)
    python benchmarks/bench_chunk_memory.py --rows 200000 1000000 --modes two-pass   # quick

For each size, writes ``probs.npy`` (float32, rows x ``--classes``) and ``labels.npy``
(int64) into a temporary folder (``--tmp``; deleted after each size), chunk by chunk
(``numpy.lib.format.open_memmap``), so the file is never held in memory. Then runs, each
in its own subprocess, ``calipers table probs.npy --labels labels.npy --chunk-rows N
--format json`` with every default column (``--equal-mass two-pass``, the default: ACE,
TACE and RMSCE exact from further passes) and, for comparison, ``--equal-mass skip``
(the fixed-bin columns and the scores only; one pass). For each run it prints the wall
and CPU time (user + system), the passes over the file (from the table's source note) and
the peak resident memory of that child (its own ``VmHWM``, written at exit: ``ru_maxrss``
from ``os.wait4`` would include this process's peak, which Linux carries across ``exec``;
Python's start and the import of calipers included). ``--pythonpath DIR`` runs another
checkout's ``src`` (e.g. the code before a change) for a before/after table.

Data (``--data``): the recipe of benchmarks/README.md (``softmax``, the default):
``logits = 3 N(0, 1)``, labels sampled from ``softmax(logits)``, ``probs =
softmax(1.5 logits)``; or ``dirichlet``: ``probs ~ Dirichlet(1, ..., 1)``, labels
sampled from them. Stored as float32, seeded per block.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BLOCK = 1 << 20  # rows generated at a time


DATA = "softmax"  # or "dirichlet" (--data)


def _block(m: int, k: int, seed: int, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Block ``i`` of ``m`` rows: float32 probabilities and int64 labels (the recipe)."""
    rng = np.random.default_rng([seed, i])
    if DATA == "dirichlet":  # probabilities uniform on the simplex, labels drawn from them
        p = rng.dirichlet(np.ones(k), size=m)
        y = np.minimum((rng.uniform(size=(m, 1)) > np.cumsum(p, axis=1)).sum(axis=1), k - 1)
        return p.astype(np.float32), y.astype(np.int64)
    z = 3.0 * rng.standard_normal((m, k))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    c = np.cumsum(e / e.sum(axis=1, keepdims=True), axis=1)
    y = np.minimum((rng.uniform(size=(m, 1)) > c).sum(axis=1), k - 1)
    e = np.exp(1.5 * (z - z.max(axis=1, keepdims=True)))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32), y.astype(np.int64)


def write_npy(folder: Path, rows: int, k: int, seed: int) -> tuple[Path, Path]:
    """``probs.npy`` and ``labels.npy``, written block by block (constant memory)."""
    probs_path, labels_path = folder / "probs.npy", folder / "labels.npy"
    P = np.lib.format.open_memmap(probs_path, mode="w+", dtype=np.float32, shape=(rows, k))
    Y = np.lib.format.open_memmap(labels_path, mode="w+", dtype=np.int64, shape=(rows,))
    for i, start in enumerate(range(0, rows, BLOCK)):
        m = min(BLOCK, rows - start)
        P[start : start + m], Y[start : start + m] = _block(m, k, seed, i)
    P.flush()
    Y.flush()
    del P, Y
    return probs_path, labels_path


def write_parquet(folder: Path, rows: int, k: int, seed: int) -> Path:
    """``preds.parquet`` (columns ``p0``..``p{k-1}`` float32 and ``label``), block by block."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / "preds.parquet"
    names = [f"p{j}" for j in range(k)]
    schema = pa.schema([*((n, pa.float32()) for n in names), ("label", pa.int64())])
    with pq.ParquetWriter(path, schema) as writer:
        for i, start in enumerate(range(0, rows, BLOCK)):
            m = min(BLOCK, rows - start)
            p, y = _block(m, k, seed, i)
            cols = {n: p[:, j] for j, n in enumerate(names)}
            writer.write_table(pa.table({**cols, "label": y}, schema=schema), row_group_size=m)
    return path


#: Runs ``calipers`` and, at exit, writes the process's own peak resident memory
#: (``VmHWM`` of ``/proc/self/status``, in KiB) to the file named by
#: ``CALIPERS_BENCH_HWM``. ``ru_maxrss`` of a child is no use here: Linux keeps the
#: high-water mark across ``exec``, so a child started by this process (which held
#: the data blocks it wrote, a few hundred MB) reports at least this process's peak.
_RUN_AND_REPORT_HWM = """
import atexit, os, sys
def _hwm():
    try:
        with open("/proc/self/status") as fh:
            kib = next(l.split()[1] for l in fh if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        import resource  # no /proc (macOS): the rusage figure, an upper bound
        ru = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        kib = str(ru // 1024 if sys.platform == "darwin" else ru)  # macOS: bytes
    with open(os.environ["CALIPERS_BENCH_HWM"], "w") as fh:
        fh.write(kib)
atexit.register(_hwm)
from calipers.cli import main
sys.exit(main(sys.argv[1:]))
"""


def run_table(
    args: list[str], folder: Path, pythonpath: str | None
) -> tuple[float, float, float, dict]:
    """``calipers table ARGS --format json`` in a subprocess: wall s, CPU s, peak RSS MiB, JSON."""
    cmd = [sys.executable, "-c", _RUN_AND_REPORT_HWM, "table", *args, "--format", "json"]
    env = dict(os.environ)
    hwm_path = folder / "hwm.txt"
    env["CALIPERS_BENCH_HWM"] = str(hwm_path)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    out_path, err_path = folder / "out.json", folder / "err.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own resource usage
        wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err_path.read_text()}")
    cpu = usage.ru_utime + usage.ru_stime
    peak = int(hwm_path.read_text()) / 1024  # KiB -> MiB
    return wall, cpu, peak, json.loads(out_path.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[10**6, 10**7])
    ap.add_argument("--big", action="store_true", help="also 10**8 rows (about 4 GB on disk)")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--chunk-rows", type=int, default=1 << 20, help="rows per chunk (2**20)")
    ap.add_argument(
        "--modes", nargs="+", default=["two-pass", "skip"], choices=["two-pass", "skip"]
    )
    ap.add_argument(
        "--format",
        choices=["parquet", "npy"],
        default="parquet",
        help="file format (npy is memory-mapped; calipers hands the pages back after each chunk)",
    )
    ap.add_argument(
        "--data",
        choices=["softmax", "dirichlet"],
        default="softmax",
        help="softmax: the recipe (scores spread over many powers of ten); dirichlet: "
        "probabilities uniform on the simplex (more rows near each equal-mass edge)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tmp", default=None, help="folder for the temporary files")
    ap.add_argument("--pythonpath", default=None, help="run calipers from this src folder")
    opts = ap.parse_args()
    global DATA
    DATA = opts.data
    sizes = sorted(set(opts.rows + ([10**8] if opts.big else [])))
    results = []
    for rows in sizes:
        folder = Path(tempfile.mkdtemp(prefix="calipers-chunk-memory-", dir=opts.tmp))
        try:
            t0 = time.perf_counter()
            if opts.format == "npy":
                probs, labels = write_npy(folder, rows, opts.classes, opts.seed)
                inputs = [str(probs), "--labels", str(labels)]
            else:
                probs = write_parquet(folder, rows, opts.classes, opts.seed)
                inputs = [str(probs)]
            mib = probs.stat().st_size / 2**20
            print(
                f"wrote {rows} x {opts.classes} ({mib:.0f} MiB) in {time.perf_counter() - t0:.1f} s",
                flush=True,
            )
            for mode in opts.modes:
                args = [
                    *inputs,
                    "--chunk-rows",
                    str(opts.chunk_rows),
                    "--equal-mass",
                    mode,
                ]
                wall, cpu, peak, doc = run_table(args, folder, opts.pythonpath)
                row = doc["models"][0]
                assert row["n"] == rows, (row["n"], rows)
                m = re.search(r"(\w+) pass(?:es)?\)", " ".join(doc.get("sources", [])))
                passes = {"one": 1, "two": 2}.get(m.group(1), m.group(1)) if m else "?"
                results.append((rows, mode, passes, wall, cpu, peak, row))
                print(
                    f"  {mode:8s} {rows:>11d} rows: {wall:.1f} s wall, {cpu:.1f} s CPU, "
                    f"{passes} passes, peak RSS {peak:.0f} MiB",
                    flush=True,
                )
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    print()
    print(
        f"calipers table --chunk-rows {opts.chunk_rows}, .{opts.format}, {opts.data} float32 "
        f"x {opts.classes} classes"
    )
    head = (
        "rows",
        "equal-mass",
        "passes",
        "wall s",
        "CPU s",
        "peak RSS MiB",
        "ECE",
        "ACE",
        "TACE",
        "RMSCE",
    )
    print(" ".join(f"{h:>12s}" for h in head))
    for rows, mode, passes, wall, cpu, peak, row in results:
        vals = [row.get(c) for c in ("ece", "ace", "tace", "rmsce")]
        cells = [
            f"{rows:.0e}",
            mode,
            str(passes),
            f"{wall:.1f}",
            f"{cpu:.1f}",
            f"{peak:.0f}",
            *("n/a" if v is None else f"{v:.6f}" for v in vals),
        ]
        print(" ".join(f"{c:>12s}" for c in cells))


if __name__ == "__main__":
    main()
