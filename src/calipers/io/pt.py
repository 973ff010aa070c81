"""``.pt``/``.pth`` files (``torch.save``; needs PyTorch): a tensor, a dict of tensors, or a pair.

Loaded with ``torch.load(weights_only=True, map_location="cpu")``, which accepts
tensors, numbers, strings and plain containers and refuses any other pickled
object without running it. Tensors become NumPy arrays (``bfloat16`` widened to
``float32``, exactly); a dict is read as an ``.npz`` archive; a bare tensor has
its kind detected from its values (:mod:`calipers.io.kind`).
"""

from __future__ import annotations

import importlib
import pickle
import re
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .checks import _check_numeric, _shape_error
from .keys import _from_mapping, _keys
from .kind import _bare
from .prediction_file import _err, _Read

_TORCH_HINT = "torch.save({'probs': probs, 'labels': labels}, path)"


def _torch_load(path: Path, what: str) -> Any:
    """``torch.load(weights_only=True)``: tensors and plain containers, nothing else."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        raise _err(f"'{path}': reading .pt/.pth files needs PyTorch: pip install torch") from None
    if path.is_dir():
        raise _err(f"{what} '{path}' is a directory, not a file")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. about the pickle protocol
            return torch.load(str(path), weights_only=True, map_location="cpu")
    except FileNotFoundError:
        raise _err(f"{what} '{path}' does not exist") from None
    except PermissionError:
        raise _err(f"{what} '{path}' cannot be read (permission denied)") from None
    except pickle.UnpicklingError as exc:
        text = str(exc)
        found = re.search(
            r"(Unsupported global: GLOBAL \S+|unsupported GLOBAL \S+|Unsupported operand \d+"
            r"|invalid load key[^\n.]*)",
            text,
        )
        reason = found.group(1) if found else "a Python object that is not a tensor"
        raise _err(
            f"{what} '{path}' was refused: it holds pickled Python objects other than tensors "
            f"({reason}). calipers never unpickles files: .pt files are loaded with "
            "torch.load(weights_only=True), which accepts only tensors, numbers, strings and "
            f"dicts, lists and tuples of them. Save plain tensors, e.g. {_TORCH_HINT}"
        ) from None
    except Exception as exc:  # torch raises RuntimeError, EOFError, ... on damaged files
        raise _err(
            f"{what} '{path}' is damaged or not a PyTorch file ({type(exc).__name__}: "
            f"{str(exc)[:200]}); save it again, e.g. {_TORCH_HINT}"
        ) from None


def _is_tensor(obj: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def _describe(obj: object) -> str:
    """What a loaded object is, for messages."""
    if _is_tensor(obj):
        return f"a tensor of shape {tuple(obj.shape)}"  # type: ignore[attr-defined]
    if isinstance(obj, Mapping):
        return f"a dict with keys {_keys([str(k) for k in obj])}"
    if isinstance(obj, (list, tuple)):
        items = ", ".join(_describe_short(x) for x in obj[:4]) + (", ..." if len(obj) > 4 else "")
        return f"a {type(obj).__name__} of {len(obj)} items ({items})"
    return f"a {type(obj).__name__}"


def _describe_short(obj: object) -> str:
    if _is_tensor(obj):
        return f"tensor {tuple(obj.shape)}"  # type: ignore[attr-defined]
    return type(obj).__name__


def _tensor_eps(t: Any) -> float | None:
    """Machine epsilon of a tensor's own dtype (None for non-float tensors)."""
    return float(sys.modules["torch"].finfo(t.dtype).eps) if t.dtype.is_floating_point else None


def _tensor_to_numpy(t: object, what: str, where: str) -> np.ndarray:
    """A dense real tensor as a NumPy array (a copy); ``bfloat16`` becomes ``float32``."""
    if not _is_tensor(t):
        raise _err(
            f"{where}: {what} is {_describe(t)}, not a tensor; store tensors, e.g. {_TORCH_HINT}"
        )
    torch = sys.modules["torch"]
    x: Any = t
    if x.layout != torch.strided:
        raise _err(f"{where}: {what} is a {x.layout} tensor; store a dense tensor (.to_dense())")
    if x.is_quantized or x.is_complex():
        raise _err(f"{where}: {what} has dtype {x.dtype}; store real numbers (float or integer)")
    x = x.detach()
    if x.dtype == torch.bfloat16:
        x = x.to(torch.float32)  # exact; NumPy has no bfloat16
    try:
        arr = np.array(x.cpu().resolve_conj().resolve_neg().numpy(), copy=True)
    except (RuntimeError, TypeError) as exc:
        raise _err(
            f"{where}: {what} (dtype {x.dtype}) cannot be converted to NumPy ({exc}); "
            "store float32/float64 probabilities and int64 labels"
        ) from None
    return _check_numeric(arr, what, where)


def _read_pt(
    path: Path,
    probs_key: str | None,
    logits_key: str | None,
    labels_key: str | None,
    logits: bool | None,
    read_labels: bool,
) -> _Read:
    obj = _torch_load(path, "prediction file")
    where = f"'{path}'"
    if isinstance(obj, Mapping):
        keys = list(obj)
        if not all(isinstance(k, str) for k in keys):
            raise _err(
                f"{where} holds a dict whose keys are not all strings ({keys[:6]}); use string "
                f"keys, e.g. {_TORCH_HINT}"
            )

        def get(key: str) -> np.ndarray:
            return _tensor_to_numpy(obj[key], f"entry '{key}'", where)

        return _from_mapping(
            keys, get, path, probs_key, logits_key, labels_key, logits, read_labels
        )
    expected = (
        "expected a tensor of predictions, a dict of tensors such as "
        "{'probs': ..., 'labels': ...}, or a tuple (scores, labels) of two tensors"
    )
    is_pair = isinstance(obj, (list, tuple)) and len(obj) == 2 and all(map(_is_tensor, obj))
    if not (_is_tensor(obj) or is_pair):
        raise _err(f"{where} holds {_describe(obj)}; {expected}")
    if probs_key is not None or logits_key is not None:
        raise _err(f"probs_key/logits_key name entries of a dict; {where} holds {_describe(obj)}")
    scores = obj[0] if is_pair else obj
    what = "the scores tensor" if is_pair else "the tensor"
    arr = _tensor_to_numpy(scores, what, where)
    if arr.ndim not in (1, 2):
        raise _shape_error(where, arr.shape)
    desc = f"{what} {arr.shape}" if is_pair else f"one {arr.shape} tensor"
    r = _bare(arr, where, logits, desc, _tensor_eps(scores))
    if is_pair and read_labels:
        labels = _tensor_to_numpy(obj[1], "the labels tensor", where)
        return r._replace(labels=labels, note=r.note + "; labels from the second tensor")
    return r
