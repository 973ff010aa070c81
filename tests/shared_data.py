"""The real predictions of the shared data folder, for the tests that use them.

These are outputs of published models with their true labels, kept outside the
repository (the calipers developers keep them beside it, at ``../shared/data``):

================================  ==========================================  ================
file                              what it is                                  public source
================================  ==========================================  ================
``densenet40_c10_{val,test}.npz`` DenseNet-40 logits on CIFAR-10 (Kull et al. markus93/NN_calibration
                                  2019; Rahimi et al. 2020), 5000/10000 rows  (MIT)
``labelerrors_{cifar10,20news,    cross-validated probabilities of the models cleanlab/label-errors
imdb}.npz``                       of Northcutt et al. 2021                    (Apache-2.0)
``niamey2016_{Logistic,EMOS,ENS,  probability-of-precipitation forecasts for  TimoDimi/replication_DGJ20
EPC}.npz``                        Niamey 2016 (Vogel et al. 2018)             (data CC BY 4.0)
================================  ==========================================  ================

The folder is ``$CALIPERS_SHARED_DATA`` when that is set (and only it), else the
``shared/data`` folder beside the repository. A test that needs a file the folder
does not have is skipped with a one-line reason that names the file and both ways to
provide it. Files are read without unpickling anything.
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


def missing_reason(*names: str) -> str:
    """The one-line skip reason for tests that need ``names`` and cannot find them."""
    return (
        f"real predictions {', '.join(names)} not found: set CALIPERS_SHARED_DATA to a folder "
        "holding them or put them in ../shared/data (files and public sources: "
        "tests/shared_data.py)"
    )


def available(*names: str) -> bool:
    """Whether every file of ``names`` is in the shared data folder."""
    d = data_dir()
    return d is not None and all((d / n).is_file() for n in names)


def path(name: str) -> Path:
    """The path of ``name`` in the shared data folder; skips the test without it."""
    d = data_dir()
    if d is None or not (d / name).is_file():
        pytest.skip(missing_reason(name))
    return d / name


def load(name: str) -> dict[str, np.ndarray]:
    """The arrays of ``name`` (an ``.npz`` file of the folder); skips the test without it."""
    with np.load(path(name), allow_pickle=False) as f:
        return {k: f[k] for k in f.files}
