"""The shared parameter text of the docstrings (``calipers._docstrings``).

* the mechanism: placeholders are replaced at their indentation, lines under a
  placeholder continue its description, braces elsewhere are left alone, an
  unknown or inline placeholder raises at decoration time naming the function,
  the decorated object is returned itself;
* the public surface: no docstring of a public name keeps a placeholder, and the
  numpydoc sections still parse with every documented parameter in the signature;
* no drift: in the packages that use the shared text, every documented
  ``probs``, ``labels``, ``sample_weight``, ... entry *is* the shared text (plus,
  at most, lines of its own under it), unless it is listed in :data:`KEPT` with
  the reason it differs. A hand-written copy, drifted or not, fails;
* the shared ``sample_weight`` text says "a weight of 2 counts the row twice":
  every function that carries it is checked against the rows repeated.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import re
import textwrap
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from calipers._docstrings import PARAMETERS, fill_doc, substitute

# ----------------------------------------------------------------- the mechanism


def test_placeholder_is_replaced_at_its_indentation() -> None:
    texts = {"alpha": "alpha : float\n    First line.\n\n    Second paragraph."}
    doc = (
        "Summary.\n\n    Parameters\n    ----------\n    {alpha}\n    beta : int\n        {alpha}\n"
    )
    got = substitute(doc, texts)
    assert got == (
        "Summary.\n\n    Parameters\n    ----------\n"
        "    alpha : float\n        First line.\n\n        Second paragraph.\n"
        "    beta : int\n"
        "        alpha : float\n            First line.\n\n            Second paragraph.\n"
    )
    # a blank line of the text stays empty (no trailing spaces for the docs build)
    assert not any(line != line.rstrip() for line in got.splitlines())


def test_fill_doc_on_a_function_keeps_the_object_and_its_signature() -> None:
    def metric(probs: Any, labels: Any, *, sample_weight: Any = None) -> float:
        """One line.

        Parameters
        ----------
        {probs}
        {labels}
        {sample_weight}
            Lines of its own continue the description.

        Returns
        -------
        float
        """
        return 0.0

    signature = inspect.signature(metric)
    out = fill_doc(metric)
    assert out is metric
    assert inspect.signature(out) == signature
    doc = inspect.cleandoc(out.__doc__ or "")
    expected = "\n".join(
        [PARAMETERS["probs"], PARAMETERS["labels"], PARAMETERS["sample_weight"]]
        + ["    Lines of its own continue the description."]
    )
    assert expected in doc
    assert "{" not in doc


def test_extra_entries_add_to_and_override_the_shared_ones() -> None:
    @fill_doc(k="k : int\n    Columns.", probs="probs : ndarray\n    Local text.")
    def f(probs: Any, k: int) -> None:
        """Parameters
        ----------
        {probs}
        {k}
        {validate}
        """

    doc = f.__doc__ or ""
    assert "        probs : ndarray\n            Local text." in doc
    assert "        k : int\n            Columns." in doc
    assert PARAMETERS["validate"].replace("\n", "\n        ") in doc
    # the override is local to ``f``
    assert PARAMETERS["probs"].startswith("probs : array-like")


def test_braces_that_are_not_placeholders_are_left_alone() -> None:
    doc = (
        "Parameters\n    ----------\n"
        '    lens : {"auto", "binary"}, default "auto"\n'
        "        ``h_ij = <e_{y_i} - p_i, e_{y_j} - p_j>`` and {0, 1} labels.\n"
    )
    assert substitute(doc, PARAMETERS) == doc


def test_unknown_placeholder_raises_naming_the_function() -> None:
    with pytest.raises(ValueError, match=r"test_docstrings\..*\.misspelt: .*\{sample_wieght\}"):

        @fill_doc
        def misspelt(sample_weight: Any = None) -> None:
            """Parameters
            ----------
            {sample_wieght}
            """


def test_a_placeholder_inside_a_line_raises() -> None:
    # it would be left in the page: a placeholder stands alone on its line
    with pytest.raises(ValueError, match=r"inline.*\{labels\}.*alone on its line"):

        @fill_doc
        def inline(labels: Any) -> None:
            """Parameters
            ----------
            labels : see {labels}
            """


def test_a_function_without_docstring_is_returned_untouched() -> None:
    # as under ``python -OO``
    def bare() -> None:
        pass

    assert fill_doc(bare) is bare
    assert bare.__doc__ is None


def test_a_wrapper_and_the_wrapped_function_are_both_filled() -> None:
    def inner(sample_weight: Any = None) -> None:
        """Parameters
        ----------
        {sample_weight}
        """

    @functools.wraps(inner)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        return inner(*args, **kwargs)

    assert fill_doc(wrapper) is wrapper
    assert wrapper.__doc__ == inner.__doc__
    assert "{" not in (inner.__doc__ or "")
    assert PARAMETERS["sample_weight"].split("\n")[0] in (inner.__doc__ or "")


def test_a_class_docstring_is_filled() -> None:
    @fill_doc
    class Thing:
        """Parameters
        ----------
        {classes}
        """

    assert (Thing.__doc__ or "").lstrip().startswith("Parameters")
    assert "classes : array-like or fitted classifier, optional" in (Thing.__doc__ or "")


# ------------------------------------------------------------ the public surface

#: The packages whose public names are walked; ``calipers`` itself comes first.
PACKAGES = (
    "calipers",
    "calipers.metrics",
    "calipers.inference",
    "calipers.regression",
    "calipers.estimators",
    "calipers.pipeline",
    "calipers.stream",
    "calipers.recalibration",
    "calipers.diagrams",
    "calipers.reports",
    "calipers.io",
    "calipers.datasets",
    "calipers.validation",
)

#: The packages that take their shared parameter text from ``calipers._docstrings``.
MIGRATED = (
    "calipers.metrics",
    "calipers.inference",
    "calipers.regression",
    "calipers.estimators",
    "calipers.pipeline",
)


def _public_objects() -> Iterator[tuple[str, Any]]:
    """``(qualified name, object)`` for every public function, class and method, once each."""
    seen: set[int] = set()
    for package in PACKAGES:
        mod = importlib.import_module(package)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            yield f"{obj.__module__}.{obj.__qualname__}", obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    func = getattr(member, "__func__", member)
                    if attr.startswith("_") or not inspect.isfunction(func) or id(func) in seen:
                        continue
                    seen.add(id(func))
                    yield f"{obj.__module__}.{func.__qualname__}", func


PUBLIC = sorted(_public_objects(), key=lambda kv: kv[0])
_LEFTOVER = re.compile(r"^[ \t]*\{[A-Za-z_]\w*\}[ \t]*$", re.M)


def test_the_public_surface_is_walked() -> None:
    names = {name for name, _ in PUBLIC}
    assert len(PUBLIC) > 150
    assert {"calipers.metrics.scores.brier", "calipers.regression.scores.crps_gaussian"} <= names


def test_no_public_docstring_keeps_a_placeholder() -> None:
    left = []
    for name, obj in PUBLIC:
        doc = obj.__doc__ or ""
        found = _LEFTOVER.findall(doc) + [p for p in PARAMETERS if "{" + p + "}" in doc]
        if found:
            left.append(f"{name}: {found}")
    assert not left, "placeholders left in public docstrings (missing @fill_doc?):\n" + "\n".join(
        left
    )


def test_numpydoc_sections_parse_and_name_the_signature() -> None:
    docscrape = pytest.importorskip("numpydoc.docscrape")
    problems = []
    for name, obj in PUBLIC:
        if not name.startswith(MIGRATED) or not obj.__doc__ or not inspect.isfunction(obj):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # numpydoc warns on unknown sections
            doc = docscrape.FunctionDoc(obj)
        accepted = set(inspect.signature(obj).parameters)
        accepted |= {"*" + p for p in accepted} | {"**" + p for p in accepted}
        for param in doc["Parameters"]:
            for one in (p.strip() for p in param.name.split(",")):
                if one and one not in accepted:
                    problems.append(f"{name}: documents {one!r}, not in its signature")
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------ no drift

#: ``(qualified name, parameter) -> reason``: entries of a shared parameter that
#: keep their own text in the migrated packages, because they differ in substance.
KEPT: dict[tuple[str, str], str] = {
    # the prediction input is also a validated Predictions, or a NumPy array only
    ("calipers.inference._confidence_interval.confidence_interval", "probs"): "also a Predictions",
    (
        "calipers.inference._confidence_interval.confidence_interval",
        "labels",
    ): "None for a Predictions",
    ("calipers.inference._verdict.verdict", "probs"): "also a Predictions",
    ("calipers.inference.sweeps.test_size_sweep", "probs"): "also a Predictions",
    ("calipers.inference.sweeps.test_size_sweep", "labels"): "None for a Predictions",
    ("calipers.inference.sweeps.parameter_sweep", "probs"): "also a Predictions",
    ("calipers.inference.sweeps.parameter_sweep", "labels"): "None for a Predictions",
    ("calipers.inference.calibration_world.fit_calibration_world", "probs"): "validated ndarray",
    ("calipers.inference.calibration_world.fit_calibration_world", "labels"): "validated ndarray",
    (
        "calipers.inference.calibration_world.CalibrationWorld",
        "probs",
    ): "an attribute, not an input",
    ("calipers.inference.calibration_world.CalibrationWorldFitter", "probs"): "validated ndarray",
    # two prediction arrays
    (
        "calipers.inference._confidence_interval.paired_confidence_interval",
        "logits",
    ): "one flag per array",
    ("calipers.inference._confidence_interval.paired_confidence_interval", "classes"): "two arrays",
    ("calipers.metrics.upper_bound.recalibration_improvement", "logits"): "two arrays",
    ("calipers.metrics.upper_bound.recalibration_improvement", "classes"): "two arrays",
    # weights that are not frequency weights, or not accepted
    ("calipers.inference.calibration_test.skce_test", "sample_weight"): "not supported (raises)",
    (
        "calipers.inference.calibration_world.fit_calibration_world",
        "sample_weight",
    ): "scaled to mean 1",
    (
        "calipers.inference.calibration_world.CalibrationWorldFitter",
        "sample_weight",
    ): "scaled to mean 1",
    ("calipers.metrics._proper_calibration_error.proper_calibration_error", "sample_weight"): (
        "kernel sums with the diagonal left out: a weight of 2 is not the row twice"
    ),
    ("calipers.metrics._reliability_table.reliability_table", "sample_weight"): (
        "the Wilson intervals use Kish's effective size: a weight of 2 is not the row twice"
    ),
    ("calipers.regression.pit.variance_calibration", "sample_weight"): (
        "bins hold equal numbers of rows: a weight of 2 is not the row twice"
    ),
    ("calipers.regression.decomposition.gaussian_score_decomposition", "sample_weight"): (
        "equal-mass groups split ties: a weight of 2 is not exactly the row twice"
    ),
    (
        "calipers.regression.inputs.GaussianPredictions",
        "sample_weight",
    ): "an attribute, not an input",
    (
        "calipers.regression.inputs.check_gaussian",
        "sample_weight",
    ): "the validator states its checks",
    # lenses with other choices than auto / top_label / binary
    ("calipers.metrics._calibration_error.calibration_error", "lens"): "every lens",
    ("calipers.metrics._reliability_table.reliability_table", "lens"): "every 1-D lens",
    (
        "calipers.metrics._debiased_calibration_error.debiased_calibration_error",
        "lens",
    ): "class-wise too",
    (
        "calipers.metrics._proper_calibration_error.proper_calibration_error",
        "lens",
    ): "canonical default",
    ("calipers.metrics.decomposition.murphy_decomposition", "lens"): "class-wise default",
    ("calipers.metrics.decomposition.corp_decomposition", "lens"): "class-wise default",
    # the Gaussian input's validator and container, and the SKCE's own notation
    ("calipers.regression.inputs.check_gaussian", "mean"): "the validator states its checks",
    ("calipers.regression.inputs.check_gaussian", "variance"): "the validator states its checks",
    ("calipers.regression.inputs.check_gaussian", "std"): "the validator states its checks",
    ("calipers.regression.inputs.check_gaussian", "targets"): "the validator states its checks",
    ("calipers.regression.inputs.GaussianPredictions", "mean"): "an attribute, not an input",
    ("calipers.regression.inputs.GaussianPredictions", "variance"): "an attribute, not an input",
    ("calipers.regression.inputs.GaussianPredictions", "targets"): "an attribute, not an input",
    ("calipers.regression.distributions.Gaussian", "mean"): "the constructor states its checks",
    ("calipers.regression.distributions.Gaussian", "variance"): "the constructor states its checks",
    ("calipers.regression.distributions.Gaussian", "std"): "the constructor states its checks",
    (
        "calipers.regression.distributions.check_predictive",
        "targets",
    ): "the validator states its checks",
    ("calipers.regression.distributions.check_predictive", "sample_weight"): (
        "the validator states its checks"
    ),
    ("calipers.regression.group_calibration.adversarial_group_calibration", "sample_weight"): (
        "groups are drawn by row, so a weight is not a repeated row"
    ),
    ("calipers.regression.group_calibration.calibration_by_group", "sample_weight"): (
        "needs groups or features; weights as repeated rows are tested in "
        "tests/test_regression_uncertainty_metrics.py"
    ),
    ("calipers.regression.distributions.ProbabilisticPredictions", "targets"): (
        "an attribute, not an input"
    ),
    ("calipers.regression.distributions.ProbabilisticPredictions", "sample_weight"): (
        "an attribute, not an input"
    ),
    ("calipers.regression.skce.gaussian_skce", "mean"): "the paper's notation mu_i",
    ("calipers.regression.skce.gaussian_skce", "variance"): "the paper's notation s_i^2",
    ("calipers.regression.skce.gaussian_skce", "std"): "the paper's notation s_i",
    ("calipers.regression.skce.gaussian_skce", "targets"): "the paper's notation y_i",
    (
        "calipers.regression.decomposition.gini_half_mean_difference",
        "targets",
    ): "finite targets alone",
    # point forecasts: the validator; the t test's standard error counts rows
    (
        "calipers.regression.point_forecast.check_point_forecast",
        "sample_weight",
    ): "the validator states its checks",
    ("calipers.regression.point_forecast.bias", "sample_weight"): "stderr counts rows",
    ("calipers.regression.point_forecast.bias_by_group", "sample_weight"): "stderr counts rows",
    # estimators and pipeline parts: arrays of the pipeline, not the user's input
    (
        "calipers.estimators.nadaraya_watson.NadarayaWatson.regress",
        "targets",
    ): "(n, q) pipeline targets",
    ("calipers.pipeline.lenses.LensSlice", "targets"): "an attribute of the lens output",
    ("calipers.pipeline.lenses.LensSlice", "labels"): "an attribute of the lens output",
}

#: Modules of the migrated packages that still write the text themselves, and why.
NOT_YET: dict[str, str] = {}


def _entries(doc: str) -> dict[str, str]:
    """``name -> entry`` (first line and indented description) of a numpydoc Parameters section."""
    lines = inspect.cleandoc(doc).splitlines()
    out: dict[str, str] = {}
    in_params = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and set(lines[i + 1].strip()) == {"-"}:
            in_params = line.strip() in ("Parameters", "Other Parameters", "Attributes")
            i += 2
            continue
        m = re.match(r"^([A-Za-z_]\w*) : ", line) if in_params else None
        if m:
            j = i + 1
            while j < len(lines) and (lines[j].startswith(" ") or not lines[j].strip()):
                if not lines[j].strip() and (
                    j + 1 >= len(lines) or not lines[j + 1].startswith(" ")
                ):
                    break
                j += 1
            out[m.group(1)] = "\n".join(lines[i:j]).rstrip()
            i = j
            continue
        i += 1
    return out


def _is_reference(entry: str) -> bool:
    """An entry that refers to another function's ("As in :func:`f`.") is no copy."""
    description = entry.split("\n", 1)[1].strip() if "\n" in entry else ""
    return description.startswith(("As in ", "As for "))


def _migrated_entries() -> Iterator[tuple[str, str, str]]:
    for name, obj in PUBLIC:
        if not name.startswith(MIGRATED) or name.rsplit(".", 1)[0].startswith(tuple(NOT_YET)):
            continue
        if obj.__module__ in NOT_YET:
            continue
        for param, entry in _entries(obj.__doc__ or "").items():
            if param in PARAMETERS:
                yield name, param, entry


def test_migrated_packages_use_the_shared_text() -> None:
    drift = []
    for name, param, entry in _migrated_entries():
        if (name, param) in KEPT or _is_reference(entry):
            continue
        if not entry.startswith(PARAMETERS[param] + "\n") and entry != PARAMETERS[param]:
            drift.append(f"{name}, {param}:\n{textwrap.indent(entry, '    | ')}")
    assert not drift, (
        "hand-written text of a shared parameter: write {param} (with lines of its own "
        "under it if needed) and decorate with calipers._docstrings.fill_doc, or list it "
        "in KEPT with the reason it differs:\n" + "\n".join(drift)
    )


def test_kept_entries_still_exist_and_still_differ() -> None:
    found = {(name, param): entry for name, param, entry in _migrated_entries()}
    stale = [k for k in KEPT if k not in found or found[k].startswith(PARAMETERS[k[1]])]
    assert not stale, f"KEPT entries that are gone or now shared (remove them): {stale}"


def test_the_shared_text_is_used() -> None:
    # the counts of this migration (hand-written copies replaced by the shared text);
    # they only grow as modules switch
    uses = {p: 0 for p in PARAMETERS}
    for _name, param, entry in _migrated_entries():
        if entry == PARAMETERS[param] or entry.startswith(PARAMETERS[param] + "\n"):
            uses[param] += 1
    assert uses["sample_weight"] >= 30
    assert uses["classes"] >= 20
    assert min(uses.values()) >= 5, uses


# --------------------------------------- the shared sample_weight text is true


def _sample_weight_functions() -> list[tuple[str, Callable[..., Any]]]:
    out = []
    for name, param, entry in _migrated_entries():
        if param == "sample_weight" and (name, param) not in KEPT and not _is_reference(entry):
            obj = dict(PUBLIC)[name]
            out.append((name, obj))
    return out


#: Functions of the shared ``sample_weight`` text that need more than predictions
#: (a metric to resample, a second model); checked through the metrics they call.
NEEDS_MORE = {
    "calipers.inference._confidence_interval.confidence_interval",
    "calipers.inference._confidence_interval.paired_confidence_interval",
    "calipers.inference._verdict.verdict",
    "calipers.inference.calibration_test.consistency_test",
    "calipers.inference.sweeps.test_size_sweep",
    "calipers.inference.sweeps.parameter_sweep",
    "calipers.metrics.upper_bound.recalibration_improvement",
}


def _as_plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _as_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "_asdict"):
        return {k: _as_plain(v) for k, v in value._asdict().items()}
    if hasattr(value, "to_numpy") and hasattr(value, "columns"):  # a DataFrame
        return {c: _as_plain(value[c].to_numpy()) for c in value.columns}
    if isinstance(value, (str, type(None), bool)):
        return value
    try:
        return np.asarray(value, dtype=np.float64)
    except ValueError:  # labels, names
        return list(value)


#: Fields that count rows, not weight: they differ between weights and repeated rows.
ROW_COUNTS = {"n_samples", "count", "n_rows"}


def _assert_same(a: Any, b: Any, where: str) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a.keys() - ROW_COUNTS:
            _assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, np.ndarray):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=where)
    else:
        assert a == b, where


@pytest.mark.parametrize(
    ("name", "func"),
    [
        pytest.param(n, f, id=n.rsplit(".", 1)[1])
        for n, f in _sample_weight_functions()
        if n not in NEEDS_MORE
    ],
)
def test_integer_weights_equal_repeated_rows(name: str, func: Callable[..., Any]) -> None:
    """The shared text promises it: a weight of 2 counts the row twice."""
    rng = np.random.default_rng(7)
    n = 60
    weights = rng.integers(1, 4, n)
    repeat = np.repeat(np.arange(n), weights)
    params = inspect.signature(func).parameters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "mean" in params:  # a Gaussian regression function
            mean = rng.normal(size=n)
            std = rng.uniform(0.5, 2.0, n)
            targets = mean + std * rng.normal(size=n)
            got = func(mean, targets=targets, std=std, sample_weight=weights)
            want = func(mean[repeat], targets=targets[repeat], std=std[repeat])
        elif "predictions" in params:  # a predictive distribution of any kind, or means
            mean = rng.normal(size=n)
            std = rng.uniform(0.5, 2.0, n)
            targets = mean + std * rng.normal(size=n)
            got = func(mean, targets=targets, std=std, sample_weight=weights)
            want = func(mean[repeat], targets=targets[repeat], std=std[repeat])
        elif "probs" in params:
            probs = rng.dirichlet([1.0, 1.0, 1.0], n)
            labels = np.array([rng.choice(3, p=row) for row in probs])
            extra = {"groups": [[0, 1], [2]]} if "groups" in params else {}
            if "k" in params:
                extra["k"] = 2  # top-k needs k below the number of classes
            got = func(probs, labels, sample_weight=weights, **extra)
            want = func(probs[repeat], labels[repeat], **extra)
        elif "forecasts" in params:  # a point forecast of a functional
            targets = rng.normal(size=n)
            forecasts = targets + rng.normal(size=n)
            got = func(forecasts, targets, sample_weight=weights)
            want = func(forecasts[repeat], targets[repeat])
            if isinstance(got, np.ndarray) and got.shape == (n,):  # one value per row
                got = got[repeat]
        elif "samples" in params:  # an ensemble (n, k)
            targets = rng.normal(size=n)
            samples = rng.normal(size=(n, 5))
            got = func(samples, targets, sample_weight=weights)
            want = func(samples[repeat], targets[repeat])
        elif "levels" in params:  # a quantile set (levels, (n, m) quantiles)
            targets = rng.normal(size=n)
            quantiles = np.sort(rng.normal(size=(n, 3)), axis=1)
            got = func([0.25, 0.5, 0.75], quantiles, targets, sample_weight=weights)
            want = func([0.25, 0.5, 0.75], quantiles[repeat], targets[repeat])
        elif "lower" in params:  # prediction intervals
            lower = rng.normal(size=n)
            upper = lower + rng.uniform(0.5, 2.0, n)
            rest = (rng.normal(size=n),) if "targets" in params else ()
            got = func(lower, upper, *rest, sample_weight=weights)
            want = func(lower[repeat], upper[repeat], *(r[repeat] for r in rest))
        else:  # a one-array statistic of the targets
            targets = rng.normal(size=n)
            got = func(targets, sample_weight=weights)
            want = func(targets[repeat])
    _assert_same(_as_plain(got), _as_plain(want), name)


def test_the_weight_check_covers_the_metrics() -> None:
    names = {n for n, _ in _sample_weight_functions()} - NEEDS_MORE
    assert len(names) >= 25
    assert "calipers.metrics.scores.brier" in names
    assert "calipers.regression.scores.crps_gaussian" in names


def test_a_drifted_copy_is_caught() -> None:
    # the drift check on a function written by hand, as before this module existed
    def old(probs: Any, labels: Any, *, sample_weight: Any = None) -> None:
        """Parameters
        ----------
        sample_weight : array-like of shape (n,), optional
            Non-negative weights.
        """

    def new(probs: Any, labels: Any, *, sample_weight: Any = None) -> None:
        """Parameters
        ----------
        {sample_weight}
            Extra line.
        """

    shared = PARAMETERS["sample_weight"]
    assert not _entries(old.__doc__ or "")["sample_weight"].startswith(shared)
    assert _entries(fill_doc(new).__doc__ or "")["sample_weight"].startswith(shared + "\n")
