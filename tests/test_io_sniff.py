"""A file whose name says NumPy but whose bytes do not is named for what it is."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from calipers.io import PredictionFileError, read_predictions


@pytest.mark.parametrize("suffix", [".npz", ".npy"])
def test_csv_named_like_numpy_is_called_csv_not_pickle(tmp_path: Path, suffix: str) -> None:
    f = tmp_path / f"preds{suffix}"
    f.write_text("label,p0,p1\n0,0.7,0.3\n1,0.2,0.8\n")
    with pytest.raises(PredictionFileError) as err:
        read_predictions(f)
    msg = str(err.value)
    assert "not a NumPy file" in msg and "CSV" in msg and "label,p0,p1" in msg
    assert "pickled" not in msg


def test_parquet_and_empty_files_named_npz(tmp_path: Path) -> None:
    f = tmp_path / "a.npz"
    f.write_bytes(b"PAR1" + b"\0" * 40)
    with pytest.raises(PredictionFileError, match="Parquet"):
        read_predictions(f)


def test_a_real_pickle_is_still_called_a_pickle(tmp_path: Path) -> None:
    f = tmp_path / "p.npz"
    # the bytes of a pickle stream, written without any pickling of ours being loaded
    f.write_bytes(pickle.dumps({"probs": [0.1, 0.9]}, protocol=4))
    with pytest.raises(PredictionFileError, match="pickled Python objects"):
        read_predictions(f)
    np.testing.assert_array_equal(np.frombuffer(f.read_bytes()[:1], np.uint8), [0x80])
