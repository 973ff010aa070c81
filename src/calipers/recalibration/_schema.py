"""Declared schemas of recalibrator files, and the one function that checks them.

Every recalibration method declares a :class:`Schema`: the type and range of
each constructor parameter and of each fitted attribute (shapes tied to
``n_classes_`` and to the parameters, finiteness, order where the method
promises a monotone map, weights on the simplex), plus a few checks across
fields. :func:`check_fields` applies such a declaration to the values of a
JSON document (when a file is loaded) or to the attributes of a live object
(after ``fit``, before ``to_json`` and before ``predict_proba``), so that a
file, a fit and a prediction obey the same rules. Nothing is converted except
JSON integers given for real numbers (``2`` for ``2.0``) and the documented
array encoding; every other mismatch raises a
:class:`~calipers.validation.CalibrationInputError` naming the field.

Reading a document (:func:`parse_document`) is bounded: at most
:data:`MAX_DOCUMENT_BYTES` bytes (``max_bytes=`` raises the limit), nesting
at most :data:`MAX_DEPTH` deep (checked on the text, without recursion,
before :func:`json.loads` runs), no duplicate keys, no ``NaN`` /
``Infinity`` literals.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..validation import CalibrationInputError

__all__ = [
    "FORMAT",
    "READABLE_FORMATS",
    "MAX_DOCUMENT_BYTES",
    "MAX_DEPTH",
    "Schema",
    "Real",
    "Integer",
    "Flag",
    "OneOf",
    "Array",
    "ArrayList",
    "Labels",
    "check_fields",
    "parse_document",
]

#: The format version that :meth:`Recalibrator.to_json` writes.
FORMAT = 2
#: The format versions :func:`load_recalibrator` reads (1: calipers 0.1 and 0.2 development
#: versions, same layout; 2: the state holds exactly the declared fields).
READABLE_FORMATS = (1, 2)
#: Largest document read by default (64 MiB; a matrix scaling of 1000 classes is about 20 MB).
MAX_DOCUMENT_BYTES = 64 * 2**20
#: Deepest nesting of arrays and objects accepted (calipers writes at most 5 levels).
MAX_DEPTH = 32

Values = Mapping[str, Any]
#: A check across fields: returns None when the values pass, else what is wrong.
Check = Callable[[Values], "str | None"]


class _Bad(Exception):
    """A field's value breaks its rule; the message completes "field 'x' must be ..."."""


# ----------------------------------------------------------------------------- showing values


def _show(v: Any) -> str:
    """A short description of ``v`` for messages (JSON spelling for JSON values)."""
    if isinstance(v, (bool, np.bool_)):
        return f"{json.dumps(bool(v))} (a boolean)"
    if v is None:
        return "null"
    if isinstance(v, (int, np.integer)):
        iv = int(v)
        return repr(iv) if iv.bit_length() <= 64 else f"an integer of {iv.bit_length()} bits"
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, str):
        return repr(v) if len(v) <= 40 else repr(v[:40]) + "..."
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape}"
    if isinstance(v, list):
        return f"a list of {len(v)} items"
    if isinstance(v, dict):
        keys = sorted(str(k) for k in v)
        return "an object with keys " + (
            repr(keys) if len(keys) <= 5 else repr(keys[:5])[:-1] + ", ...]"
        )
    return f"a {type(v).__name__}"


def _num(x: float) -> str:
    return repr(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


# ----------------------------------------------------------------------------- field kinds


def _is_real(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
        v, (bool, np.bool_)
    )


@dataclass(frozen=True)
class Real:
    """A finite real number, optionally bounded (a JSON integer is accepted for it).

    ``none_ok``: ``null`` (None) is accepted too (a parameter whose default
    depends on another one)."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    none_ok: bool = False

    def rule(self) -> str:
        text = "a finite number" + _bounds(self.lo, self.hi, self.lo_open, self.hi_open)
        return text + " or null" if self.none_ok else text

    def coerce(self, v: Any, ctx: Values) -> float | None:
        if v is None and self.none_ok:
            return None
        if isinstance(v, dict) and set(v) == {"float"} and v["float"] in ("nan", "inf", "-inf"):
            v = float(v["float"])  # format 1 wrote non-finite floats this way
        if not _is_real(v):
            raise _Bad(f"{self.rule()}; got {_show(v)}")
        try:
            f = float(v)
        except OverflowError:
            raise _Bad(f"{self.rule()}; got {_show(v)}") from None
        if isinstance(v, (int, np.integer)) and f != v:  # 2**53 + 1 would become 2**53
            raise _Bad(f"{self.rule()}; got {_show(v)}, which no float holds exactly")
        if not (math.isfinite(f) and _within(f, self.lo, self.hi, self.lo_open, self.hi_open)):
            raise _Bad(f"{self.rule()}; got {_show(v)}")
        return f


@dataclass(frozen=True)
class Integer:
    """An integer (not a boolean, not a float such as ``15.0``), optionally bounded.

    ``none_ok``: ``null`` (None) is accepted too (a parameter whose default is
    chosen from the data)."""

    lo: int | None = None
    hi: int | None = None
    none_ok: bool = False

    def rule(self) -> str:
        if self.lo is not None and self.lo == self.hi:
            return f"the integer {self.lo}"
        text = "an integer" + _bounds(self.lo, self.hi, False, False)
        return text + " or null" if self.none_ok else text

    def coerce(self, v: Any, ctx: Values) -> int | None:
        if v is None and self.none_ok:
            return None
        if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
            raise _Bad(f"{self.rule()}; got {_show(v)}")
        iv = int(v)
        if not _within(iv, self.lo, self.hi, False, False):
            raise _Bad(f"{self.rule()}; got {_show(v)}")
        return iv


@dataclass(frozen=True)
class Flag:
    """``true`` or ``false`` (not 0, 1 or a string)."""

    def rule(self) -> str:
        return "true or false"

    def coerce(self, v: Any, ctx: Values) -> bool:
        if not isinstance(v, (bool, np.bool_)):
            raise _Bad(f"{self.rule()}; got {_show(v)}")
        return bool(v)


@dataclass(frozen=True)
class OneOf:
    """One of a few strings."""

    choices: tuple[str, ...]

    def rule(self) -> str:
        return "one of " + ", ".join(repr(c) for c in self.choices)

    def coerce(self, v: Any, ctx: Values) -> str:
        if not (isinstance(v, str) and v in self.choices):
            raise _Bad(f"{self.rule()}; got {_show(v)}")
        return str(v)


#: One dimension of an array shape: a number, the name of an integer field, or None (any >= 1).
Dim = int | str | None
#: The allowed shapes of an array: fixed dimensions, or a function of the fields checked so far.
ShapeSpec = tuple[Dim, ...] | Callable[[Values], Sequence[tuple[Dim, ...]]]


@dataclass(frozen=True)
class Array:
    """A float64 array of declared shape, with finite entries (and optional bounds).

    ``order`` ("non-decreasing" or "increasing") applies along the last axis;
    ``simplex`` asks for entries summing to 1 within 1e-9 (with ``lo=0``: weights
    on the probability simplex). In a document an array is written as
    ``{"ndarray": nested lists, "dtype": "float64", "shape": [...]}``.
    """

    shape: ShapeSpec
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    order: str | None = None
    simplex: bool = False

    def rule(self) -> str:
        return "an array"

    def shapes(self, ctx: Values) -> list[tuple[int | None, ...]]:
        specs = self.shape(ctx) if callable(self.shape) else [self.shape]
        return [tuple(int(ctx[d]) if isinstance(d, str) else d for d in s) for s in specs]

    def coerce(self, v: Any, ctx: Values) -> np.ndarray:
        arr = self.structure(v, self.shapes(ctx))
        self._check_values(arr)
        return arr

    def structure(self, v: Any, allowed: list[tuple[int | None, ...]]) -> np.ndarray:
        """The float64 array of ``v`` (an array, or the document's encoding), shape checked."""
        if isinstance(v, np.ndarray):
            if v.dtype.kind not in "fiu":
                raise _Bad(f"a real array; got dtype {v.dtype}")
            arr = np.asarray(v, dtype=np.float64)
            _check_shape(arr.shape, allowed)
            return arr
        return _array_from_json(v, allowed)

    def _check_values(self, arr: np.ndarray) -> None:
        bad = ~np.isfinite(arr)
        if bad.any():
            idx = _first(bad)
            raise _Bad(f"finite numbers; entry {idx} is {_show(arr[idx])}")
        b = _bounds(self.lo, self.hi, self.lo_open, False)
        if b:
            out = ~_within_array(arr, self.lo, self.hi, self.lo_open)
            if out.any():
                idx = _first(out)
                raise _Bad(f"numbers{b}; entry {idx} is {_show(arr[idx])}")
        if self.order is not None and arr.shape[-1] > 1:
            d = np.diff(arr, axis=-1)
            wrong = d <= 0 if self.order == "increasing" else d < 0
            if wrong.any():
                idx = _first(wrong)
                nxt = idx[:-1] + (idx[-1] + 1,)
                raise _Bad(
                    f"{self.order} (the method promises a monotone map); entry {nxt} "
                    f"({_show(arr[nxt])}) follows entry {idx} ({_show(arr[idx])})"
                )
        if self.simplex:
            s = float(arr.sum())
            if abs(s - 1.0) > 1e-9:
                raise _Bad(f"entries that sum to 1 (weights on the simplex); they sum to {s!r}")


@dataclass(frozen=True)
class ArrayList:
    """A list of 1-D arrays: ``length`` allowed lengths; ``like`` another list whose
    arrays' shapes these must repeat."""

    item: Array
    length: Callable[[Values], Sequence[int]]
    like: str | None = None

    def rule(self) -> str:
        return "a list of arrays"

    def coerce(self, v: Any, ctx: Values) -> list[np.ndarray]:
        if not isinstance(v, (list, tuple)):
            raise _Bad(f"a list of arrays; got {_show(v)}")
        allowed = list(self.length(ctx))
        if len(v) not in allowed:
            want = " or ".join(str(n) for n in allowed)
            raise _Bad(f"a list of {want} arrays; got {len(v)}")
        out = []
        for i, x in enumerate(v):  # structure and shapes item by item ...
            shape = tuple(ctx[self.like][i].shape) if self.like is not None else None
            try:
                out.append(self.item.structure(x, [shape] if shape else self.item.shapes(ctx)))
            except _Bad as exc:
                raise _Bad(f"{self.rule()}; item {i} must be {exc}") from None
        if out and all(a.ndim == 1 for a in out):  # ... the values in one pass over all items
            try:
                self._check_joined(out)
                return out
            except _Bad:
                pass  # name the first offending item below
        for i, a in enumerate(out):
            try:
                self.item._check_values(a)
            except _Bad as exc:
                raise _Bad(f"{self.rule()}; item {i} must be {exc}") from None
        return out

    def _check_joined(self, items: list[np.ndarray]) -> None:
        """The item rules on all 1-D items at once (order only within each item)."""
        joined = np.concatenate(items)
        flat = Array((None,), self.item.lo, self.item.hi, self.item.lo_open)
        flat._check_values(joined)
        if self.item.order is not None:
            d = np.diff(joined)
            ends = np.cumsum([len(a) for a in items])[:-1] - 1  # last entry of each item
            inside = np.ones(d.shape, dtype=bool)
            inside[ends[ends < d.size]] = False
            wrong = (d <= 0) if self.item.order == "increasing" else (d < 0)
            if np.any(wrong & inside):
                raise _Bad("ordered")


@dataclass(frozen=True)
class Labels:
    """The class labels of the probability columns (``classes_``), one per class.

    A list of ``length`` distinct labels of one JSON type: all strings, all
    integers, all booleans or all finite numbers (``length`` names an integer
    field, ``n_classes_``). A live object holds them as a 1-D NumPy array; the
    document as a plain JSON list.
    """

    length: str = "n_classes_"

    def rule(self) -> str:
        return f"a list of {self.length} distinct labels of one type (strings or integers)"

    def coerce(self, v: Any, ctx: Values) -> np.ndarray:
        n = int(ctx[self.length])
        if isinstance(v, np.ndarray) and v.ndim == 1:
            v = v.tolist()
        if not isinstance(v, (list, tuple)):
            raise _Bad(f"{self.rule()}; got {_show(v)}")
        if len(v) != n:
            raise _Bad(f"{self.rule()}: {n} labels; got {len(v)}")
        kinds = {type(x) for x in v}
        if len(kinds) != 1 or not kinds <= {str, int, bool, float}:
            odd = sorted({k.__name__ for k in kinds})
            raise _Bad(f"{self.rule()}; got labels of types {odd}")
        if float in kinds and not all(math.isfinite(x) for x in v):
            raise _Bad(f"{self.rule()}; got a non-finite label")
        if int in kinds and any(abs(x) >= 2**63 for x in v):
            raise _Bad(f"{self.rule()}; got an integer beyond 64 bits")
        seen: dict[Any, int] = {}
        for i, x in enumerate(v):
            j = seen.setdefault(x, i)
            if j != i:
                raise _Bad(f"{self.rule()}; label {_show(x)} appears at positions {j} and {i}")
        return np.asarray(list(v))


Field = Real | Integer | Flag | OneOf | Array | ArrayList | Labels


@dataclass(frozen=True)
class Schema:
    """What a method's file may hold: parameters, fitted state, checks across fields.

    ``param_checks`` see the parameters; ``state_checks`` the parameters and
    the fitted state. Each check returns None or a sentence saying what is wrong.
    ``legacy_params`` gives, for a parameter added after files were first
    written, the value that a document without it means: the behaviour of the
    version that wrote it (which need not be today's default), so that a
    changed default never changes what an old file does.
    """

    params: Mapping[str, Field] = field(default_factory=dict)
    state: Mapping[str, Field] = field(default_factory=dict)
    param_checks: tuple[Check, ...] = ()
    state_checks: tuple[Check, ...] = ()
    legacy_params: Mapping[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------- helpers


def _bounds(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    if lo is not None and hi is not None:
        return f" in {'(' if lo_open else '['}{_num(lo)}, {_num(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f" {'>' if lo_open else '>='} {_num(lo)}"
    if hi is not None:
        return f" {'<' if hi_open else '<='} {_num(hi)}"
    return ""


def _within(x: float, lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> bool:
    if lo is not None and (x <= lo if lo_open else x < lo):
        return False
    return not (hi is not None and (x >= hi if hi_open else x > hi))


def _within_array(a: np.ndarray, lo: float | None, hi: float | None, lo_open: bool) -> np.ndarray:
    ok = np.ones(a.shape, dtype=bool)
    if lo is not None:
        ok &= a > lo if lo_open else a >= lo
    if hi is not None:
        ok &= a <= hi
    return ok


def _first(mask: np.ndarray) -> tuple[int, ...]:
    flat = int(np.flatnonzero(mask.reshape(-1))[0])
    return tuple(int(i) for i in np.unravel_index(flat, mask.shape))


def _fmt_shape(s: Sequence[int | None]) -> str:
    dims = ["n" if d is None else str(d) for d in s]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _check_shape(shape: tuple[int, ...], allowed: list[tuple[int | None, ...]]) -> None:
    for s in allowed:
        if len(s) == len(shape) and all(
            (d is None and n >= 1) or d == n for d, n in zip(s, shape, strict=True)
        ):
            return
    want = " or ".join(_fmt_shape(s) for s in allowed)
    raise _Bad(f"an array of shape {want}; got shape {_fmt_shape(shape)}")


_ARRAY_KEYS = {"ndarray", "dtype", "shape"}
_ENCODING = '{"ndarray": [...], "dtype": "float64", "shape": [...]}'


def _array_from_json(v: Any, allowed: list[tuple[int | None, ...]]) -> np.ndarray:
    """The float64 array of the documented encoding; its nesting must match its shape."""
    if not (isinstance(v, dict) and set(v) == _ARRAY_KEYS):
        raise _Bad(f"an array written as {_ENCODING}; got {_show(v)}")
    if v["dtype"] != "float64":
        raise _Bad(f'an array of dtype "float64"; got dtype {_show(v["dtype"])}')
    shape = v["shape"]
    if not (
        isinstance(shape, list)
        and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
    ):
        raise _Bad(f"an array whose 'shape' is a list of non-negative integers; got {_show(shape)}")
    _check_shape(tuple(shape), allowed)
    level: list[Any] = [v["ndarray"]]
    for depth, d in enumerate(shape):  # breadth first: no recursion
        nxt: list[Any] = []
        for x in level:
            if not (isinstance(x, list) and len(x) == d):
                raise _Bad(
                    f"an array whose nested lists match its shape {_fmt_shape(shape)}; "
                    f"at depth {depth} found {_show(x)}"
                )
            nxt.extend(x)
        level = nxt
    kinds = {type(x) for x in level}
    if not kinds <= {int, float}:
        odd = next(x for x in level if type(x) not in (int, float))
        raise _Bad(f"an array of numbers; found {_show(odd)}")
    if int in kinds:  # JSON integers must convert exactly (2**53 + 1 would not)
        for x in level:
            if type(x) is int and abs(x) > 2**53 and (abs(x) >= 2**1024 or float(x) != x):
                raise _Bad(f"an array of numbers that floats hold exactly; found {_show(x)}")
    return np.array(level, dtype=np.float64).reshape(shape)


# ----------------------------------------------------------------------------- the check


def check_fields(
    fields: Mapping[str, Field],
    values: Mapping[str, Any],
    where: str,
    what: str,
    context: Values | None = None,
    *,
    allow_extra: bool = False,
) -> dict[str, Any]:
    """Check ``values`` against ``fields``; return the coerced values in declared order.

    Every declared field must be present and no other key may be (unless
    ``allow_extra``); ``context`` holds values checked earlier (the parameters,
    when the fitted state is checked), on which shapes may depend. Messages
    read "``where``: ``what`` 'name' must be ...".

    Examples
    --------
    >>> from calipers.recalibration._schema import Real, check_fields
    >>> check_fields({"temperature_": Real(lo=0, lo_open=True)}, {"temperature_": 1.5}, "X", "field")
    {'temperature_': 1.5}
    >>> check_fields({"temperature_": Real(lo=0, lo_open=True)}, {"temperature_": -1}, "X", "field")
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: X: field 'temperature_' must be a finite number > 0; got -1
    """
    if not allow_extra:
        extra = [k for k in values if k not in fields]
        if extra:
            raise CalibrationInputError(
                f"{where}: unknown {what} {str(extra[0])!r}; the {what}s are {sorted(fields)}"
            )
    ctx: dict[str, Any] = dict(context or {})
    out: dict[str, Any] = {}
    for name, f in fields.items():
        if name not in values:
            raise CalibrationInputError(f"{where}: {what} {name!r} is missing")
        try:
            out[name] = ctx[name] = f.coerce(values[name], ctx)
        except _Bad as exc:
            raise CalibrationInputError(f"{where}: {what} {name!r} must be {exc}") from None
    return out


def run_checks(checks: Sequence[Check], values: Values, where: str) -> None:
    """Apply the checks across fields; the first failure raises."""
    for check in checks:
        problem = check(values)
        if problem is not None:
            raise CalibrationInputError(f"{where}: {problem}")


# ----------------------------------------------------------------------------- reading JSON

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


def nesting_depth(text: str) -> int:
    """Deepest nesting of ``[`` / ``{`` outside JSON strings, found without recursion.

    Brackets inside strings are skipped; an unterminated string's brackets
    count, so the result is never below the depth :func:`json.loads` reaches.

    Examples
    --------
    >>> nesting_depth('{"a": [[1, 2], "]]]"]}')
    3
    """
    bare = _STRING.sub('""', text).encode("utf-8", "replace")
    steps = _OPEN[np.frombuffer(bare, dtype=np.uint8)]
    steps = steps[steps != 0]  # the brackets alone (a few per array, not per number)
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise CalibrationInputError(
                f"not a valid recalibrator document: the key {k!r} appears twice in one object"
            )
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise CalibrationInputError(
        f"not a valid recalibrator document: {name} is not a JSON number (non-finite "
        "values have no place in a recalibrator file)"
    )


def parse_document(text: Any, max_bytes: int = MAX_DOCUMENT_BYTES) -> Any:
    """Parse JSON text within the size and depth limits (see the module docstring).

    Examples
    --------
    >>> parse_document('{"format": 2}')
    {'format': 2}
    >>> parse_document("[" * 100 + "]" * 100)
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: not a valid recalibrator document: nested 100 deep; at most 32 levels are read
    """
    if isinstance(text, (bytes, bytearray, memoryview)):
        if len(text) > max_bytes:
            raise CalibrationInputError(_too_large(len(text), max_bytes))
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CalibrationInputError(
                f"not a valid recalibrator document: not UTF-8 text ({exc})"
            ) from None
    if not isinstance(text, str):
        raise CalibrationInputError(
            f"a recalibrator document is JSON text (str or bytes); got a {type(text).__name__}"
        )
    size = len(text) if len(text) * 4 <= max_bytes else len(text.encode("utf-8", "replace"))
    if size > max_bytes:
        raise CalibrationInputError(_too_large(size, max_bytes))
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise CalibrationInputError(
            f"not a valid recalibrator document: nested {depth} deep; at most {MAX_DEPTH} "
            "levels are read"
        )
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except CalibrationInputError:
        raise
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, 4300-digit integers
        raise CalibrationInputError(f"not a valid recalibrator document: {exc}") from None


def _too_large(size: int, max_bytes: int) -> str:
    return (
        f"the recalibrator document is {size} bytes, more than the limit of {max_bytes} bytes "
        "(by default calipers.recalibration.base.MAX_DOCUMENT_BYTES, 64 MiB); pass max_bytes= "
        "to read a larger one"
    )


# ----------------------------------------------------------------------------- shared declarations

#: A finite number > 0 (temperatures, tolerances, bounds).
POSITIVE = Real(lo=0, lo_open=True)
#: A finite number >= 0 (penalty weights).
NON_NEGATIVE = Real(lo=0)
#: A non-negative number, or null for "the default of the chosen option".
NON_NEGATIVE_OR_NONE = Real(lo=0, none_ok=True)
#: An iteration limit.
MAX_ITER = Integer(lo=1)
#: What every iterative fit records.
ITERATIONS: dict[str, Field] = {"n_iter_": Integer(lo=0), "converged_": Flag()}


def temperature_bounds(v: Values) -> str | None:
    """``t_min < t_max`` (both already checked to be positive and finite)."""
    if v["t_min"] < v["t_max"]:
        return None
    return (
        f"parameters 't_min' and 't_max' must satisfy t_min < t_max; got t_min={v['t_min']!r}, "
        f"t_max={v['t_max']!r}"
    )


def temperature_in_bounds(v: Values) -> str | None:
    """The fitted temperature lies in ``[t_min, t_max]``, where the fit searches (to rounding)."""
    t, lo, hi = v["temperature_"], v["t_min"], v["t_max"]
    if lo * (1 - 1e-12) <= t <= hi * (1 + 1e-12):
        return None
    return (
        f"field 'temperature_' must lie in [t_min, t_max] = [{lo!r}, {hi!r}], where the fit "
        f"searches; got {t!r}"
    )


def binary_has_two_classes(v: Values) -> str | None:
    """A fit on ``(n,)`` binary scores (``binary_``) has ``n_classes_ = 2``."""
    if not v["binary_"] or v["n_classes_"] == 2:
        return None
    return f"field 'binary_' is true (binary scores), but field 'n_classes_' is {v['n_classes_']}"


# ----------------------------------------------------------------------------- documents

#: The keys of a recalibrator document, in order.
DOCUMENT_KEYS = ("calipers_recalibrator", "format", "params", "state")


def check_registrable(cls: Any, base: Any, who: str) -> None:
    """Refuse to register ``cls`` unless it declares its own schema with exactly its
    constructor parameters (``base``: the contract class whose empty schema it inherits;
    ``who``: the registering function, for the message)."""
    if cls.schema is base.schema:
        raise CalibrationInputError(
            f"{who}: {cls.__name__} declares no schema (the class attribute 'schema' listing "
            "its parameters and fitted fields), so its files could not be checked"
        )
    differ = set(cls._param_names()) ^ set(cls.schema.params)
    if differ:
        raise CalibrationInputError(
            f"{who}: the schema of {cls.__name__} must declare exactly its constructor "
            f"parameters; it differs in {sorted(differ)}"
        )


def check_document(doc: Mapping[str, Any], where: str, readable: Sequence[int]) -> int:
    """Check the envelope of a recalibrator document; return its format version.

    Exactly the keys :data:`DOCUMENT_KEYS`, an integer ``format`` among
    ``readable``, and ``params`` and ``state`` objects; anything else raises a
    :class:`CalibrationInputError` starting with ``where``.
    """
    for key in doc:
        if key not in DOCUMENT_KEYS:
            raise CalibrationInputError(
                f"{where}: unknown key {key!r}; a recalibrator document has the keys "
                f"{list(DOCUMENT_KEYS)}"
            )
    for key in DOCUMENT_KEYS[1:]:
        if key not in doc:
            raise CalibrationInputError(f"{where}: key {key!r} is missing")
    fmt = doc["format"]
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise CalibrationInputError(
            f"{where}: 'format' must be an integer (the format version); got {_show(fmt)}"
        )
    if fmt not in readable:
        raise CalibrationInputError(
            f"{where}: format {_show(fmt)} is not supported; this version of calipers reads "
            f"format{'s' if len(readable) > 1 else ''} "
            f"{' and '.join(str(f) for f in readable)} (a file written by a newer calipers "
            "needs that version)"
        )
    for key in ("params", "state"):
        if not isinstance(doc[key], dict):
            raise CalibrationInputError(
                f"{where}: {key!r} must be an object of named values; got {_show(doc[key])}"
            )
    return fmt
