"""One column per class (``.csv``, and ``.parquet`` without list columns).

Which column holds the labels, in which order the class columns go (by a
trailing class index shared by all, else in file order), whether they hold
logits (``logit_*``), and labels given as class indices or class names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .keys import LABELS_KEYS, REGRESSION_HINT
from .prediction_file import Kind, KindBasis, _err

_INDEXED = re.compile(r"^(.*?)(\d+)$")


def _class_order(names: list[str]) -> tuple[list[int], str]:
    """Order of the class columns: by a trailing index if all share a prefix, else file order."""
    parts = [_INDEXED.match(n) for n in names]
    if all(parts):
        prefixes = {m.group(1) for m in parts if m}
        idx = [int(m.group(2)) for m in parts if m]
        if len(prefixes) == 1 and sorted(idx) == list(range(len(names))):
            order = sorted(range(len(names)), key=lambda j: idx[j])
            return order, f"columns {names[order[0]]}..{names[order[-1]]} by class index"
        if len(prefixes) == 1:
            raise _err(
                f"class columns {names} end in indices {idx}; indexed columns must "
                f"number the classes 0..{len(names) - 1}, each once"
            )
    return list(range(len(names))), "class columns in file order: " + ", ".join(names)


def _column_roles(
    names: list[str], where: str, logits: bool | None
) -> tuple[list[int], list[int], Kind, KindBasis]:
    """Label column, class columns and kind of a one-column-per-class table (CSV rules)."""
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _err(f"{where} has duplicate column names {dup}; every column needs its own name")
    label_cols = [j for j, n in enumerate(names) if n.lower() in LABELS_KEYS]
    if len(label_cols) > 1:
        raise _err(
            f"{where} has several label columns {[names[j] for j in label_cols]}; keep one "
            f"(named one of {', '.join(LABELS_KEYS)})"
        )
    class_cols = [j for j in range(len(names)) if j not in label_cols]
    if not class_cols:
        raise _err(f"{where} has no probability columns; add one column per class (p0, p1, ...)")
    cnames = [names[j] for j in class_cols]
    is_logit = [n.lower().startswith("logit") for n in cnames]
    if any(is_logit) and not all(is_logit):
        raise _err(
            f"{where} mixes logit columns with other columns ({cnames}); use either "
            "logit_0, logit_1, ... or probability columns, not both"
        )
    kind: Kind = "logits" if all(is_logit) or logits else "probs"
    if logits is False and all(is_logit):
        raise _err(f"{where} has logit columns ({cnames}) but logits=False was given")
    basis: KindBasis = "argument" if logits is not None else "name" if all(is_logit) else "default"
    return label_cols, class_cols, kind, basis


def _assemble_columns(
    names: list[str],
    label_cols: list[int],
    class_cols: list[int],
    kind: Kind,
    cols: Mapping[int, np.ndarray],
    labels_of: Callable[[list[str]], np.ndarray] | None,
    has_labels_path: bool,
) -> tuple[np.ndarray, np.ndarray | None, str]:
    """Stack the class columns in class order and convert the label column (CSV rules).

    ``labels_of(classes)`` converts the label column given the class names in
    class order (None when there is no label column).
    """
    cnames = [names[j] for j in class_cols]
    if len(class_cols) == 1:  # one column: P(y = 1) (or a logit) of a binary problem
        arr = cols[class_cols[0]]
        classes: list[str] = []
        how = f"column {cnames[0]} as the binary P(y = 1)"
        if kind == "logits":
            how = f"column {cnames[0]} as the binary logit"
    else:
        order, how = _class_order(cnames)
        arr = np.stack([cols[class_cols[o]] for o in order], axis=1)
        classes = [cnames[o] for o in order]
    labels: np.ndarray | None = None
    if labels_of is not None:
        labels = labels_of(classes)
        how += f"; labels from column '{names[label_cols[0]]}'"
    elif not has_labels_path:
        how += f"; no label column (columns: {', '.join(names)})"
    return arr, labels, f"{kind} from {how}"


def _labels_from_floats(raw: np.ndarray, where: str, lname: str, offset: int = 0) -> np.ndarray:
    """Integer labels from a float column; every value must be a whole number.

    ``offset`` rows of the file precede ``raw`` (chunked reading), for the message.
    """
    bad = ~np.isfinite(raw) | (raw != np.round(raw))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _err(
            f"{where} data row {offset + i + 1}, column '{lname}': label {float(raw[i]):g} "
            "is not a class index (labels are integers 0..k-1 or class column names); "
            + REGRESSION_HINT
        )
    return raw.astype(np.int64)


def _labels_from_strings(
    values: Sequence[str],
    classes: list[str],
    where: str,
    lines: Sequence[int] | None,
    at_word: str = "line",
) -> np.ndarray:
    """Integer labels from strings: class indices, or names from ``classes``."""
    stripped = [v.strip() for v in values]
    try:
        return np.array([int(v) for v in stripped], dtype=np.int64)
    except ValueError:
        pass
    lookup = {c: i for i, c in enumerate(classes)}
    out = np.empty(len(stripped), dtype=np.int64)
    for i, v in enumerate(stripped):
        if v in lookup:
            out[i] = lookup[v]
            continue
        try:
            f = float(v)
        except ValueError:
            f = None
        if f is not None and np.isfinite(f) and f == int(f):
            out[i] = int(f)
            continue
        known = f" or one of the class columns {classes}" if classes else ""
        at = f"{at_word} {lines[i]}" if lines is not None else f"entry {i}"
        hint = f"; {REGRESSION_HINT}" if f is not None and np.isfinite(f) else ""
        raise _err(f"{where}, {at}: label {v!r} is not a class index{known}{hint}")
    return out


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True
