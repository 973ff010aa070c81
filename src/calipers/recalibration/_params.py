"""Constructor parameters of a recalibrator, read as scikit-learn reads them.

The hyper-parameters of every recalibration method (classification and
regression) are its constructor arguments, stored under their own names:
:class:`Parameters` lists them from the signature (``get_params``), sets them
(``set_params``, unknown names refused) and shows them (``repr``).
"""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

from ..validation import CalibrationInputError

__all__ = ["Parameters"]

_P = TypeVar("_P", bound="Parameters")


class Parameters:
    """``get_params`` / ``set_params`` / ``repr`` from the constructor signature.

    Examples
    --------
    >>> from calipers.recalibration._params import Parameters
    >>> class Scale(Parameters):
    ...     def __init__(self, factor: float = 1.0) -> None:
    ...         self.factor = factor
    >>> Scale(2.0).set_params(factor=3.0)
    Scale(factor=3.0)
    >>> Scale().set_params(size=1)
    Traceback (most recent call last):
    ...
    calipers.validation.CalibrationInputError: Scale has no parameter 'size'; it has ['factor']
    """

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments, as scikit-learn's ``get_params``."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self: _P, **params: Any) -> _P:
        """Set constructor arguments (unknown names raise); returns ``self``."""
        names = set(self._param_names())
        for key, value in params.items():
            if key not in names:
                raise CalibrationInputError(
                    f"{type(self).__name__} has no parameter {key!r}; it has {sorted(names)}"
                )
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
