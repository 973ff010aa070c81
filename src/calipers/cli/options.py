"""What the parsers of every subcommand share.

The examples shown under every ``--help`` (:data:`EPILOG`), the types of the
numeric options (a positive integer, a clipping epsilon), and the options of the
metrics, ``--bins`` and ``--nll-clip``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

EPILOG = """\
examples:
  calipers demo                                  the whole job on the embedded default: prints
                                                 the table, writes the report into calipers-demo/
  calipers demo --out demo/                      the same, the report (HTML etc.) in demo/
  calipers demo --table-only                     only the table (also table.md/.json in the folder)
  calipers table                                 the same table (no file: embedded default)
  calipers table preds.npz                       arrays 'probs' (or 'logits') and 'labels'
  calipers table preds.csv --format markdown     CSV with a header: label,p0,p1,...
  calipers table logits.npy --logits --labels y.npy
  calipers table a.npz b.npz --out table.json    one row per file; format from the suffix
  calipers table preds.npz --nll-clip 1e-15      also the NLL with p_y clipped to [eps, 1-eps]
  calipers report val.npz --recalibrate ts,hb,ir --out rep/   split, recalibrate, HTML report
  calipers report test.npz --calibration val.npz --recalibrate ts --format json
  calipers diagram reliability preds.npz --out reliability.svg

exit status: 0 ok, 1 unexpected error, 2 usage error, 3 bad input file or invalid predictions
"""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


#: Largest seed the command line takes (NumPy takes any non-negative integer;
#: 2**63 - 1 keeps it an int64 wherever a seed is stored).
MAX_SEED = 2**63 - 1


def seed_option(text: str) -> int:
    """``--seed``: a non-negative integer, the seed of NumPy's random generators."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer seed, got {text!r}"
        ) from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer seed (0 .. 2**63 - 1), got {value}"
        )
    return value


def _clip_eps(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 1e-15, got {text!r}") from None
    if not 0 < value < 0.5:
        raise argparse.ArgumentTypeError(f"EPS must be in (0, 0.5), got {text}")
    return value


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--bins",
        type=_positive_int,
        default=15,
        metavar="N",
        help="number of bins of every binned metric (default: 15)",
    )
    p.add_argument(
        "--nll-clip",
        type=_clip_eps,
        default=None,
        metavar="EPS",
        help="also report the NLL with the true-class probability clipped to "
        "[EPS, 1 - EPS] (e.g. 1e-15, as Kull et al. 2019); the exact NLL is always shown",
    )


def _add_chunk_rows(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--chunk-rows",
        type=_positive_int,
        default=None,
        metavar="N",
        help="read each file N rows at a time (for files larger than memory; files whose "
        "arrays declare more than 2 GiB once read, by their .npy headers, .npz zip directory or "
        "Parquet footer, or CSV files above 2 GiB, are read in chunks of 1048576 rows without it), in memory that does not grow "
        "with the rows: the chunk being read (about 37 bytes per score, rows x classes: "
        "about 390 MB for N = 1048576 rows of 10 classes) and each column's totals (a few MB; "
        "ACE, TACE, RMSCE: a score histogram per class and an edge search of at most 6 MB "
        "each). Peak RSS measured with every column, 10 classes, Parquet, N = 1048576: "
        "466 MiB at 10^6 rows (one chunk), 669 MiB at 10^7, 705 MiB at 10^8 (616 and 632 "
        "MiB without the equal-mass columns); a memory-mapped .npy file hands its pages back after each chunk. "
        "Columns that need all rows at once are left out, with "
        "a note",
    )
    p.add_argument(
        "--equal-mass",
        choices=("two-pass", "one-pass", "skip"),
        default="two-pass",
        help="for files read in chunks: ACE, TACE and RMSCE (equal-mass bins) exactly from "
        "further passes over the file (two-pass, the default: a second pass, and a third when "
        "the edges' score ranges hold more than 2^18 rows, from about 4 million rows of 10 "
        "classes; memory does not grow with the rows), from one pass within a printed bound "
        "(one-pass; ACE and TACE), or left out (skip, the fastest)",
    )


def _add_dask(p: argparse.ArgumentParser) -> None:
    """``--scheduler ADDRESS`` / ``--workers N``: compute a Parquet data set on Dask."""
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="compute on the Dask scheduler at ADDRESS (e.g. tcp://host:8786), partition by "
        "partition; each FILE is a Parquet file, directory or glob (needs calipers[dask])",
    )
    group.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        metavar="N",
        help="as --scheduler, on a local Dask cluster of N worker processes started for the run",
    )


def _uses_dask(args: argparse.Namespace) -> bool:
    """Whether ``--scheduler`` or ``--workers`` was given."""
    return (
        getattr(args, "scheduler", None) is not None or getattr(args, "workers", None) is not None
    )


#: a local cluster of fewer workers than this does not beat reading a file whole:
#: the per-partition states cost about twice the CPU of the in-memory table, and
#: the cluster adds its start (benchmarks/bench_dask_local.py)
_WORTH_WORKERS = 4


def local_cluster_notice(path: Path, workers: int | None) -> str | None:
    """A one-line note when ``--workers N`` on ``path`` is likely slower than no cluster.

    ``path`` is one local file whose in-memory read (about 16 times its size on
    disk for a compressed Parquet file) fits in the available memory, and the
    cluster has fewer than ``_WORTH_WORKERS`` usable workers: the whole read
    (no ``--workers``) is then faster, and ``--chunk-rows`` bounds memory.
    """
    if workers is None or not path.is_file():
        return None
    try:
        import psutil  # a dependency of distributed

        available = int(psutil.virtual_memory().available)
    except (ImportError, OSError):
        return None
    size = path.stat().st_size
    usable = min(workers, os.cpu_count() or 1)
    if 16 * size >= available or usable >= _WORTH_WORKERS:
        return None
    return (
        f"calipers: note: {path} is one local file ({size / 1e6:.0f} MB) that fits in memory; "
        f"with {usable} usable worker(s) a local Dask cluster is slower than reading it whole "
        "(leave out --workers) or in chunks (--chunk-rows N, for bounded memory)"
    )
