"""Command-line settings that have no meaning are refused with a one-line error.

An empty ``--values`` or ``--metrics`` was read as "use the defaults", and a
negative ``--seed`` ended in NumPy's traceback.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calipers.cli import main


@pytest.fixture
def csv_file(tmp_path: Path) -> str:
    rng = np.random.default_rng(0)
    p = rng.uniform(0.02, 0.98, 300)
    y = (rng.uniform(size=300) < p).astype(np.int64)
    f = tmp_path / "m.csv"
    np.savetxt(f, np.c_[p, y], delimiter=",", header="probs,labels", comments="", fmt="%.6g")
    return str(f)


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "{f}", "--seed", "-1"],
        ["sweep", "{f}", "--over", "n_bins", "--seed", "-1"],
        ["demo", "--seed", "-1"],
        ["report", "{f}", "--seed", str(2**63)],
        ["report", "{f}", "--seed", "1.5"],
    ],
)
def test_a_seed_outside_numpys_range_is_a_usage_error(
    csv_file: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([a.format(f=csv_file) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "argument --seed: expected a non-negative integer seed" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--values", "", "--values is empty"),
        ("--values", " , ", "--values is empty"),
        ("--metrics", "", "--metrics is empty"),
        ("--metrics", " , ", "--metrics is empty"),
    ],
)
def test_an_empty_list_is_refused_not_read_as_the_default(
    csv_file: str, option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["sweep", csv_file, "--over", "n_bins", option, value])
    captured = capsys.readouterr()
    assert status != 0 and captured.out == ""
    assert message in captured.err and "Traceback" not in captured.err


def test_the_largest_seed_is_taken(csv_file: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["sweep", csv_file, "--over", "n_bins", "--values", "5,10"])
    default = capsys.readouterr().out
    assert status == 0
    status = main(
        ["sweep", csv_file, "--over", "n_bins", "--values", "5,10", "--seed", str(2**63 - 1)]
    )
    assert status == 0 and capsys.readouterr().out.count("\n") == default.count("\n")
