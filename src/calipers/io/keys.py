"""Named arrays: which key holds the predictions and which the labels.

An ``.npz`` archive, a dict in a ``.pt`` file and the list columns of a Parquet
file name their arrays. The names are matched case-insensitively against the
key tables below; two candidates for one role, or both probabilities and logits,
are ambiguous and must be chosen with ``probs_key=``, ``logits_key=`` or
``labels_key=``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .prediction_file import Kind, KindBasis, _err, _Read

#: Keys (lower case) recognised as probabilities in an ``.npz`` file.
PROBS_KEYS = ("probs", "probabilities", "proba", "p", "y_prob", "y_proba")

#: Keys (lower case) recognised as logits in an ``.npz`` file.
LOGITS_KEYS = ("logits", "scores")

#: Keys and CSV column names (lower case) recognised as labels.
LABELS_KEYS = ("labels", "label", "y", "targets", "target", "y_true")

# The names of regression files (calipers.io.read_regression_file), here so that the
# classification readers can name them when a file looks like regression predictions.
# Besides calipers' own names: uncertainty-toolbox's y_pred, y_std, y_true; scikit-learn's
# y_pred / y_true and the y_mean, y_std of its predict(X, return_std=True) examples;
# netcal's mean and stddev; torch.nn.GaussianNLLLoss's input, var and target.

#: Keys and column names (lower case) recognised as the predicted means.
MEAN_KEYS = (
    "mean",
    "mu",
    "pred_mean",
    "prediction",
    "predictions",
    "y_pred",
    "y_mean",
    "y_hat",
    "yhat",
    "mean_prediction",
)

#: Keys and column names (lower case) recognised as the predicted variances.
VARIANCE_KEYS = ("var", "variance", "sigma2", "pred_var", "y_var", "pred_variance")

#: Keys and column names (lower case) recognised as the predicted standard deviations.
STD_KEYS = (
    "std",
    "sd",
    "sigma",
    "stddev",
    "stdev",
    "pred_std",
    "y_std",
    "y_sd",
    "std_prediction",
    "predictions_std",
)

#: Keys and column names (lower case) recognised as the observed targets.
TARGETS_KEYS = ("y", "target", "targets", "y_true", "label", "y_test")

#: Keys and column names (lower case) recognised as row weights.
WEIGHT_KEYS = ("weight", "sample_weight")

#: What to do when a file read as classification looks like regression predictions.
REGRESSION_HINT = (
    "if the file holds regression predictions (a predicted mean, a variance or standard "
    "deviation and a target per row), name its columns or arrays mean (or y_pred, mu, "
    "y_mean), std (or y_std, sd, sigma) or var (variance), and y (or y_true, target), "
    "or pass --mean-key, --std-key or --variance-key and --targets-key "
    "(read_regression_file(path, mean_key=..., std_key=..., targets_key=...))"
)


def _find_key(files: Sequence[str], wanted: Sequence[str]) -> list[str]:
    return [f for f in files if f.lower() in wanted]


def _explicit_key(files: Sequence[str], key: str, option: str, path: Path) -> str:
    if key in files:
        return key
    folded = [f for f in files if f.lower() == key.lower()]
    if len(folded) == 1:
        return folded[0]
    raise _err(f"'{path}' has no array named '{key}' ({option}); it holds {_keys(files)}")


def _keys(files: Sequence[str]) -> str:
    return ", ".join(f"'{f}'" for f in files) if files else "no arrays"


_CHOOSE = (
    "name the one to use with probs_key=/logits_key=/labels_key= "
    "(on the command line --probs-key, --logits-key, --labels-key)"
)


def _pick_labels(
    files: Sequence[str],
    exclude: str,
    labels_key: str | None,
    get: Callable[[str], np.ndarray],
    path: Path,
    read_labels: bool,
) -> tuple[np.ndarray | None, str]:
    """The labels array of a keyed container (``.npz``, ``.pt`` dict, Parquet)."""
    if not read_labels:
        return None, ""
    if labels_key is not None:
        lkey = _explicit_key(files, labels_key, "labels_key", path)
        return get(lkey), f", labels from '{lkey}'"
    l_keys = [k for k in _find_key(files, LABELS_KEYS) if k != exclude]
    if len(l_keys) > 1:
        raise _err(
            f"'{path}' is ambiguous: arrays {_keys(l_keys)} could all be the labels "
            f"(keys found: {_keys(files)}); {_CHOOSE}"
        )
    if l_keys:
        return get(l_keys[0]), f", labels from '{l_keys[0]}'"
    return None, f", no labels array (keys found: {_keys(files)})"


def _from_mapping(
    files: list[str],
    get: Callable[[str], np.ndarray],
    path: Path,
    probs_key: str | None,
    logits_key: str | None,
    labels_key: str | None,
    logits: bool | None,
    read_labels: bool,
) -> _Read:
    """Predictions and labels from named arrays (``.npz``, a ``.pt`` dict, Parquet lists)."""
    basis: KindBasis = "name"
    if probs_key is not None and logits_key is not None:
        raise _err("give probs_key or logits_key, not both")
    if probs_key is not None:
        key = _explicit_key(files, probs_key, "probs_key", path)
        kind: Kind = "logits" if logits else "probs"
        how = f"array '{key}' given as {kind}"
        basis = "argument"
    elif logits_key is not None:
        if logits is False:
            raise _err("logits_key names logits; do not combine it with logits=False")
        key = _explicit_key(files, logits_key, "logits_key", path)
        kind = "logits"
        how = f"array '{key}' given as logits"
        basis = "argument"
    else:
        p_keys = _find_key(files, PROBS_KEYS)
        z_keys = _find_key(files, LOGITS_KEYS)
        if len(p_keys) > 1 or len(z_keys) > 1:
            many = p_keys if len(p_keys) > 1 else z_keys
            raise _err(
                f"'{path}' is ambiguous: arrays {_keys(many)} could all be the predictions "
                f"(keys found: {_keys(files)}); {_CHOOSE}"
            )
        if logits is True:
            cands = z_keys or p_keys
            kind = "logits"
            basis = "argument"
        elif logits is False:
            cands = p_keys
            kind = "probs"
            basis = "argument"
        elif p_keys and z_keys:
            raise _err(
                f"'{path}' holds both probabilities ('{p_keys[0]}') and logits "
                f"('{z_keys[0]}'); choose with probs_key='{p_keys[0]}' or "
                f"logits_key='{z_keys[0]}' (on the command line --probs-key or --logits)"
            )
        else:
            cands = p_keys or z_keys
            kind = "logits" if z_keys else "probs"
        if not cands:
            want = ", ".join(f"'{k}'" for k in PROBS_KEYS + LOGITS_KEYS)
            raise _err(
                f"'{path}' has no array recognised as predictions (keys found: "
                f"{_keys(files)}; recognised: {want}); rename the array or name it "
                f"with probs_key=/logits_key= (--probs-key/--logits-key); {REGRESSION_HINT}"
            )
        key = cands[0]
        how = f"array '{key}' read as {kind}"
    arr = get(key)
    labels, lhow = _pick_labels(files, key, labels_key, get, path, read_labels)
    return _Read(arr, kind, labels, how + lhow, basis)


def _labels_key_in(files: Sequence[str], labels_key: str | None, path: Path) -> str:
    """The labels entry of a labels file holding named arrays."""
    if labels_key is not None:
        return _explicit_key(files, labels_key, "labels_key", path)
    if len(files) == 1:
        return files[0]
    found = _find_key(files, LABELS_KEYS)
    if len(found) != 1:
        raise _err(
            f"labels file '{path}' holds {_keys(files)}; name the labels array "
            "with labels_key= (--labels-key)"
        )
    return found[0]
