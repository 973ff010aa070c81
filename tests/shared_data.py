"""The real predictions of the shared data folder, for the tests that use them.

The folder is ``$CALIPERS_SHARED_DATA`` when that is set (and only it), else the
``shared/data`` folder beside the repository; a test that needs a file the folder
does not have is skipped with a message saying how to provide it. Files are read
without unpickling anything.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest


def data_dir() -> Path | None:
    """``$CALIPERS_SHARED_DATA`` when set (and only it), else ``<repo>/../shared/data``."""
    env = os.environ.get("CALIPERS_SHARED_DATA")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    return path if path.is_dir() else None


def load(name: str) -> dict[str, np.ndarray]:
    """The arrays of ``name`` (an ``.npz`` file of the folder); skips the test without it."""
    d = data_dir()
    if d is None:
        pytest.skip(
            "shared data folder not found (set CALIPERS_SHARED_DATA or provide ../shared/data)"
        )
    path = d / name
    if not path.is_file():
        pytest.skip(f"{name} not present in the shared data folder {d}")
    with np.load(path, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}
