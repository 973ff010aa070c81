"""``import calipers`` stays light: heavy libraries are imported where they are used.

(The CLI starts with this import; matplotlib, torch and most of SciPy take seconds.)
"""

import os
import subprocess
import sys
from pathlib import Path

import calipers

#: The packages a user imports: each must stay as light as ``calipers`` itself (the
#: optional ``calipers.stream.dask`` and ``calipers.stream.torchmetrics`` are imported
#: by name only).
PACKAGES = (
    "calipers",
    "calipers.pipeline",
    "calipers.estimators",
    "calipers.metrics",
    "calipers.stream",
    "calipers.inference",
    "calipers.regression",
    "calipers.recalibration",
    "calipers.diagrams",
    "calipers.reports",
    "calipers.io",
)


def test_import_does_not_pull_heavy_modules() -> None:
    # one interpreter imports every package: a heavy import by any of them shows
    code = (
        f"import sys, {', '.join(PACKAGES)}\n"
        "heavy = ['matplotlib', 'torch', 'torchmetrics', 'dask', 'sklearn', 'scipy.signal',\n"
        "         'scipy.stats', 'scipy.special', 'scipy.spatial', 'scipy.optimize', 'pandas',\n"
        "         'pyarrow']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    here = str(Path(calipers.__file__).resolve().parents[1])  # the calipers under test
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", code + "print(calipers.__file__)\n"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    )
    heavy, path = out.stdout.split("\n")[:2]
    assert Path(path).resolve() == Path(calipers.__file__).resolve()
    assert heavy == ""


def test_clinical_and_subgroups_load_on_first_use() -> None:
    # ``cp.clinical`` and ``cp.subgroups`` work after ``import calipers as cp`` (as
    # ``cp.regression`` does); ``import calipers`` loads neither calipers.clinical nor
    # SciPy's statistics (calipers.subgroups, light, comes with calipers.diagrams)
    code = (
        "import sys, calipers as cp\n"
        "before = [m for m in ('calipers.clinical', 'scipy.stats')"
        " if m in sys.modules]\n"
        "import calipers.clinical, calipers.subgroups\n"
        "same = cp.clinical is sys.modules['calipers.clinical'] and "
        "cp.subgroups.calibration_by_group is calipers.subgroups.calibration_by_group\n"
        "try:\n"
        "    cp.no_such_package\n"
        "    missing = 'no error'\n"
        "except AttributeError as e:\n"
        "    missing = str(e)\n"
        "print(before, same, missing)\n"
    )
    here = str(Path(calipers.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    )
    assert out.stdout.strip() == "[] True module 'calipers' has no attribute 'no_such_package'"
