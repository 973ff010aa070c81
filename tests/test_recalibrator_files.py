"""Recalibrator files that cannot lie.

A document loads as the recalibrator it describes, or raises
:class:`CalibrationInputError` naming what is wrong: every method's parameters
and fitted state are checked against its declared schema (types, shapes tied to
``n_classes_`` and the parameters, ranges, finiteness, monotone maps, weights
on the simplex), the format version is checked (format 1, written by calipers
0.1 and the 0.2 development versions, still loads), and reading is bounded in
size and nesting. Explicit cases for each failure seen before, and a
hypothesis fuzz test that mutates valid documents of every registered method.
"""

from __future__ import annotations

import copy
import importlib
import json
import pkgutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import calipers as cp
import calipers.recalibration as recal
from calipers.recalibration import _schema, base
from calipers.validation import CalibrationInputError

for _mod in pkgutil.iter_modules(recal.__path__):
    importlib.import_module(f"{recal.__name__}.{_mod.name}")

METHODS = sorted(
    name for name, c in base._REGISTRY.items() if c.__module__.startswith("calipers.recalibration")
)
FORMAT_1 = json.loads((Path(__file__).parent / "data" / "recalibrators_format1.json").read_text())
K = 3

# ----------------------------------------------------------------------------- valid documents


def _softmax(z: np.ndarray) -> np.ndarray:
    if z.ndim == 1:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _data(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if kind == "binary":
        z = 2.0 * rng.standard_normal(n)
        return z, (rng.random(n) < _softmax(z / 2)).astype(np.int64)
    z = 2.0 * rng.standard_normal((n, K)) + [0.3, 0.0, -0.2]
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(_softmax(z / 2), axis=1)).sum(1), K - 1)
    return z, y


def _fit_all() -> dict[str, base.Recalibrator]:
    """Every registered method fitted on multiclass and binary logits and probabilities,
    plus variants of the parameters that change the fitted state's form."""
    variants: dict[str, list[dict[str, Any]]] = {
        "HistogramBinning": [{}, {"mode": "top_label"}, {"empty": "zero", "renormalize": False}],
        "IsotonicRegression": [{}, {"interpolation": "step", "renormalize": False}],
        "VectorScaling": [{}, {"bias": False}],
        "MatrixScaling": [{}, {"reg": "odir"}],
        "TemperatureScaling": [{}, {"loss": "brier"}],
    }
    out: dict[str, base.Recalibrator] = {}
    for name in METHODS:
        for params in variants.get(name, [{}]):
            for kind in ("multiclass", "binary"):
                for told in (True, False):
                    z, y = _data(kind, 80, 1)
                    x = z if told else _softmax(z)
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", RuntimeWarning)
                            rc = base._REGISTRY[name](**params).fit(x, y, logits=told)
                    except CalibrationInputError as exc:
                        assert "binary method" in str(exc)
                        continue
                    tag = ",".join(f"{k}={v}" for k, v in params.items())
                    out[f"{name}({tag})/{kind}/{'logits' if told else 'probs'}"] = rc
    return out


FITTED = _fit_all()
VALID: dict[str, dict[str, Any]] = {k: json.loads(rc.to_json()) for k, rc in FITTED.items()}
VALID.update({k: v["document"] for k, v in FORMAT_1.items()})
TEST_Z = {kind: _data(kind, 25, 2)[0] for kind in ("multiclass", "binary")}


def _load(doc: dict[str, Any] | str) -> base.Recalibrator:
    return base.load_recalibrator(doc if isinstance(doc, str) else json.dumps(doc))


def _doc(method: str, kind: str = "multiclass", told: str = "logits") -> dict[str, Any]:
    """A valid document of ``method`` ("Name" for the defaults, or "Name(param=value)")."""
    key = (method if "(" in method else method + "()") + f"/{kind}/{told}"
    return copy.deepcopy(VALID[key])


def _refused(doc: dict[str, Any] | str, match: str) -> None:
    with pytest.raises(CalibrationInputError, match=match):
        _load(doc)


# ----------------------------------------------------------------------------- round trips


def test_every_method_declares_its_schema() -> None:
    for name in METHODS:
        cls = base._REGISTRY[name]
        assert cls.schema is not base.Recalibrator.schema, name
        assert set(cls.schema.params) == set(cls._param_names()), name
        rc = next(r for k, r in FITTED.items() if k.startswith(name + "("))
        fitted = {k for k in vars(rc) if k.endswith("_") and not k.startswith("_")}
        assert fitted - set(cls._param_names()) == set(cls._state_fields()), name


def test_documents_are_written_in_format_2_and_hold_exactly_the_declared_state() -> None:
    assert {k.split("(")[0] for k in FITTED} == set(METHODS)  # every method (and fuzzed)
    for key, rc in FITTED.items():
        doc = VALID[key]
        assert doc["format"] == 2
        assert set(doc["state"]) == set(type(rc)._state_fields()), key
        back = _load(doc)
        for z in _scores_for(rc):
            np.testing.assert_array_equal(
                back.predict_proba(z, logits=True), rc.predict_proba(z, logits=True)
            )
        assert back.to_json() == rc.to_json()


def test_format_1_files_still_load_and_predict_as_their_writer_did() -> None:
    """Documents written by calipers 0.1 (``logits_``) and by the 0.2 development
    versions (``input_kind_``, ``MatrixScaling.lambda_`` repeated in the state), with
    the predictions their writer made: loaded, they predict exactly the same, and
    are written back in format 2."""
    # methods added after format 2 became the written format (spline, scaling-binning, ...)
    # have no format-1 documents
    assert {k.split("/")[1] for k in FORMAT_1} <= set(METHODS)
    for key, case in FORMAT_1.items():
        assert case["document"]["format"] == 1
        rc = _load(case["document"])
        q = rc.predict_proba(np.array(case["scores"]), logits=case["logits"])
        # The expected predictions were written on another machine. NumPy's exp/log
        # differ by up to a few ulp between its SIMD code paths (AVX2 vs AVX-512: one
        # ulp, 0.0862737671310732 vs 0.08627376713107321, was seen), and a prediction
        # is at most about ten such operations, so machines agree to ~40 ulp (1e-14
        # relative). rtol=1e-13 allows that and is still a thousand times smaller than
        # what a change of a fitted parameter at the optimisers' tolerance (1e-10) moves.
        np.testing.assert_allclose(q, np.array(case["expected"]), rtol=1e-13, atol=0, err_msg=key)
        doc = json.loads(rc.to_json())
        assert doc["format"] == 2 and "logits_" not in doc["state"], key
        assert "lambda_" not in doc["state"], key
        again = _load(doc).predict_proba(np.array(case["scores"]), logits=case["logits"])
        np.testing.assert_array_equal(again, q)


def test_an_unfitted_recalibrator_round_trips_and_a_partial_state_is_refused() -> None:
    text = cp.HistogramBinning(n_bins=7, mode="top_label").to_json()
    doc = json.loads(text)
    assert doc["state"] == {} and doc["format"] == 2
    back = _load(text)
    assert back.get_params() == {
        "n_bins": 7,
        "mode": "top_label",
        "renormalize": True,
        "empty": "midpoint",
        "smoothing": "laplace",
    }
    with pytest.raises(CalibrationInputError, match="not fitted"):
        back.predict_proba(TEST_Z["multiclass"])
    doc["state"] = {"n_classes_": 3}  # fitted, but only in part
    _refused(doc, r"HistogramBinning file: field 'input_kind_' is missing")


# ----------------------------------------------------------------------------- the failures seen


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0, "0"), ({"float": "nan"}, "nan"), (-1, "-1"), (True, r"true \(a boolean\)"), ("2", "'2'")],
)
def test_temperature_must_be_a_finite_positive_number(value: Any, shown: str) -> None:
    """temperature_ = 0, NaN, -1 or true loaded and gave NaN, reversed or silent output."""
    doc = _doc("TemperatureScaling")
    doc["state"]["temperature_"] = value
    _refused(
        doc,
        rf"^TemperatureScaling file: field 'temperature_' must be a finite number > 0; got {shown}$",
    )


def test_nan_and_infinity_literals_are_refused() -> None:
    doc = _doc("TemperatureScaling")
    for literal in ("NaN", "Infinity", "-Infinity"):
        text = json.dumps(doc).replace(json.dumps(doc["state"]["temperature_"]), literal, 1)
        _refused(text, rf"{literal} is not a JSON number")
    doc["state"]["temperature_"] = 1e400  # parses as inf
    _refused(json.dumps(doc).replace("Infinity", "1e400"), r"finite number > 0; got inf")


def test_a_document_relabelled_as_another_method_is_refused() -> None:
    """An ensemble document relabelled as temperature scaling loaded (and predicted)."""
    doc = _doc("EnsembleTemperatureScaling")
    doc["calipers_recalibrator"] = "TemperatureScaling"
    _refused(doc, r"TemperatureScaling file: parameter 'loss' is missing")
    doc["params"] = _doc("TemperatureScaling")["params"]
    _refused(doc, r"TemperatureScaling file: unknown field 'weights_'")
    with pytest.raises(CalibrationInputError, match="holds a TemperatureScaling, not a"):
        cp.EnsembleTemperatureScaling.from_json(json.dumps(_doc("TemperatureScaling")))


@pytest.mark.parametrize("fmt", [0, 3, 99, -1, "1", "2", None, 1.5, 2.0, True, [2]])
def test_unknown_format_versions_are_refused(fmt: Any) -> None:
    """Any format value loaded before."""
    doc = _doc("TemperatureScaling")
    doc["format"] = fmt
    _refused(doc, r"TemperatureScaling file: .*format")


def test_the_format_rule() -> None:
    doc = _doc("TemperatureScaling")
    _refused(
        {**doc, "format": 3},
        r"format 3 is not supported; this version of calipers reads formats 1 and 2",
    )
    del doc["format"]
    _refused(doc, r"key 'format' is missing")
    # format 1 may hold calipers 0.1's 'logits_'; format 2 may not
    old = _doc("TemperatureScaling")
    del old["state"]["input_kind_"], old["state"]["input_detected_"]
    old["state"]["logits_"] = True
    _refused(old, r"unknown field 'logits_'")
    assert _load({**old, "format": 1}).input_kind_ == "logits"
    _refused(
        {**old, "format": 1, "state": {**old["state"], "logits_": 1}},
        r"'logits_' must be true or false",
    )
    # format 1 repeated MatrixScaling's parameter lambda_ in the state: it must agree
    ms = _doc("MatrixScaling")
    ms["format"] = 1
    ms["state"]["lambda_"] = ms["params"]["lambda_"]
    _load(ms)
    ms["state"]["lambda_"] = 0.5
    _refused(ms, r"field 'lambda_' \(0.5\) contradicts parameter 'lambda_'")


@pytest.mark.parametrize(
    ("where", "value", "match"),
    [
        ("params", [1, 2], r"'params' must be an object of named values; got a list"),
        ("state", [1], r"'state' must be an object of named values; got a list"),
        ("params", "x", r"'params' must be an object"),
    ],
)
def test_a_list_where_a_mapping_belongs(where: str, value: Any, match: str) -> None:
    """Crashed at load with AttributeError ('list' object has no attribute 'items')."""
    doc = _doc("TemperatureScaling")
    doc[where] = value
    _refused(doc, match)


def test_not_a_document() -> None:
    for text in ("[1, 2]", "null", '"x"', "{", "", "{}", '{"calipers_recalibrator": 5}'):
        with pytest.raises(CalibrationInputError):
            _load(text)
    with pytest.raises(CalibrationInputError, match="JSON text"):
        base.load_recalibrator(VALID[next(iter(VALID))])  # type: ignore[arg-type]
    _refused('{"a": 1, "a": 2}', r"the key 'a' appears twice")
    doc = _doc("TemperatureScaling")
    _refused({**doc, "extra": 1}, r"unknown key 'extra'")
    _refused(json.dumps(doc).replace('"tol"', '"tol": 1, "tol"'), r"'tol' appears twice")
    _refused(json.dumps(doc).replace('"max_iter": 100', '"max_iter": ' + "9" * 5000), r"digits")
    with pytest.raises(CalibrationInputError, match="not UTF-8"):
        base.load_recalibrator(json.dumps(doc).encode("utf-16"))


def test_deep_nesting_is_refused_without_recursion() -> None:
    """100 000 nested lists raised RecursionError."""
    head = '{"calipers_recalibrator": "TemperatureScaling", "format": 2, "params": '
    for depth in (33, 100, 100_000):
        _refused(head + "[" * depth + "]" * depth + "}", rf"nested {depth + 1} deep; at most 32")
    doc = _doc("TemperatureScaling")
    doc["params"]["loss"] = "[" * 10_000  # brackets inside a string are text, not nesting
    _refused(doc, r"parameter 'loss' must be one of 'nll', 'brier'")


def test_documents_larger_than_the_limit_are_refused(tmp_path: Path) -> None:
    assert base.MAX_DOCUMENT_BYTES == 64 * 2**20
    rc = FITTED[next(k for k in FITTED if k.startswith("MatrixScaling"))]
    text = rc.to_json()
    limit = len(text) - 1
    with pytest.raises(
        CalibrationInputError, match=rf"is {len(text)} bytes, more than the limit of {limit} bytes"
    ):
        base.load_recalibrator(text, max_bytes=limit)
    base.load_recalibrator(text, max_bytes=len(text))
    path = tmp_path / "ms.json"
    rc.save(path)
    with pytest.raises(CalibrationInputError, match="more than"):
        cp.MatrixScaling.load(path, max_bytes=limit)
    with pytest.raises(CalibrationInputError, match="more than"):
        base.load_recalibrator(" " * (64 * 2**20 + 1))


@pytest.mark.parametrize(
    ("prefix", "kind", "edit", "match"),
    [
        # crashed at predict with IndexError, AttributeError or TypeError, or loaded and lied
        (
            "TemperatureScaling",
            "multiclass",
            lambda d: d["state"].pop("temperature_"),
            r"field 'temperature_' is missing",
        ),
        (
            "HistogramBinning",
            "multiclass",
            lambda d: d["params"].update(n_bins=30),
            r"'bin_values_' must be an array of shape \(3, 30\); got shape \(3, 15\)",
        ),
        (
            "HistogramBinning",
            "multiclass",
            lambda d: d["params"].update(foo=1),
            r"unknown parameter 'foo'",
        ),
        (
            "HistogramBinning",
            "multiclass",
            lambda d: d["params"].update(mode="top_label"),
            r"'bin_values_' must be an array of shape \(15,\)",
        ),
        (
            "HistogramBinning",
            "multiclass",
            lambda d: d["state"]["bin_values_"].update(dtype="object"),
            r'dtype "float64"; got dtype \'object\'',
        ),
        (
            "HistogramBinning",
            "multiclass",
            lambda d: d["state"]["bin_values_"]["ndarray"][0].__setitem__(0, 1.5),
            r"'bin_values_' must be numbers in \[0, 1\]; entry \(0, 0\) is 1.5",
        ),
        (
            "HistogramBinning",
            "multiclass",
            lambda d: d["state"]["bin_weights_"]["ndarray"][1].__setitem__(2, -1.0),
            r"'bin_weights_' must be numbers >= 0",
        ),
        (
            "HistogramBinning",
            "multiclass",
            lambda d: d["state"]["bin_values_"]["ndarray"][0].__setitem__(14, "0.5"),
            r"an array of numbers; found '0.5'",
        ),
        (
            "HistogramBinning",
            "multiclass",
            lambda d: d["state"]["bin_values_"].update(shape=[15, 3]),
            r"shape \(3, 15\); got shape \(15, 3\)",
        ),
        (
            "HistogramBinning",
            "multiclass",
            lambda d: d["state"].update(n_classes_=4),
            r"shape \(4, 15\); got shape \(3, 15\)",
        ),
        (
            "IsotonicRegression",
            "multiclass",
            lambda d: d["state"]["thresholds_"].pop(),
            r"'thresholds_' must be a list of 3 arrays; got 2",
        ),
        (
            "IsotonicRegression",
            "multiclass",
            lambda d: d["state"]["values_"][1]["ndarray"].reverse(),
            r"'values_' must be a list of arrays; item 1 must be non-decreasing \(the method promises a monotone map\)",
        ),
        (
            "IsotonicRegression",
            "multiclass",
            lambda d: d["state"]["thresholds_"][0]["ndarray"].reverse(),
            r"item 0 must be increasing",
        ),
        (
            "IsotonicRegression",
            "multiclass",
            lambda d: (
                d["state"]["values_"][0]["ndarray"].pop(),
                d["state"]["values_"][0]["shape"].__setitem__(
                    0, d["state"]["values_"][0]["shape"][0] - 1
                ),
            ),
            r"item 0 must be an array of shape",
        ),
        (
            "VectorScaling",
            "multiclass",
            lambda d: d["state"]["weights_"].update(ndarray=[1.0, 1.0], shape=[2]),
            r"'weights_' must be an array of shape \(3,\); got shape \(2,\)",
        ),
        (
            "VectorScaling",
            "multiclass",
            lambda d: d["state"].update(weights_=[1.0, 1.0, 1.0]),
            r"'weights_' must be an array written as",
        ),
        (
            "VectorScaling(bias=False)",
            "multiclass",
            lambda d: d["state"]["bias_"]["ndarray"].__setitem__(0, 0.5),
            r"parameter 'bias' is false, but field 'bias_' is not all zeros",
        ),
        (
            "VectorScaling",
            "multiclass",
            lambda d: d["state"].update(binary_=True),
            r"'binary_' is true \(binary scores\), but field 'n_classes_' is 3",
        ),
        (
            "MatrixScaling",
            "multiclass",
            lambda d: d["state"]["weights_"].update(
                ndarray=[[1.0, 0.0, 0.0, 0.0]] * 3, shape=[3, 4]
            ),
            r"shape \(3, 3\); got shape \(3, 4\)",
        ),
        (
            "EnsembleTemperatureScaling",
            "multiclass",
            lambda d: d["state"]["weights_"].update(ndarray=[0.5, 0.5, 0.5]),
            r"'weights_' must be entries that sum to 1 \(weights on the simplex\); they sum to 1.5",
        ),
        (
            "EnsembleTemperatureScaling",
            "multiclass",
            lambda d: d["state"]["weights_"].update(ndarray=[1.5, -0.5, 0.0]),
            r"'weights_' must be numbers in \[0, 1\]",
        ),
        (
            "BetaCalibration",
            "binary",
            lambda d: d["state"].update(a_=-1.0),
            r"field 'a_' must be a finite number >= 0; got -1.0",
        ),
        (
            "PlattScaling",
            "binary",
            lambda d: d["state"].update(n_classes_=3),
            r"field 'n_classes_' must be the integer 2; got 3",
        ),
        (
            "MeanReplacement",
            "multiclass",
            lambda d: d["state"].update(accuracy_=1.5),
            r"field 'accuracy_' must be a finite number in \[0, 1\]; got 1.5",
        ),
        (
            "MonotoneLogitMap",
            "multiclass",
            lambda d: d["state"]["slopes_"]["ndarray"].__setitem__(2, 0.0),
            r"'slopes_' must be numbers > 0",
        ),
        (
            "MonotoneLogitMap",
            "multiclass",
            lambda d: d["state"]["knots_"]["ndarray"].reverse(),
            r"'knots_' must be non-decreasing",
        ),
        (
            "MonotoneLogitMap",
            "multiclass",
            lambda d: d["params"].update(n_knots=5),
            r"'knots_' must be an array of shape \(5,\)",
        ),
        (
            "MonotoneLogitMap",
            "multiclass",
            lambda d: d["params"].update(min_slope=10.0),
            r"'slopes_' must be >= parameter 'min_slope'",
        ),
        (
            "TemperatureScaling",
            "multiclass",
            lambda d: d["params"].update(t_min=5.0, t_max=1.0),
            r"t_min < t_max; got t_min=5.0, t_max=1.0",
        ),
        (
            "TemperatureScaling",
            "multiclass",
            lambda d: d["params"].update(max_iter=10.0),
            r"parameter 'max_iter' must be an integer >= 1; got 10.0",
        ),
        (
            "TemperatureScaling",
            "multiclass",
            lambda d: d["state"].update(n_iter_=-(2**70)),
            r"'n_iter_' must be an integer >= 0; got an integer of 71 bits",
        ),
        (
            "TemperatureScaling",
            "multiclass",
            lambda d: d["state"].update(input_kind_="log"),
            r"'input_kind_' must be one of 'logits', 'probs'",
        ),
        (
            "TemperatureScaling",
            "multiclass",
            lambda d: d["state"].update(converged_=1),
            r"'converged_' must be true or false; got 1",
        ),
    ],
)
def test_each_field_is_checked_by_name(prefix: str, kind: str, edit: Any, match: str) -> None:
    doc = _doc(prefix, kind)
    edit(doc)
    _refused(doc, match)


def test_the_live_object_obeys_the_same_schema() -> None:
    """A state edited by hand cannot be saved, and predict refuses it instead of crashing."""
    ts = cp.load_recalibrator(json.dumps(_doc("TemperatureScaling")))
    ts.temperature_ = -1.0
    with pytest.raises(CalibrationInputError, match=r"cannot be saved: field 'temperature_'"):
        ts.to_json()
    with pytest.raises(
        CalibrationInputError, match=r"field 'temperature_' must be a finite number > 0"
    ):
        ts.predict_proba(TEST_Z["multiclass"])
    hb = cp.load_recalibrator(json.dumps(_doc("HistogramBinning")))
    hb.set_params(n_bins=30)  # IndexError at predict before
    with pytest.raises(
        CalibrationInputError, match=r"'bin_values_' must be an array of shape \(3, 30\)"
    ):
        hb.predict_proba(TEST_Z["multiclass"])


def test_register_requires_a_complete_schema() -> None:
    class NoSchema(base.Recalibrator):
        pass

    with pytest.raises(CalibrationInputError, match="declares no schema"):
        base.register(NoSchema)
    with pytest.raises(CalibrationInputError, match="declares no schema"):
        NoSchema().to_json()

    class Partial(base.Recalibrator):
        schema = _schema.Schema()

        def __init__(self, alpha: float = 1.0) -> None:
            self.alpha = alpha

    with pytest.raises(CalibrationInputError, match=r"differs in \['alpha'\]"):
        base.register(Partial)
    assert "NoSchema" not in base._REGISTRY and "Partial" not in base._REGISTRY


# ----------------------------------------------------------------------------- fuzzing

_NAMES = sorted(base._REGISTRY)
_FIELDS = sorted({f for d in VALID.values() for f in [*d["params"], *d["state"]]})
_SPECIAL: list[Any] = [
    0,
    1,
    2,
    -1,
    0.0,
    -0.0,
    1.5,
    1e308,
    -1e308,
    1e-320,
    2**53 + 1,
    2**70,
    True,
    False,
    None,
    "",
    "nan",
    "inf",
    "2",
    "float64",
    "object",
    "logits",
    "probs",
    "top_label",
    [],
    {},
    {"float": "nan"},
    {"float": "inf"},
    {"float": "1.0"},
    [1.0],
    [[1.0]],
    {"ndarray": [], "dtype": "float64", "shape": [0]},
    *_NAMES,
]
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=5,
)
_values = st.one_of(st.sampled_from(_SPECIAL), _json)
_DEEP = "__deeply nested__"


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every node of a JSON document (breadth first), the root included."""
    out, todo = [], [(node, path)]
    while todo:
        n, p = todo.pop(0)
        out.append(p)
        if isinstance(n, dict):
            todo.extend((v, (*p, k)) for k, v in n.items())
        elif isinstance(n, list):
            todo.extend((v, (*p, i)) for i, v in enumerate(n))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _mutate(doc: Any, path: tuple[Any, ...], op: str, draw: Any) -> Any:
    """``doc`` with one change at ``path`` (the root is replaced by returning a new one)."""
    node = _get(doc, path)
    if op == "replace":
        new = copy.deepcopy(draw(_values))  # (never mutate the shared special values)
    elif op == "scale":
        factor = draw(st.sampled_from([-1.0, 0.0, 0.5, 2.0, 1e10, -1e-10, 1.0 + 1e-15]))
        if isinstance(node, bool) or not isinstance(node, (int, float)):
            return doc
        new = node * factor
    elif op == "retype":
        new = draw(
            st.sampled_from(
                [str(node), [node], {"v": node}, None, not node if isinstance(node, bool) else True]
            )
        )
    elif op == "nest":
        new = node
        for _ in range(draw(st.integers(1, 40))):
            new = [new] if draw(st.booleans()) else {"x": new}
    elif op == "deep":
        new = _DEEP
    elif op == "permute":
        if not isinstance(node, list) or len(node) < 2:
            return doc
        new = list(reversed(node)) if draw(st.booleans()) else node[1:] + node[:1]
    elif op == "copy":
        other = draw(st.sampled_from(_paths(doc)))
        new = copy.deepcopy(_get(doc, other))
    elif op == "delete":
        if not path:
            return doc
        parent = _get(doc, path[:-1])
        del parent[path[-1]]
        return doc
    elif op == "add":
        if isinstance(node, dict):
            node[draw(st.sampled_from(_FIELDS) | st.text(max_size=4))] = copy.deepcopy(
                draw(_values)
            )
        elif isinstance(node, list):
            extra = node[-1] if node and draw(st.booleans()) else draw(_values)
            node.append(copy.deepcopy(extra))
        return doc
    else:  # pragma: no cover
        raise AssertionError(op)
    if not path:
        return new
    _get(doc, path[:-1])[path[-1]] = new
    return doc


# value-level changes (which often give documents that still load) weighted up
_OPS = ["replace", "retype", "nest", "deep", "copy", "delete", "add"] + ["scale", "permute"] * 3


@st.composite
def mutated_documents(draw: Any) -> tuple[str, str]:
    key = draw(st.sampled_from(sorted(VALID)))
    doc = copy.deepcopy(VALID[key])
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(doc)))
        doc = _mutate(doc, path, draw(st.sampled_from(_OPS)), draw)
    text = json.dumps(doc)  # NaN and Infinity appear as literals
    if _DEEP in text:
        depth = draw(st.sampled_from([31, 33, 1000, 200_000]))
        text = text.replace(json.dumps(_DEEP), "[" * depth + "]" * depth, 1)
    if draw(st.sampled_from(range(20))) == 7:  # truncated text, 1 in 20
        text = text[: draw(st.integers(0, len(text)))]
    return key, text


def _scores_for(rc: base.Recalibrator) -> list[np.ndarray]:
    k = int(rc.n_classes_)
    z = np.random.default_rng(5).standard_normal((12, k)) * 1.5
    return [z] if k != 2 else [z, z[:, 1] - z[:, 0]]


def _renormalized(rc: base.Recalibrator) -> bool:
    """Does the method promise rows that sum to 1? (one-vs-rest maps unnormalised do not)."""
    return bool(getattr(rc, "renormalize", True)) or getattr(rc, "mode", "") == "top_label"


def _check_loaded(rc: base.Recalibrator) -> None:
    """A loaded document is a valid recalibrator: it predicts like the document it
    writes back, gives probabilities, and keeps the arg-max where it says so."""
    if not hasattr(rc, "n_classes_"):
        with pytest.raises(CalibrationInputError, match="not fitted"):
            rc.predict_proba(TEST_Z["multiclass"])
        return
    again = base.load_recalibrator(rc.to_json())
    if rc.n_classes_ > 1000:  # a valid document, but no scores to try it on here
        assert again.to_json() == rc.to_json()
        return
    for z in _scores_for(rc):
        try:
            q = rc.predict_proba(z, logits=True)
        except CalibrationInputError as exc:  # extreme but valid values (T = 1e-300)
            assert "non-finite probability" in str(exc), str(exc)
            with pytest.raises(CalibrationInputError, match="non-finite probability"):
                again.predict_proba(z, logits=True)
            continue
        np.testing.assert_array_equal(again.predict_proba(z, logits=True), q)
        assert q.shape == z.shape and np.all(np.isfinite(q)), q
        assert np.all((q >= 0) & (q <= 1)), q
        if q.ndim == 2 and _renormalized(rc):
            np.testing.assert_allclose(q.sum(axis=1), 1.0, rtol=0, atol=1e-9)
        if rc.accuracy_preserving:  # the input's top class is (one of) the output's top
            if q.ndim == 1:
                assert np.all(((q > 0.5) == (z > 0)) | (q == 0.5) | (z == 0))
            else:
                top = q[np.arange(len(q)), z.argmax(axis=1)]
                assert np.all(top == q.max(axis=1))


@settings(
    max_examples=600,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated_documents())
def test_mutated_documents_load_as_valid_recalibrators_or_are_refused(
    case: tuple[str, str],
) -> None:
    _, text = case
    try:
        rc = base.load_recalibrator(text)
    except CalibrationInputError as exc:
        event("refused: " + str(exc).split(": ", 1)[-1].split("'")[0][:30])
        return
    event("loaded " + ("fitted" if hasattr(rc, "n_classes_") else "unfitted"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warnings either
        _check_loaded(rc)


# ----------------------------------------------------------------------------- who reads what


def test_the_contract_class_reads_every_registered_document(tmp_path: Path) -> None:
    """``Recalibrator.from_json`` / ``load`` read any registered method's document (the
    regression ones too); a method's class reads only its own and its subclasses'."""
    z = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0], [0.5, -1.0]])
    ts = cp.TemperatureScaling().fit(z, [0, 1, 1, 0], logits=True)
    mu, sd, y = np.array([0.0, 1.0, 2.0, 3.0]), np.ones(4), np.array([0.5, 0.2, 2.9, 2.0])
    vs = cp.VarianceScaling().fit(mu, std=sd, targets=y)
    for rc in (ts, vs):
        back = base.Recalibrator.from_json(rc.to_json())
        assert type(back) is type(rc) and back.to_json() == rc.to_json()
        path = tmp_path / f"{type(rc).__name__}.json"
        rc.save(path)
        assert type(base.Recalibrator.load(path)) is type(rc)
    assert (
        base.load_recalibrator(vs.to_json(), expected=base.Recalibrator).to_json() == vs.to_json()
    )
    with pytest.raises(
        CalibrationInputError, match="holds a VarianceScaling, not a TemperatureScaling"
    ):
        cp.TemperatureScaling.from_json(vs.to_json())

    class Unregistered(base.Recalibrator):  # a subclass is not the contract class
        pass

    with pytest.raises(
        CalibrationInputError, match="holds a TemperatureScaling, not a Unregistered"
    ):
        Unregistered.from_json(ts.to_json())
    with pytest.raises(CalibrationInputError, match="Unregistered cannot be saved: it declares no"):
        Unregistered().to_json()
