"""``calipers table`` on one large binary Parquet file: in memory, ``--chunk-rows``, ``--workers``.

Usage::

    python benchmarks/bench_dask_local.py                    # 10**7 rows, 3 rounds
    python benchmarks/bench_dask_local.py --rows 1000000 --rounds 5
    python benchmarks/bench_dask_local.py --file /tmp/big.parquet --keep

Writes a seeded file of ``--rows`` binary predictions (columns ``p`` and ``y``,
row groups of 2**20 rows, as pandas writes them) into a temporary folder (or
``--file``), then runs the command line on it in a fresh process per run, the
three modes interleaved round after round (memory, chunks, workers, memory,
...) so that a drift of the machine's load hits all of them alike. Each run's
wall time and peak resident memory (the largest of the process and its
children: ``resource.getrusage(RUSAGE_CHILDREN)`` in a one-run wrapper) are
printed, then the median per mode, with the load average before and after.
The values of the three tables are compared (they must agree to 1e-12).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

#: one run: the command, then the wall time and the peak RSS of its process tree (KiB)
_WRAPPER = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": r.returncode, "wall": wall, "rss_kib": rss, "out": r.stdout,
                  "err": r.stderr[-2000:]}))
"""


def write_file(path: Path, rows: int, seed: int) -> None:
    import pandas as pd

    rng = np.random.default_rng(seed)
    p = rng.uniform(size=rows)
    y = (rng.uniform(size=rows) < p**1.2).astype(np.int64)  # a miscalibrated model
    pd.DataFrame({"p": p, "y": y}).to_parquet(path)


def run_once(path: Path, extra: list[str]) -> dict[str, object]:
    main = "import sys; from calipers.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", main, "table", str(path), "--format", "csv", *extra]
    out = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, text=True, check=True
    )
    res: dict[str, object] = json.loads(out.stdout)
    if res["rc"] != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{res['err']}")
    return res


def _values(csv_text: object) -> dict[str, float]:
    keys, values = str(csv_text).strip().splitlines()[:2]
    return {
        k: float(v) for k, v in zip(keys.split(","), values.split(","), strict=True) if k != "model"
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10**7)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk-rows", type=int, default=1 << 20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--file", type=Path, default=None, help="write (or reuse) the file here")
    ap.add_argument("--keep", action="store_true", help="keep the file")
    ap.add_argument("--modes", default="memory,chunks,workers")
    args = ap.parse_args(argv)
    folder = None if args.file is not None else tempfile.TemporaryDirectory()
    path = args.file if args.file is not None else Path(folder.name) / "big.parquet"  # type: ignore[union-attr]
    if not path.exists():
        write_file(path, args.rows, args.seed)
    modes = {
        "memory": [],
        "chunks": ["--chunk-rows", str(args.chunk_rows)],
        "workers": ["--workers", str(args.workers)],
    }
    chosen = [m.strip() for m in args.modes.split(",") if m.strip()]
    print(f"calipers table on {path} ({path.stat().st_size / 1e6:.0f} MB), {os.cpu_count()} CPUs")
    print(f"load average before: {os.getloadavg()}")
    runs: dict[str, list[dict[str, object]]] = {m: [] for m in chosen}
    for r in range(args.rounds):
        for m in chosen:
            res = run_once(path, modes[m])
            runs[m].append(res)
            print(
                f"  round {r + 1} {m:8s} {float(res['wall']):7.2f} s  "  # type: ignore[arg-type]
                f"{int(res['rss_kib']) / 1024:7.0f} MiB",  # type: ignore[call-overload]
                flush=True,
            )
    print(f"load average after: {os.getloadavg()}")
    ref = _values(runs[chosen[0]][0]["out"])
    for m in chosen:
        walls = [float(x["wall"]) for x in runs[m]]  # type: ignore[arg-type]
        rss = [int(x["rss_kib"]) / 1024 for x in runs[m]]  # type: ignore[call-overload]
        got = _values(runs[m][0]["out"])
        worst = max(abs(got[k] - v) / max(abs(v), 1e-300) for k, v in ref.items())
        print(
            f"{m:8s} median {statistics.median(walls):7.2f} s (min {min(walls):.2f}), "
            f"peak RSS median {statistics.median(rss):6.0f} MiB; "
            f"largest relative difference to {chosen[0]}: {worst:.1e}"
        )
    if folder is not None and not args.keep:
        folder.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
