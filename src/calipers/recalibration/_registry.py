"""The one registry of recalibrators that load from JSON, by class name.

Every method that :func:`calipers.load_recalibrator` can rebuild is registered
here once, by :func:`~calipers.recalibration.base.register` (classification)
or :func:`~calipers.recalibration.regression.base.register_regression`
(Gaussian regression). Loading dispatches through the class itself: the
registered class's ``_from_document`` classmethod reads and checks the
document, so the loader needs to know no method and no family, and no module
of :mod:`calipers.recalibration` imports another to load it.

:class:`Family` is a live, read-only view of the registered subclasses of one
base class (what the command line lists as the classification or the
regression methods).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["Family", "add", "lookup", "names"]

_CLASSES: dict[str, type] = {}


def add(cls: type) -> None:
    """Register ``cls`` under its class name (a later class of the same name replaces it)."""
    _CLASSES[cls.__name__] = cls


def lookup(name: Any) -> type | None:
    """The registered class called ``name``, or ``None``."""
    return _CLASSES.get(name) if isinstance(name, str) else None


def names() -> list[str]:
    """Every registered class name, sorted."""
    return sorted(_CLASSES)


class Family(Mapping[str, Any]):
    """Read-only view: the registered classes that subclass ``base``, by name."""

    def __init__(self, base: type) -> None:
        self._base = base

    def _members(self) -> dict[str, type]:
        return {k: c for k, c in _CLASSES.items() if issubclass(c, self._base)}

    def __getitem__(self, name: str) -> Any:
        return self._members()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._members())

    def __len__(self) -> int:
        return len(self._members())
