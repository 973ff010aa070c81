"""Shared parameter text for docstrings: write a parameter's description once.

Most public functions of calipers take the same few parameters (``probs``,
``labels``, ``sample_weight``, ``logits``, ``validate``, ``classes``, ``lens``,
and the Gaussian ``mean``, ``variance``, ``std``, ``targets`` of the
regression functions). Their numpydoc entries live here, once, in
:data:`PARAMETERS`; a docstring names an entry by a placeholder standing alone
on its line, and :func:`fill_doc` replaces it with the entry at the
placeholder's indentation when the module is imported::

    @fill_doc
    def metric(probs, labels, *, sample_weight=None):
        \"\"\"One line.

        Parameters
        ----------
        {probs}
        {labels}
        {sample_weight}
            Lines written under a placeholder, at the description's
            indentation, continue the shared description.
        \"\"\"

The idea is SciPy's ``scipy._lib.doccer`` and matplotlib's
``_docstring.interpd``, with three differences: a placeholder is a whole line
(docstrings are full of braces -- ``{"auto", "binary"}``, ``e_{y_i}`` -- so
``str.format`` is not used and no brace needs escaping), an unknown placeholder
raises at import naming the function, and the decorator returns its argument
unchanged (typed ``Callable[[F], F]``), so type checkers still see each
function's own signature.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar, overload

__all__ = ["PARAMETERS", "fill_doc", "substitute"]

_F = TypeVar("_F", bound=Callable[..., Any])

# A placeholder: ``{name}`` alone on its line, only whitespace around it.
_PLACEHOLDER = re.compile(r"^(?P<indent>[ \t]*)\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}[ \t]*$", re.M)


def _entries(**texts: str) -> Mapping[str, str]:
    # stored without indentation: the first line is ``name : type``, the
    # description is indented by four spaces (numpydoc's layout)
    return MappingProxyType({k: v.strip("\n") for k, v in texts.items()})


#: The canonical numpydoc entry of each shared parameter, ``name -> text``.
PARAMETERS: Mapping[str, str] = _entries(
    # ---- classification: the input every metric reads (check_predictions)
    probs="""
probs : array-like of shape (n, k) or (n,)
    Probabilities, one column per class (1-D: P(y = 1) of a binary problem),
    or logits with ``logits=True``. NumPy, lists or PyTorch tensors.""",
    labels="""
labels : array-like of shape (n,)
    True classes: column indices ``0 .. k-1`` (0/1 for 1-D ``probs``), or
    members of ``classes``.""",
    lens="""
lens : {"auto", "top_label", "binary"}, default "auto"
    ``"auto"``: for 1-D ``probs`` (P(y = 1)) the positive-class lens,
    P(y = 1) scored against y (scikit-learn ``calibration_curve``,
    torchmetrics ``binary_calibration_error``, relplot, netcal); for
    ``(n, k)`` input the top-label lens, ``max_k p_k`` against
    ``1{argmax = y}``. ``"top_label"`` forces the confidence reading
    (``max(p, 1 - p)`` for 1-D input); ``"binary"`` needs two classes.""",
    sample_weight="""
sample_weight : array-like of shape (n,), optional
    Non-negative row weights with a positive total; a weight of 2 counts
    the row twice (integer weights give the result on repeated rows).
    Default None: every row weighs 1.""",
    logits="""
logits : bool, default False
    ``probs`` holds logits: probabilities are taken by a numerically stable
    softmax (sigmoid for 1-D input).""",
    validate="""
validate : bool, default True
    ``False`` skips the value checks on ``probs`` for trusted inputs (shapes
    and labels are still checked).""",
    classes="""
classes : array-like or fitted classifier, optional
    The class of each column of ``probs``, in order (1-D ``probs``:
    ``[negative, positive]``), or a fitted scikit-learn classifier (its
    ``classes_``); ``labels`` are then read as these classes (strings, any
    integers). Default: labels are column indices.""",
    # ---- Gaussian regression: the input every regression function reads (check_gaussian)
    mean="""
mean : array-like of shape (n,) or GaussianPredictions
    Predicted means (target units).""",
    variance="""
variance : array-like of shape (n,), optional
    Predicted variances (> 0), keyword-only. Exactly one of ``variance`` and ``std``.""",
    std="""
std : array-like of shape (n,), optional
    Predicted standard deviations (> 0), keyword-only.""",
    targets="""
targets : array-like of shape (n,)
    Observed targets.""",
)


def _indent(text: str, indent: str) -> str:
    return "\n".join(indent + line if line else line for line in text.split("\n"))


def substitute(doc: str, texts: Mapping[str, str], where: str = "docstring") -> str:
    """Replace each placeholder line of ``doc`` by its text, at the placeholder's indentation.

    Parameters
    ----------
    doc : str
        A docstring. A placeholder is ``{name}`` alone on its line (spaces
        around it allowed); braces anywhere else are left alone.
    texts : mapping of str to str
        ``name -> text``; every line of a text is indented like its
        placeholder (the text's own relative indentation is kept).
    where : str, default "docstring"
        Names the docstring in the error message (a function's qualified name).

    Returns
    -------
    str
        ``doc`` with every placeholder replaced.

    Raises
    ------
    ValueError
        A placeholder that ``texts`` does not hold, or a name of ``texts``
        written inside a line (where it would be left in the page).

    Examples
    --------
    >>> substitute("Parameters\\n    {x}\\n", {"x": "x : int\\n    Count."})
    'Parameters\\n    x : int\\n        Count.\\n'
    """
    unknown = sorted({m["name"] for m in _PLACEHOLDER.finditer(doc)} - set(texts))
    if unknown:
        raise ValueError(
            f"{where}: unknown docstring placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; "
            f"known: {', '.join(sorted(texts))}"
        )
    out = _PLACEHOLDER.sub(lambda m: _indent(texts[m["name"]], m["indent"]), doc)
    left = sorted(
        {m["name"] for m in _PLACEHOLDER.finditer(out)} | {n for n in texts if "{" + n + "}" in out}
    )
    if left:
        raise ValueError(
            f"{where}: placeholder(s) {', '.join('{' + n + '}' for n in left)} left in the docstring; "
            "a placeholder must stand alone on its line"
        )
    return out


@overload
def fill_doc(obj: _F, /) -> _F: ...


@overload
def fill_doc(obj: None = None, /, **extra: str) -> Callable[[_F], _F]: ...


def fill_doc(obj: Any = None, /, **extra: str) -> Any:
    """Decorator: fill the shared parameter entries into a function's or class's docstring.

    ``@fill_doc`` uses :data:`PARAMETERS`; ``@fill_doc(name=text, ...)`` adds
    (or overrides, for this one docstring) entries, written like those of
    :data:`PARAMETERS` (``name : type`` then the description indented by
    four spaces). The object is returned itself, its docstring replaced, so
    its signature stays visible to type checkers. Under ``python -OO``
    (no docstrings) nothing is done. A wrapper made by :func:`functools.wraps`
    is filled together with the function it wraps.

    Raises
    ------
    ValueError
        At import, naming the function, for a placeholder no entry matches.

    Examples
    --------
    >>> @fill_doc
    ... def f(sample_weight=None):
    ...     '''Parameters
    ...     ----------
    ...     {sample_weight}
    ...     '''
    >>> print(f.__doc__.splitlines()[2].strip())
    sample_weight : array-like of shape (n,), optional
    """
    texts: Mapping[str, str] = (
        {**PARAMETERS, **{k: v.strip("\n") for k, v in extra.items()}} if extra else PARAMETERS
    )

    def decorate(f: _F) -> _F:
        # a wrapper made by functools.wraps is filled with the function it wraps
        # (``__wrapped__``), so that both show the same text
        target: Any = f
        for _ in range(16):
            if target is None:
                break
            if isinstance(getattr(target, "__doc__", None), str):
                where = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"
                target.__doc__ = substitute(target.__doc__, texts, where)
            target = getattr(target, "__wrapped__", None)
        return f

    if obj is not None:
        return decorate(obj)
    return decorate
