"""The one entry point of :mod:`calipers.io`: :func:`read_predictions`.

The file's suffix chooses the reader (one module per format); a separate labels
file, when given, replaces the labels of the prediction file, and the number of
labels is checked against the number of rows.
"""

from __future__ import annotations

from pathlib import Path

from .checks import _PICKLE_HINT, _shape_error
from .csv import _read_csv
from .labels_file import _check_declared_labels, _read_labels_file
from .npy import _read_npy
from .npz import _read_npz
from .parquet import _read_parquet
from .prediction_file import PredictionFile, _err
from .pt import _TORCH_HINT, _read_pt

_SAVEZ_HINT = "np.savez(path, probs=probs, labels=labels)"


def read_predictions(
    path: str | Path,
    *,
    probs_key: str | None = None,
    logits_key: str | None = None,
    labels_key: str | None = None,
    labels_path: str | Path | None = None,
    logits: bool | None = None,
) -> PredictionFile:
    """Read predictions (probabilities or logits) and labels from a file.

    Never unpickles: NumPy files are loaded with ``allow_pickle=False`` and an
    array of Python objects is refused with an error; PyTorch files are loaded
    with ``torch.load(weights_only=True)``, which refuses pickled objects
    other than tensors and plain containers without running them. Values are
    not checked here (only numeric types and matching lengths); pass the
    result through :meth:`PredictionFile.check` (that is,
    :func:`calipers.check_predictions`). The supported formats, and how
    probabilities are told from logits, are described in :mod:`calipers.io`.

    Parameters
    ----------
    path : str or path-like
        An ``.npz``, ``.npy``, ``.csv``, ``.parquet`` (needs ``pyarrow``) or
        ``.pt``/``.pth`` (needs ``torch``) file.
    probs_key : str, optional
        The array holding the probabilities, when the keys are not recognised
        or are ambiguous: an ``.npz`` key, a key of a dict in a ``.pt`` file,
        or a list column of a ``.parquet`` file.
    logits_key : str, optional
        The same for logits.
    labels_key : str, optional
        The array holding the labels: in the prediction file (``.npz``, a
        ``.pt`` dict, a ``.parquet`` file with a list column), or in the
        labels file when ``labels_path`` is given.
    labels_path : str or path-like, optional
        A separate labels file (``.npy``, ``.npz``, ``.pt``/``.pth``,
        ``.parquet``, or ``.csv``/``.txt`` with one label per line); needed
        for ``.npy`` predictions and a bare tensor in a ``.pt`` file. When
        given, the labels of the prediction file (if any) are not read.
    logits : bool, optional
        ``True``: the array holds logits (for keyed files, a logits key is
        preferred when present). ``False``: probabilities. By default the
        kind comes from the key (``.npz``, ``.pt`` dicts, Parquet list
        columns) or column names (``.csv``/``.parquet``, logits when named
        ``logit_*``); an ``.npy`` file holds probabilities; a bare array (a
        ``.pt`` tensor or tuple, an unnamed Parquet list column) is detected
        from its values, or is an error when the values are ambiguous.

    Returns
    -------
    PredictionFile
        With :attr:`~PredictionFile.kind_basis` saying how the kind was
        decided and :attr:`~PredictionFile.note` saying why.

    Raises
    ------
    PredictionFileError
        When the file is missing, of an unknown type, holds Python objects, is
        ragged, its keys/columns are missing or ambiguous, or a bare array
        could be either probabilities or logits; the message says how to fix
        it.

    See Also
    --------
    calipers.check_predictions : The value checks applied afterwards.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from calipers.io import read_predictions
    >>> d = tempfile.mkdtemp()
    >>> f = os.path.join(d, "preds.npz")
    >>> np.savez(f, probs=np.array([[0.9, 0.1], [0.3, 0.7]]), labels=np.array([0, 0]))
    >>> pf = read_predictions(f)
    >>> pf.kind, pf.labels.tolist(), pf.note
    ('probs', [0, 0], "array 'probs' read as probs, labels from 'labels'")

    A CSV file with a header row, a label column and one column per class:

    >>> g = os.path.join(d, "preds.csv")
    >>> with open(g, "w") as fh:
    ...     _ = fh.write("label,p0,p1\\n0,0.9,0.1\\n1,0.3,0.7\\n")
    >>> pf = read_predictions(g)
    >>> pf.probs.tolist(), pf.labels.tolist()
    ([[0.9, 0.1], [0.3, 0.7]], [0, 1])
    >>> import calipers as cp
    >>> cp.accuracy(pf.check(), None)
    1.0

    A bare tensor in a ``.pt`` file (needs PyTorch) has its kind detected from
    the values, and the note says so, e.g. ``'one (2, 2) tensor detected as
    logits from the values: entry [0, 0] = 2 lies outside [0, 1]; pass
    logits=False (--probs) if they are probabilities'``.

    Ambiguous keys give an error that says how to choose:

    >>> np.savez(f, probs=np.ones((2, 2)) / 2, p=np.ones((2, 2)) / 2)
    >>> read_predictions(f)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calipers.io.PredictionFileError: '...preds.npz' is ambiguous: arrays 'probs', 'p' could all be the predictions ...
    """
    p = Path(path)
    suffix = p.suffix.lower()
    read_labels = labels_path is None
    if suffix == ".npz":
        r = _read_npz(p, probs_key, logits_key, labels_key, logits, read_labels)
    elif suffix in (".pt", ".pth"):
        r = _read_pt(p, probs_key, logits_key, labels_key, logits, read_labels)
    elif suffix == ".parquet":
        r = _read_parquet(p, probs_key, logits_key, labels_key, logits, not read_labels)
    elif suffix in (".npy", ".csv"):
        if probs_key is not None or logits_key is not None:
            raise _err(
                f"probs_key/logits_key apply to .npz files only (and to dicts in .pt files and "
                f"list columns in .parquet files); '{p}' is a {suffix} file"
            )
        if suffix == ".npy":
            r = _read_npy(p, logits)
        else:
            r = _read_csv(p, logits, not read_labels)
    elif suffix in (".pkl", ".pickle", ".p", ".joblib"):
        raise _err(f"'{p}' looks like a pickle; {_PICKLE_HINT} (.npz), or write a .csv file")
    else:
        raise _err(
            f"'{p}' has an unsupported type '{suffix or '(no suffix)'}'; calipers reads "
            f".npz ({_SAVEZ_HINT}), .npy (with a separate labels file), .csv "
            "(header row with a 'label' column and one column per class), .parquet "
            f"(the .csv layout, or a list column of vectors) and .pt/.pth ({_TORCH_HINT})"
        )
    arr, kind, labels, note, basis = r
    if arr.ndim not in (1, 2):
        raise _shape_error(f"'{p}'", arr.shape)
    source = str(p)
    if labels_path is not None:
        lp = Path(labels_path)
        _check_declared_labels(lp, labels_key, int(arr.shape[0]), f"{source} (labels: {lp})")
        labels, how = _read_labels_file(lp, labels_key)
        note += f"; labels from '{lp}' ({how})"
        source += f" (labels: {lp})"
    if labels is not None:
        if labels.ndim == 0 or labels.shape[0] != arr.shape[0]:
            got = "a scalar" if labels.ndim == 0 else f"{labels.shape[0]} labels"
            raise _err(
                f"{source}: {got} for {arr.shape[0]} rows of predictions; "
                "give exactly one label per row"
            )
    return PredictionFile(
        probs=arr if kind == "probs" else None,
        logits=arr if kind == "logits" else None,
        labels=labels,
        source=source,
        kind=kind,
        note=note,
        kind_basis=basis,
    )
