"""Make every "[source]" link of the API reference land on its ``def``/``class`` line.

``sphinx.ext.viewcode`` writes the highlighted source of each module and links
each documented object to a block of it. Left to itself it goes wrong in two
ways on calipers:

* It finds an object's lines with Sphinx's module analyzer, whose range starts
  at the first decorator: the link of ``calipers.ece`` (``@_doc``), of every
  recalibrator (``@register``), of every dataclass (``@dataclass(frozen=True)``)
  and of every ``@classmethod`` landed on a decorator line, not on the object's
  ``def``/``class`` line.
* It looks an object up in the module its ``__module__`` names. The public
  names of ``calipers.io`` keep ``calipers.io`` as their module (as before that
  module became a package) although they are defined in its submodules, so they
  got no link at all (and :func:`inspect.getsourcelines` finds the wrong file
  for the classes among them).

This extension answers viewcode's two questions itself: ``viewcode-follow-imported``
gives the module whose source *defines* the object (from the code objects of the
function or of the class's own methods, not from ``__module__``), and
``viewcode-find-source`` gives each module's definitions with the line of their
``def``/``class`` keyword (Python's :mod:`ast`: ``lineno`` of a decorated
definition is that line, the decorators are listed apart).

The functions need no Sphinx, so the tests use them directly
(``tests/test_docs_site.py``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

__all__ = ["definitions", "defining_module", "resolve", "setup"]

#: (kind, first line, last line), 1-based, as viewcode's tags; first line = the def/class line
Tag = tuple[str, int, int]


def definitions(source: str) -> dict[str, Tag]:
    """Every class, function and method of a module's source, by qualified name.

    Top-level functions and classes and the definitions inside classes
    (``"Class.method"``, ``"Outer.Inner"``), not those inside functions. The first
    line is the line of the ``def``/``class`` keyword, after any decorator. A name
    defined twice (``typing.overload`` stubs and the implementation) keeps its
    last definition, the one that runs.
    """
    tags: dict[str, Tag] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                end = node.end_lineno or node.lineno
                tags[prefix + node.name] = ("def", node.lineno, end)
            elif isinstance(node, ast.ClassDef):
                end = node.end_lineno or node.lineno
                tags[prefix + node.name] = ("class", node.lineno, end)
                visit(node.body, prefix + node.name + ".")
            elif isinstance(node, (ast.If, ast.Try)):
                # definitions under ``if TYPE_CHECKING:`` / ``try: ... except ImportError:``
                for block in (
                    node.body,
                    getattr(node, "orelse", []),
                    getattr(node, "finalbody", []),
                ):
                    visit(block, prefix)

    visit(ast.parse(source).body, "")
    return tags


def _module_source(modname: str) -> str | None:
    try:
        spec = importlib.util.find_spec(modname)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin).read_text(encoding="utf-8")


def resolve(modname: str, fullname: str) -> Any:
    """The object ``modname.fullname`` (``fullname`` may be ``"Class.method"``)."""
    obj: Any = importlib.import_module(modname)
    for part in fullname.split("."):
        obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else getattr(obj, part)
    return obj


def _function(obj: Any) -> Any:
    """The plain function behind a method, property, classmethod or decorated wrapper."""
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    return inspect.unwrap(obj) if callable(obj) else obj


def _module_of_file(filename: str) -> str | None:
    path = Path(filename).resolve()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve() == path:
            return name
    return None


def _class_files(cls: type) -> set[str]:
    """The files of the functions a class defines itself (generated ones excluded)."""
    files = set()
    for member in vars(cls).values():
        code = getattr(_function(member), "__code__", None)
        if code is not None and not code.co_filename.startswith("<"):
            files.add(code.co_filename)
    return files


def defining_module(modname: str, fullname: str) -> str | None:
    """The module whose source defines ``modname.fullname``, or None when unknown.

    Read from the code objects (a function's, or the methods' of the object's
    class), so a ``__module__`` changed for display does not mislead it. For a
    class without methods of its own, the loaded modules of the same package
    are searched for its ``class`` statement.
    """
    try:
        top = resolve(modname, fullname.split(".")[0])
    except (ImportError, AttributeError):
        return None
    target = _function(top)
    code = getattr(target, "__code__", None)
    if code is not None and not code.co_filename.startswith("<"):
        return _module_of_file(code.co_filename)
    if inspect.isclass(top):
        package = (getattr(top, "__module__", None) or modname).split(".")[0]
        # the class's own methods, less those a factory wrote (namedtuple's, in collections)
        owners = {_module_of_file(f) for f in _class_files(top)}
        owners = {m for m in owners if m and (m == package or m.startswith(package + "."))}
        if len(owners) == 1:
            return owners.pop()
        found = [
            name
            for name in sorted(sys.modules)
            if (name == package or name.startswith(package + "."))
            and _defines(name, top.__qualname__)
        ]
        if len(found) == 1:
            return found[0]
        declared = getattr(top, "__module__", None)
        return declared if declared in found else None
    return None


def _defines(modname: str, qualname: str) -> bool:
    source = _module_source(modname)
    return source is not None and definitions(source).get(qualname, ("",))[0] == "class"


# --------------------------------------------------------------------------- Sphinx


def _follow_imported(app: Any, modname: str, attribute: str) -> str | None:
    if not modname.split(".")[0] == "calipers":
        return None
    return defining_module(modname, attribute)


#: each module's source and definitions, read once per build (as Sphinx's analyzer caches
#: them): viewcode forgets the objects it linked in a module whose source reads differently
_SOURCES: dict[str, tuple[str, dict[str, Tag]]] = {}


def _find_source(app: Any, modname: str) -> tuple[str, dict[str, Tag]] | None:
    if not modname.split(".")[0] == "calipers":
        return None
    if modname not in _SOURCES:
        source = _module_source(modname)
        if source is None:
            return None
        _SOURCES[modname] = (source, definitions(source))
    return _SOURCES[modname]


def setup(app: Any) -> dict[str, Any]:
    app.setup_extension("sphinx.ext.viewcode")
    app.connect("viewcode-follow-imported", _follow_imported)
    app.connect("viewcode-find-source", _find_source)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
