"""Constructor parameters of a recalibrator, read as scikit-learn reads them.

The hyper-parameters of every recalibration method (classification and
regression) are its constructor arguments, stored under their own names:
:class:`Parameters` lists them from the signature (``get_params``), sets them
(``set_params``, unknown names refused) and shows them (``repr``).
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Any, TypeVar

from ..validation import CalibrationInputError

__all__ = ["Parameters", "user_stacklevel"]

#: The folder of the calipers package: frames in files under it are the library's.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning name the user's line, not the library's.

    Called by the function that warns, it counts the frames from that function
    up to the first one whose file lies outside the calipers package (the
    user's call of ``fit``, whatever chain of calipers functions led there), so
    that ``warnings.warn(message, category, stacklevel=user_stacklevel())``
    reports the user's file and line.

    Examples
    --------
    >>> import warnings
    >>> from calipers.recalibration._params import user_stacklevel
    >>> def warn_here() -> None:  # a function outside the calipers package
    ...     warnings.warn("look", UserWarning, stacklevel=user_stacklevel())
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     warn_here()
    >>> seen[0].filename.startswith("<doctest")  # the line above, not calipers
    True
    """
    frame = sys._getframe(1)  # the function that warns
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


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
