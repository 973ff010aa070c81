"""The public API type-checks from a user's side: ``mypy --strict`` on a typed script.

calipers ships a ``py.typed`` marker (PEP 561), so mypy reads its annotations
when it is installed like any other package. ``tests/typed_usage.py`` is a
user's script written with annotations; mypy runs on it in a subprocess with a
user's configuration (none of calipers' own settings, such as
``ignore_missing_imports``) and must report nothing. A second, deliberately
wrong script must be rejected: that proves mypy saw calipers' types rather
than treating the package as ``Any`` (which an install without ``py.typed``
would give). The script is then run on small data.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import calipers

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "typed_usage.py"

#: A user's mypy configuration. torch is optional for calipers and unused by the
#: script; following its ~1,400 modules would take half a minute, so it is skipped.
USER_CONFIG = """\
[mypy]

[mypy-torch.*]
follow_imports = skip
"""

#: Wrong calls that a typed calipers must reject (line number -> error code).
WRONG = """\
import numpy as np
import calipers as cp
p = np.array([0.2, 0.9]); y = np.array([0, 1])
a: float = cp.ece(p, y, n_bins="ten")
b = cp.reliability_table(p, y, interval="wald")
c = cp.EqualWidth(5, edge_rule="middle")
d = cp.not_a_public_name
e: str = cp.check_predictions(p, y).n_classes
"""
WRONG_ERRORS = {4: "arg-type", 5: "arg-type", 6: "arg-type", 7: "attr-defined", 8: "assignment"}


def _mypy(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    return subprocess.run(
        [sys.executable, "-m", "mypy", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def user_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mypy")
    try:
        importlib.metadata.distribution("calipers")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("calipers is not installed: mypy checks it as an installed package")
    where = tmp_path_factory.mktemp("user_project")
    (where / "mypy.ini").write_text(USER_CONFIG)
    return where


def _args(where: Path, *files: Path) -> list[str]:
    return [
        "--strict",
        "--config-file",
        str(where / "mypy.ini"),
        "--cache-dir",
        str(where / ".mypy_cache"),
        "--show-error-codes",
        *map(str, files),
    ]


def test_typed_usage_passes_mypy_strict(user_project: Path) -> None:
    out = _mypy(_args(user_project, SCRIPT), user_project)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success: no issues found in 1 source file" in out.stdout


def test_mypy_sees_the_calipers_types(user_project: Path) -> None:
    # runs after the strict check, on its warm cache (a second or two)
    wrong = user_project / "wrong_usage.py"
    wrong.write_text(WRONG)
    out = _mypy(_args(user_project, wrong), user_project)
    assert out.returncode == 1, out.stdout + out.stderr
    found = {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r"wrong_usage\.py:(\d+): error: .*\[([a-z-]+)\]$", out.stdout, re.M)
    }
    assert found == WRONG_ERRORS, out.stdout


def test_typed_usage_runs() -> None:
    spec = importlib.util.spec_from_file_location("typed_usage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main()
    assert {"ece", "nll", "ece_recalibrated", "ece_interval_width", "report_chars"} <= set(out)
    assert all(isinstance(v, float) and math.isfinite(v) for v in out.values())
    assert 0.0 <= out["ece"] <= 1.0 and out["report_chars"] > 0


def test_py_typed_ships_with_the_package() -> None:
    assert (Path(calipers.__file__).parent / "py.typed").is_file()
    try:
        files = importlib.metadata.files("calipers") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("calipers is not installed")
    names = {str(f).replace("\\", "/") for f in files}
    if "calipers/__init__.py" in names:  # a regular (not editable) install lists its files
        assert "calipers/py.typed" in names
        assert "calipers/datasets/default_predictions.npz" in names
