"""Out-of-core ``calipers table``: 10**8 binary predictions in constant memory.

Usage::

    python benchmarks/bench_out_of_core.py                  # 10**8 rows streamed, 10**7 in memory
    python benchmarks/bench_out_of_core.py --rows 1000000 --memory-rows 100000   # a quick run

Writes a Parquet file of ``--rows`` binary predictions (float32 P(y = 1) in
column ``p``, int8 label in column ``label``, row groups of ``--row-group`` rows)
into a temporary folder (deleted at the end), then runs, each in its own
subprocess:

* ``calipers table FILE7 --format json`` on a file of ``--memory-rows`` rows
  (read whole, the in-memory path), and the same file streamed with
  ``--chunk-rows N`` twice: ``--equal-mass skip`` (ACE, TACE, RMSCE left out; one
  pass) and the default two passes (every column, equal to the in-memory values);
* ``calipers table FILE --chunk-rows N --equal-mass skip`` on the big file (and the
  default two passes too with ``--big-two-pass``).

For each run it prints the wall and CPU time (user + system; the CPU time is the
steadier figure on a shared machine), the throughput (rows per second) both ways,
and the peak resident memory of the subprocess (``os.wait4`` resource usage,
``ru_maxrss``); Python's start and the import of calipers (about 2 s) are included.
The data follow the recipe of benchmarks/README.md (case C): ``z = 3 N(0, 1)``,
``p = sigmoid(1.5 z)``, ``y ~ Bernoulli(sigmoid(z))``, seeded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def write_parquet(path: Path, rows: int, row_group: int, seed: int) -> None:
    """Write ``rows`` binary predictions in blocks, so that writing is in constant memory too."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    schema = pa.schema([("p", pa.float32()), ("label", pa.int8())])
    with pq.ParquetWriter(path, schema) as writer:
        done = 0
        while done < rows:
            m = min(row_group, rows - done)
            z = 3.0 * rng.standard_normal(m)
            p = (1.0 / (1.0 + np.exp(-1.5 * z))).astype(np.float32)
            y = (rng.uniform(size=m) < 1.0 / (1.0 + np.exp(-z))).astype(np.int8)
            writer.write_table(pa.table({"p": p, "label": y}, schema=schema), row_group_size=m)
            done += m


def run_table(args: list[str], tmp: Path) -> tuple[float, float, float, dict]:
    """Run ``calipers table ARGS`` in a subprocess.

    Returns wall seconds, CPU seconds (user + system) and peak RSS (MiB) of that
    child alone (``os.wait4``), and the JSON table it printed.
    """
    cmd = [sys.executable, "-m", "calipers", "table", *args, "--format", "json"]
    out_path, err_path = tmp / "out.json", tmp / "err.txt"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own resource usage
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err_path.read_text()}")
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024, json.loads(out_path.read_text())  # maxrss: KiB


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10**8, help="rows of the streamed file")
    ap.add_argument("--memory-rows", type=int, default=10**7, help="rows of the in-memory file")
    ap.add_argument("--chunk-rows", type=int, default=1 << 20, help="rows per chunk (2**20)")
    ap.add_argument("--row-group", type=int, default=4_000_000, help="rows per row group")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--big-two-pass",
        action="store_true",
        help="also run the big file with ACE, TACE and RMSCE from two passes (slow)",
    )
    opts = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="calipers-ooc-") as tmp:
        small = Path(tmp) / "small.parquet"
        big = Path(tmp) / "big.parquet"
        t0 = time.perf_counter()
        write_parquet(small, opts.memory_rows, opts.row_group, opts.seed)
        write_parquet(big, opts.rows, opts.row_group, opts.seed + 1)
        print(
            f"wrote {opts.memory_rows} and {opts.rows} rows in {time.perf_counter() - t0:.1f} s "
            f"({small.stat().st_size / 2**20:.0f} MiB and {big.stat().st_size / 2**20:.0f} MiB)",
            flush=True,
        )
        chunked = ["--chunk-rows", str(opts.chunk_rows)]
        skip = [*chunked, "--equal-mass", "skip"]
        runs = [
            ("in memory", small, opts.memory_rows, []),
            ("streamed, skip", small, opts.memory_rows, skip),
            ("streamed, two-pass", small, opts.memory_rows, chunked),
            ("streamed, skip", big, opts.rows, skip),
        ]
        if opts.big_two_pass:
            runs.append(("streamed, two-pass", big, opts.rows, chunked))
        for mode, path, rows, extra in runs:
            wall, cpu, peak, doc = run_table([str(path), *extra], Path(tmp))
            row = doc["models"][0]
            assert row["n"] == rows, (row["n"], rows)
            results.append((mode, rows, wall, cpu, peak, row["ece"], row["ace"]))
            print(
                f"  {mode:18s} {rows:>11d} rows: {wall:.1f} s, peak RSS {peak:.0f} MiB", flush=True
            )
    print()
    print(f"calipers table on binary Parquet predictions (chunks of {opts.chunk_rows} rows)")
    head = (
        "mode",
        "rows",
        "wall s",
        "CPU s",
        "rows/s wall",
        "rows/s CPU",
        "peak RSS MiB",
        "ECE",
        "ACE",
    )
    print(f"{head[0]:18s} " + " ".join(f"{h:>12s}" for h in head[1:]))
    for mode, rows, wall, cpu, peak, ece, ace in results:
        ace_text = "n/a" if ace is None else f"{ace:.6f}"
        cells = [
            str(rows),
            f"{wall:.1f}",
            f"{cpu:.1f}",
            f"{rows / wall:.3g}",
            f"{rows / cpu:.3g}",
            f"{peak:.0f}",
            f"{ece:.6f}",
            ace_text,
        ]
        print(f"{mode:18s} " + " ".join(f"{c:>12s}" for c in cells))


if __name__ == "__main__":
    main()
