"""Collection rules shared by ``tests/`` and the doctests of ``src/calipers``."""

from __future__ import annotations

import importlib.util

# calipers.stream.torchmetrics subclasses torchmetrics.Metric: its doctests need torchmetrics
# (an optional dependency), so the module is not collected without it
collect_ignore: list[str] = []
if importlib.util.find_spec("torchmetrics") is None or importlib.util.find_spec("torch") is None:
    collect_ignore.append("src/calipers/stream/torchmetrics.py")
# calipers.stream.dask's doctests run Dask arrays and DataFrames (an optional dependency)
if any(importlib.util.find_spec(m) is None for m in ("dask", "pandas", "pyarrow")):
    collect_ignore.append("src/calipers/stream/dask.py")
