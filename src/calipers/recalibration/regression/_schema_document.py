"""What every regression-side recalibrator shares: its schema-checked state and JSON file.

:class:`SchemaDocument` holds the fitted-state checks (a recalibrator declares its
parameters and fitted fields in a :class:`~calipers.recalibration._schema.Schema`) and
the JSON round trip (``to_json``, ``from_json``, ``save``, ``load``) of both regression
contracts: :class:`~calipers.recalibration.regression.RegressionRecalibrator` (predictive
distributions) and :class:`~calipers.recalibration.regression.ForecastRecalibrator`
(point forecasts and intervals). Files never hold a pickle.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from ...validation import CalibrationInputError
from .. import _registry
from .._params import Parameters
from .._persistence import _encode, read_document_file
from .._schema import (
    FORMAT,
    MAX_DOCUMENT_BYTES,
    Schema,
    _show,
    check_document,
    check_fields,
    parse_document,
    run_checks,
)
from ..base import _not_fitted

__all__ = ["SchemaDocument"]

_T = TypeVar("_T", bound="SchemaDocument")


class SchemaDocument(Parameters):
    """Fitted-state checks and JSON files of the regression recalibrators (a mixin).

    Subclasses declare ``schema`` (their parameters and fitted fields) and
    ``_fit_call`` (what the message of an unfitted recalibrator tells to call).

    Examples
    --------
    >>> from calipers.recalibration import VarianceScaling
    >>> from calipers.recalibration.regression import SplitConformal
    >>> from calipers.recalibration.regression._schema_document import SchemaDocument
    >>> issubclass(VarianceScaling, SchemaDocument), issubclass(SplitConformal, SchemaDocument)
    (True, True)
    """

    schema: ClassVar[Schema] = Schema()
    #: What ``fit`` needs, for the message of an unfitted recalibrator.
    _fit_call: ClassVar[str] = "fit(...)"

    # ------------------------------------------------------------------ state

    def _is_fitted(self) -> bool:
        return all(hasattr(self, k) for k in self.schema.state)

    def _ready(self) -> None:
        """Raise NotFittedError before ``fit``; check the fitted state against the schema."""
        name = type(self).__name__
        if not self._is_fitted():
            raise _not_fitted(f"this {name} is not fitted yet; call {self._fit_call} first")
        self._check_state(f"{name} has an invalid fitted state")

    def _check_params(self, where: str) -> dict[str, Any]:
        params = check_fields(
            self.schema.params, self.get_params(), where, "parameter", allow_extra=True
        )
        run_checks(self.schema.param_checks, params, where)
        return params

    def _check_state(self, where: str) -> None:
        params = self._check_params(where)
        values = {k: getattr(self, k) for k in self.schema.state if hasattr(self, k)}
        state = check_fields(self.schema.state, values, where, "field", params)
        run_checks(self.schema.state_checks, {**params, **state}, where)

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> str:
        """JSON text with the class, its parameters and its fitted state (no pickle).

        Checked against the method's schema first; an unfitted recalibrator is
        written with an empty state.

        Examples
        --------
        >>> import json
        >>> from calipers.recalibration import VarianceScaling
        >>> doc = json.loads(VarianceScaling().fit([0.0, 0.0], variance=[1.0, 1.0], targets=[1.0, 3.0]).to_json())
        >>> doc["calipers_recalibrator"], doc["format"], doc["state"]
        ('VarianceScaling', 2, {'scale_': 5.0})
        """
        name = type(self).__name__
        if type(self).schema is SchemaDocument.schema:
            raise CalibrationInputError(
                f"{name} cannot be saved: it declares no schema of its parameters and fitted state"
            )
        fitted = self._is_fitted()
        if fitted:
            self._check_state(f"{name} cannot be saved")
        else:
            self._check_params(f"{name} cannot be saved")
        state = {k: getattr(self, k) for k in self.schema.state} if fitted else {}
        return json.dumps(
            {
                "calipers_recalibrator": name,
                "format": FORMAT,
                "params": {k: _encode(v) for k, v in self.get_params().items()},
                "state": {k: _encode(v) for k, v in state.items()},
            },
            allow_nan=False,
        )

    @classmethod
    def _from_document(cls: type[_T], doc: dict[str, Any]) -> _T:
        """The recalibrator a parsed document of this class describes, every field checked."""
        where = f"{cls.__name__} file"
        check_document(doc, where, (FORMAT,))
        params = check_fields(cls.schema.params, doc["params"], where, "parameter")
        run_checks(cls.schema.param_checks, params, where)
        obj = cls(**params)
        state_doc: Mapping[str, Any] = doc["state"]
        if state_doc:  # an empty state is an unfitted recalibrator
            state = check_fields(cls.schema.state, state_doc, where, "field", params)
            run_checks(cls.schema.state_checks, {**params, **state}, where)
            for key, value in state.items():
                setattr(obj, key, value)
        return obj

    @classmethod
    def _read_document(cls: type[_T], doc: Any) -> _T:
        """The recalibrator of this class (or a subclass) a parsed document describes."""
        if not isinstance(doc, dict) or "calipers_recalibrator" not in doc:
            raise CalibrationInputError(
                "not a calipers recalibrator JSON document (no 'calipers_recalibrator' key)"
            )
        name = doc["calipers_recalibrator"]
        found = _registry.lookup(name)
        if found is None:
            raise CalibrationInputError(
                f"unknown recalibrator {_show(name)}; known: {_registry.names()}"
            )
        if not issubclass(found, cls):
            raise CalibrationInputError(f"the document holds a {name}, not a {cls.__name__}")
        out: _T = found._from_document(doc)
        return out

    @classmethod
    def from_json(cls: type[_T], text: str | bytes, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> _T:
        """Rebuild a recalibrator written by :meth:`to_json`; the document must hold this class.

        Every parameter and fitted field is checked against the declared
        schema; anything else raises
        :class:`~calipers.validation.CalibrationInputError` naming the field.

        Examples
        --------
        >>> from calipers.recalibration import VarianceScaling
        >>> rc = VarianceScaling().fit([0.0, 0.0], variance=[1.0, 1.0], targets=[1.0, 3.0])
        >>> VarianceScaling.from_json(rc.to_json()).scale_
        5.0
        >>> VarianceScaling.from_json(rc.to_json().replace("5.0", "-5.0"))
        Traceback (most recent call last):
        ...
        calipers.validation.CalibrationInputError: VarianceScaling file: field 'scale_' must be a finite number > 0; got -5.0
        """
        return cls._read_document(parse_document(text, max_bytes))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path`` atomically (:func:`calipers.io.output.write_atomic`)."""
        from ...io.output import write_atomic

        write_atomic(os.fspath(path), self.to_json())

    @classmethod
    def load(
        cls: type[_T], path: str | os.PathLike[str], *, max_bytes: int = MAX_DOCUMENT_BYTES
    ) -> _T:
        """Read a recalibrator saved with :meth:`save` (checked as :meth:`from_json`).

        Examples
        --------
        >>> import os, tempfile
        >>> from calipers.recalibration.regression import SplitConformal
        >>> path = os.path.join(tempfile.mkdtemp(), "sc.json")
        >>> SplitConformal().fit([0.0, 0.0, 0.0], [1.0, -2.0, 3.0]).save(path)
        >>> SplitConformal.load(path).scores_
        array([1., 2., 3.])
        """
        return cls.from_json(read_document_file(path, max_bytes), max_bytes=max_bytes)
