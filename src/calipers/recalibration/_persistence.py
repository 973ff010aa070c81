"""Recalibrators as JSON files: the declared schema, ``to_json``, ``save``, loading.

A recalibrator is stored as plain JSON (nothing is pickled): its class name,
its parameters and its fitted state, checked against the method's declared
``schema`` (:mod:`calipers.recalibration._schema`) when a file is loaded, after
``fit``, before ``to_json`` and before ``predict_proba``. Files carry a format
version (2 is written; 1, written by calipers 0.1 and the 0.2 development
versions, still loads). :class:`_Persistence` is the part of
:class:`~calipers.recalibration.base.Recalibrator` that checks the schema and
writes and reads the files; :func:`load_recalibrator` reads any registered
method's document, through the registered class
(:mod:`calipers.recalibration._registry`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from ..validation import CalibrationInputError
from . import _registry
from ._inputs import _is_default_classes
from ._params import Parameters
from ._schema import (
    FORMAT,
    MAX_DOCUMENT_BYTES,
    READABLE_FORMATS,
    Flag,
    Integer,
    Labels,
    OneOf,
    Schema,
    _show,
    _too_large,
    check_document,
    check_fields,
    parse_document,
    run_checks,
)

if TYPE_CHECKING:
    from .base import Recalibrator

__all__ = ["load_recalibrator", "COMMON_STATE", "OPTIONAL_STATE"]

#: Fitted fields every method has (a method may narrow ``n_classes_``).
COMMON_STATE: dict[str, Any] = {
    "n_classes_": Integer(lo=2),
    "input_kind_": OneOf(("logits", "probs")),
    "input_detected_": Flag(),
}

#: Fitted fields a document holds only where they differ from their default (so that
#: the files of fits on column indices stay as they were, and older files load):
#: ``classes_`` (default ``[0, 1, ..., k-1]``) and ``n_features_in_`` (default 1 for
#: binary scores, ``n_classes_`` otherwise).
OPTIONAL_STATE: dict[str, Any] = {
    "classes_": Labels(),
    "n_features_in_": Integer(lo=1),
}
#: Where the live object keeps them (``classes_`` and ``n_features_in_`` are properties).
_PRIVATE_STATE = {"classes_": "_classes", "n_features_in_": "_n_features_in"}


def _n_features_consistent(v: Mapping[str, Any]) -> str | None:
    """``n_features_in_`` is 1 or 2 for binary scores, ``n_classes_`` otherwise."""
    if "n_features_in_" not in v:
        return None
    n, k = v["n_features_in_"], v["n_classes_"]
    if n == k or (k == 2 and n == 1):
        return None
    allowed = "1 or 2 (binary scores)" if k == 2 else f"{k} (field 'n_classes_')"
    return f"field 'n_features_in_' must be {allowed}; got {n}"


class _Persistence(Parameters):
    """The declared schema and the JSON files of :class:`~calipers.recalibration.base.Recalibrator`.

    A mixin: ``schema`` (empty here: :func:`~calipers.recalibration.base.register`
    refuses a class that declares none) is checked by ``_check_params`` and
    ``_check_state``; ``to_json`` / ``from_json`` / ``save`` / ``load`` write and
    read the files. It reads what the recalibrator declares: once fitted,
    ``n_classes_`` and the column labels ``_classes`` and ``_n_features_in``.
    """

    schema: ClassVar[Schema] = Schema()
    n_classes_: int
    _classes: np.ndarray | None
    _n_features_in: int | None

    if TYPE_CHECKING:

        def _default_n_features(self) -> int: ...

    # ------------------------------------------------------------------ schema

    @classmethod
    def _state_fields(cls) -> dict[str, Any]:
        """The declared fitted fields: ``COMMON_STATE`` and the method's own."""
        return {**COMMON_STATE, **cls.schema.state}

    def _check_params(self, where: str) -> dict[str, Any]:
        """The parameters, checked against ``schema.params`` (the message starts with ``where``)."""
        params = check_fields(
            self.schema.params, self.get_params(), where, "parameter", allow_extra=True
        )
        run_checks(self.schema.param_checks, params, where)
        return params

    def _check_state(self, where: str) -> None:
        """Check the fitted attributes against the declared schema (nothing is changed)."""
        params = self._check_params(where)
        values = {k: getattr(self, k) for k in self._state_fields() if hasattr(self, k)}
        state = check_fields(self._state_fields(), values, where, "field", params)
        run_checks(self.schema.state_checks, {**params, **state}, where)

    # ------------------------------------------------------------------ JSON

    def _state(self) -> dict[str, Any]:
        """The declared fitted fields the object has (all of them once fitted)."""
        return {k: getattr(self, k) for k in self._state_fields() if hasattr(self, k)}

    def _optional_state(self, where: str) -> dict[str, Any]:
        """The fields of ``OPTIONAL_STATE`` that differ from their default, checked."""
        values = {
            field: self.__dict__[attr]
            for field, attr in _PRIVATE_STATE.items()
            if self.__dict__.get(attr) is not None
        }
        if not values:
            return {}
        if "classes_" in values:  # as JSON values (np.str_ -> str, np.int64 -> int)
            values["classes_"] = np.asarray(values["classes_"]).tolist()
        k = {"n_classes_": self.n_classes_}
        checked = check_fields(
            {f: OPTIONAL_STATE[f] for f in values}, values, where, "field", context=k
        )
        run_checks((_n_features_consistent,), {**k, **checked}, where)
        return values

    def to_json(self) -> str:
        """JSON text with the class, its parameters and its fitted state (no pickle).

        The document is checked against the method's schema first (a fitted
        state that breaks it, e.g. after editing an attribute, raises) and is
        written in format :data:`calipers.recalibration._schema.FORMAT`; an
        unfitted recalibrator is written with an empty state.

        Examples
        --------
        >>> import json
        >>> import calipers as cp
        >>> doc = json.loads(cp.TemperatureScaling().to_json())
        >>> doc["calipers_recalibrator"], doc["format"], doc["state"]
        ('TemperatureScaling', 2, {})
        """
        name = type(self).__name__
        if type(self).schema is _Persistence.schema:
            raise CalibrationInputError(
                f"{name} cannot be saved: it declares no schema of its parameters and fitted "
                "state (the class attribute 'schema'; see calipers.recalibration.base.register)"
            )
        optional: dict[str, Any] = {}
        if hasattr(self, "n_classes_"):
            self._check_state(f"{name} cannot be saved")
            optional = self._optional_state(f"{name} cannot be saved")
        else:
            self._check_params(f"{name} cannot be saved")
        return json.dumps(
            {
                "calipers_recalibrator": name,
                "format": FORMAT,
                "params": {k: _encode(v) for k, v in self.get_params().items()},
                "state": {
                    **{k: _encode(v) for k, v in self._state().items()},
                    **{k: _encode(v) for k, v in optional.items()},
                },
            },
            allow_nan=False,
        )

    @classmethod
    def _from_document(cls, doc: dict[str, Any]) -> Recalibrator:
        """The recalibrator a parsed document of this class describes, every field checked."""
        name = cls.__name__
        where = f"{name} file"
        fmt = check_document(doc, where, READABLE_FORMATS)
        # a parameter added later, absent from an older document, means its old behaviour
        params_doc = {**cls.schema.legacy_params, **doc["params"]}
        params = check_fields(cls.schema.params, params_doc, where, "parameter")
        run_checks(cls.schema.param_checks, params, where)
        state_doc: dict[str, Any] = doc["state"]
        if fmt == 1:
            state_doc = _upgrade_format_1(cls, state_doc, params, where)
        obj: Any = cls(**params)
        optional_doc = {k: state_doc[k] for k in OPTIONAL_STATE if k in state_doc}
        state_doc = {k: v for k, v in state_doc.items() if k not in OPTIONAL_STATE}
        if optional_doc and not state_doc:
            raise CalibrationInputError(
                f"{where}: field {next(iter(optional_doc))!r} belongs to a fitted recalibrator, "
                "but the state holds no fit"
            )
        if state_doc:  # an empty state is an unfitted recalibrator
            state = check_fields(cls._state_fields(), state_doc, where, "field", params)
            run_checks(cls.schema.state_checks, {**params, **state}, where)
            optional = check_fields(
                {k: OPTIONAL_STATE[k] for k in optional_doc}, optional_doc, where, "field", state
            )
            run_checks((_n_features_consistent,), {**state, **optional}, where)
            for key, value in state.items():
                setattr(obj, key, value)
            if "classes_" in optional and not _is_default_classes(optional["classes_"]):
                obj._classes = optional["classes_"]
            if (
                optional.get("n_features_in_", obj._default_n_features())
                != obj._default_n_features()
            ):
                obj._n_features_in = optional["n_features_in_"]
        return obj

    @classmethod
    def from_json(cls, text: str | bytes, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> Recalibrator:
        """Rebuild a recalibrator written by :meth:`to_json` (see :func:`load_recalibrator`).

        The document must hold this class (or a subclass).

        Examples
        --------
        >>> import calipers as cp
        >>> text = cp.HistogramBinning(n_bins=10).to_json()
        >>> cp.HistogramBinning.from_json(text).n_bins
        10
        >>> cp.TemperatureScaling.from_json(text)
        Traceback (most recent call last):
        ...
        calipers.validation.CalibrationInputError: the document holds a HistogramBinning, not a TemperatureScaling
        """
        return load_recalibrator(
            text, expected=cast("type[Recalibrator]", cls), max_bytes=max_bytes
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path`` atomically (:func:`calipers.io.output.write_atomic`).

        Examples
        --------
        >>> import os, tempfile
        >>> import calipers as cp
        >>> path = os.path.join(tempfile.mkdtemp(), "hb.json")
        >>> cp.HistogramBinning(n_bins=10).save(path)
        >>> cp.HistogramBinning.load(path).n_bins
        10
        """
        from ..io.output import write_atomic

        write_atomic(os.fspath(path), self.to_json())

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, max_bytes: int = MAX_DOCUMENT_BYTES
    ) -> Recalibrator:
        """Read a recalibrator saved with :meth:`save` (checked as :func:`load_recalibrator`).

        A file larger than ``max_bytes`` is refused before it is read.

        Examples
        --------
        >>> import os, tempfile
        >>> import calipers as cp
        >>> path = os.path.join(tempfile.mkdtemp(), "ts.json")
        >>> cp.TemperatureScaling(t_max=50.0).save(path)
        >>> cp.TemperatureScaling.load(path).t_max
        50.0
        >>> cp.TemperatureScaling.load(path, max_bytes=10)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calipers.validation.CalibrationInputError: the recalibrator document is ... bytes, more than the limit of 10 bytes ...
        """
        return load_recalibrator(
            read_document_file(path, max_bytes),
            expected=cast("type[Recalibrator]", cls),
            max_bytes=max_bytes,
        )


def read_document_file(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a recalibrator file; a file larger than ``max_bytes`` is refused unread.

    At most ``max_bytes + 1`` bytes are read (a file that grows while it is read
    is then refused by :func:`~calipers.recalibration._schema.parse_document`).
    """
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise CalibrationInputError(_too_large(size, max_bytes))
        return f.read(max_bytes + 1)


def _encode(v: Any) -> Any:
    """A JSON value for a parameter or a fitted field (arrays: the documented encoding)."""
    if isinstance(v, np.ndarray):
        return {
            "ndarray": np.asarray(v, dtype=np.float64).tolist(),
            "dtype": "float64",
            "shape": list(v.shape),
        }
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if math.isfinite(f) else {"float": repr(f)}
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _encode(x) for k, x in v.items()}
    if v is None or isinstance(v, (int, str)):
        return v
    raise CalibrationInputError(f"cannot store a {type(v).__name__} in JSON: {v!r}")


def _upgrade_format_1(
    cls: type[_Persistence], state: dict[str, Any], params: dict[str, Any], where: str
) -> dict[str, Any]:
    """The fitted state of a format-1 document in the form of format 2.

    Format 1 (calipers 0.1 and the 0.2 development versions) stored the kind of
    scores as ``logits_`` (0.1) and repeated every parameter whose name ends in
    ``_`` (``MatrixScaling.lambda_``) among the fitted fields; the repetition
    must agree with the parameter.
    """
    state = dict(state)
    if "logits_" in state:
        if "input_kind_" in state or "input_detected_" in state:
            raise CalibrationInputError(
                f"{where}: field 'logits_' (calipers 0.1) cannot stand beside 'input_kind_'"
            )
        flag = check_fields({"logits_": Flag()}, {"logits_": state.pop("logits_")}, where, "field")
        state["input_kind_"] = "logits" if flag["logits_"] else "probs"
        state["input_detected_"] = False
    for name, f in cls.schema.params.items():
        if name.endswith("_") and name in state:
            again = check_fields({name: f}, {name: state.pop(name)}, where, "field")[name]
            if again != params[name]:
                raise CalibrationInputError(
                    f"{where}: field {name!r} ({again!r}) contradicts parameter {name!r} "
                    f"({params[name]!r})"
                )
    return state


def load_recalibrator(
    text: str | bytes,
    *,
    expected: type[Recalibrator] | None = None,
    max_bytes: int = MAX_DOCUMENT_BYTES,
) -> Recalibrator:
    """Rebuild any registered recalibrator from the JSON of :meth:`Recalibrator.to_json`.

    Nothing is unpickled or evaluated. The document is read within limits
    (at most ``max_bytes`` bytes, :data:`MAX_DOCUMENT_BYTES` = 64 MiB by
    default; nesting at most :data:`MAX_DEPTH` = 32 levels, checked before
    parsing; no duplicate keys; no ``NaN``/``Infinity``), and must be a
    complete, consistent description of one method: its ``format`` one that
    this version reads (2, the one written now, or 1, written by calipers 0.1
    and the 0.2 development versions), every parameter and, for a fitted
    recalibrator, every fitted field present, of the declared type, shape
    (tied to ``n_classes_`` and the parameters) and range (finite; temperatures
    > 0; weights on the simplex; monotone maps non-decreasing; ...), and no
    other key. Anything else raises :class:`CalibrationInputError` naming the
    field, so a file loads as the recalibrator it describes or not at all.
    Documents of the regression recalibrators
    (:class:`~calipers.recalibration.regression.base.RegressionRecalibrator`:
    variance scaling, variance Platt scaling, quantile recalibration) load too,
    as instances of their class.

    Parameters
    ----------
    text : str or bytes
        The JSON document.
    expected : type, optional
        Require this class (or a subclass); used by ``from_json`` and ``load``.
    max_bytes : int, default MAX_DOCUMENT_BYTES
        Largest document read.

    Returns
    -------
    Recalibrator

    Raises
    ------
    CalibrationInputError
        Not a valid document of a registered method.

    Examples
    --------
    >>> import numpy as np
    >>> import calipers as cp
    >>> z = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.5, 0.0]])
    >>> ts = cp.TemperatureScaling().fit(z, [0, 1, 1, 0], logits=True)
    >>> back = cp.load_recalibrator(ts.to_json())
    >>> bool(np.allclose(back.predict_proba(z, logits=True), ts.predict_proba(z, logits=True)))
    True
    >>> cp.load_recalibrator(ts.to_json().replace(str(ts.temperature_), "-1"))
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: TemperatureScaling file: field 'temperature_' must be a finite number > 0; got -1
    """
    doc = parse_document(text, max_bytes)
    if not isinstance(doc, dict) or "calipers_recalibrator" not in doc:
        raise CalibrationInputError(
            "not a calipers recalibrator JSON document (no 'calipers_recalibrator' key)"
        )
    name = doc["calipers_recalibrator"]
    cls: Any = _registry.lookup(name)
    if cls is None:
        raise CalibrationInputError(
            f"unknown recalibrator {_show(name)}; known: {_registry.names()}"
        )
    # the contract class itself (Recalibrator, which mixes in _Persistence) reads every document
    contract = expected is not None and _Persistence in expected.__bases__
    if expected is not None and not contract and not issubclass(cls, expected):
        raise CalibrationInputError(f"the document holds a {name}, not a {expected.__name__}")
    loaded: Any = cls._from_document(doc)  # the class reads its own documents
    return loaded
