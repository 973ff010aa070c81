"""The metric registry (calipers.metrics.registry) is the one list of named metrics.

Three kinds of checks:

* each row is true of its metric: a preset's pipeline parts, given to
  :func:`calipers.calibration_error`, give the function's number; a streaming row's
  state (one pass, or two for equal-mass bins) gives it too; the bootstrap's
  vectorised form reproduces it;
* the parts of calipers that list metrics read the registry: a metric added to it
  (here a throwaway row, the way a contributor adds one) reaches the state, Dask, the
  command line's table and sweep, and the bootstrap without any other file changing;
* no module of ``src/calipers`` other than the registry holds a literal list of three
  or more registry names (a switchboard the registry would not drive).
"""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.cli import main
from calipers.inference import _resampling as rs
from calipers.metrics import registry
from calipers.metrics.binned import ece_pipeline
from calipers.stream.calibration_state import CalibrationState

SRC = Path(__file__).resolve().parents[1] / "src" / "calipers"


def _data(n: int = 600, k: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(k) * 0.7, size=n)
    y = np.array([rng.choice(k, p=p**1.3 / (p**1.3).sum()) for p in P])
    return P, y


def _preset_kwargs(name: str) -> dict[str, Any]:
    return {"top_k_ece": {"k": 2}}.get(name, {})


# ----------------------------------------------------------------------------- rows are true


@pytest.mark.parametrize("name", registry.names(preset=True))
def test_a_presets_parts_are_what_its_function_computes(name: str) -> None:
    P, y = _data()
    spec = registry.get(name)
    kw = _preset_kwargs(name)
    assert spec.function(P, y, **kw) == cp.calibration_error(P, y, **spec.parts(**kw))


@pytest.mark.parametrize("name", registry.names(streaming="any"))
def test_a_streaming_rows_state_computes_its_function(name: str) -> None:
    """``for_metric`` (four batches merged; a second pass for equal-mass bins) equals the function."""
    P, y = _data()
    spec = registry.get(name)
    kw = _preset_kwargs(name)
    parts = [slice(lo, lo + 150) for lo in range(0, len(y), 150)]
    states = []
    for rows in parts:
        st = CalibrationState.for_metric(name, n_bins=10, **kw)
        st.update(P[rows], y[rows])
        states.append(st)
    first = states[0].merge(states[1]).merge(states[2]).merge(states[3])
    if "equal_mass" in first.config["estimator"]:  # the second pass: exact
        second = [first.refine(P[rows], y[rows]) for rows in parts]
        first = second[0].merge(second[1]).merge(second[2]).merge(second[3])
    if spec.stream_estimator is not None:  # the state's documented bins
        kw["estimator"] = spec.stream_estimator(10)
    if "n_bins" in inspect.signature(spec.function).parameters:
        kw["n_bins"] = 10
    assert first.compute() == pytest.approx(spec.function(P, y, **kw), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("name", [n for n in registry.METRICS if registry.get(n).resampler])
def test_a_resampler_row_has_a_vectorised_form_equal_to_its_function(name: str) -> None:
    P, y = _data()
    spec = registry.get(name)
    Q = cp.check_predictions(P, y)
    ev, kind = rs.evaluator(spec.function, Q, {})
    assert kind == "fast"
    w = np.random.default_rng(1).poisson(1.0, size=len(y)).astype(float)
    assert float(ev(w[None, :])[0]) == pytest.approx(
        float(spec.function(P, y, sample_weight=w)), rel=1e-10, abs=1e-13
    )


def test_names_and_aliases() -> None:
    assert registry.names(table=True) == [
        "accuracy", "nll", "brier", "ece", "ace", "sce", "tace", "mce", "rmsce",
        "classwise_ece", "bin_averaged_ece",
    ]  # fmt: skip
    assert registry.get("dirichlet") is registry.get("ce_kl")
    assert registry.of_function(cp.smece) is registry.get("smece")
    with pytest.raises(cp.CalibrationInputError, match="unknown metric 'nope'"):
        registry.get("nope")
    with pytest.raises(cp.CalibrationInputError, match="no pipeline parts"):
        registry.get("smece").parts()


# ----------------------------------------------------------------------------- one place


@pytest.fixture
def new_metric(monkeypatch: pytest.MonkeyPatch) -> registry.MetricSpec:
    """A metric added the way a contributor adds one: a function, its pipeline, one row.

    Here the ECE with bins closed on the left (an existing function with a keyword,
    so that its number is known independently: ``cp.ece(..., edge_rule="left")``).
    """

    def left_ece(probs: Any, labels: Any, *, n_bins: int = 15, **kw: Any) -> Any:
        return cp.ece(probs, labels, n_bins=n_bins, edge_rule="left", **kw)

    def left_pipeline(*, n_bins: int = 15) -> dict[str, Any]:
        return ece_pipeline(n_bins=n_bins, edge_rule="left")

    spec = registry.MetricSpec(
        "left_ece",
        "left ECE",
        left_ece,
        left_pipeline,
        "exact",
        resampler="fixed_bins",
        resampler_kwargs=frozenset({"n_bins"}),
        table=True,
    )
    monkeypatch.setitem(registry.METRICS, "left_ece", spec)
    return spec


def test_a_new_row_reaches_the_state(new_metric: registry.MetricSpec) -> None:
    P, y = _data()
    st = CalibrationState.for_metric("left_ece", n_bins=10)
    st.update(P, y)
    assert st.compute() == pytest.approx(cp.ece(P, y, n_bins=10, edge_rule="left"), rel=1e-12)


def test_a_new_row_reaches_the_command_line(
    new_metric: registry.MetricSpec, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    P, y = _data()
    np.savez(tmp_path / "m.npz", probs=P, labels=y)
    assert main(["table", str(tmp_path / "m.npz"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["columns"][-1] == "left_ece"
    assert doc["models"][0]["left_ece"] == pytest.approx(cp.ece(P, y, edge_rule="left"), rel=1e-12)
    code = main(
        ["sweep", str(tmp_path / "m.npz"), "--over", "n_bins", "--metrics", "left_ece",
         "--values", "5,10", "--no-intervals", "--out", str(tmp_path / "sweep")]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    written = "".join(
        f.read_text()
        for f in (tmp_path / "sweep").rglob("*")
        if f.suffix in (".csv", ".json", ".md")
    )
    assert "left_ece" in written


def test_a_new_row_reaches_dask_and_the_bootstrap(new_metric: registry.MetricSpec) -> None:
    P, y = _data()
    Q = cp.check_predictions(P, y)
    assert rs.evaluator(new_metric.function, Q, {"n_bins": 10})[1] == "fast"
    pytest.importorskip("dask.array")
    import dask.array as da

    from calipers.stream import dask as cpd

    states = cpd.calibration_states(
        da.from_array(P, chunks=(150, 4)), da.from_array(y, chunks=150), ["left_ece"],
        n_bins=10, scheduler="synchronous",
    )  # fmt: skip
    assert states["left_ece"].compute() == pytest.approx(
        cp.ece(P, y, n_bins=10, edge_rule="left"), rel=1e-12
    )


# ----------------------------------------------------------------------------- no switchboards


def _literal_name_lists(tree: ast.AST, known: set[str]) -> list[tuple[int, list[str]]]:
    """Literal tuples, lists, sets and dict keys holding three or more known names.

    ``__all__`` lists are exports, not switchboards, and are left out.
    """
    exports = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
    }
    out = []
    for node in ast.walk(tree):
        if id(node) in exports:
            continue
        items: list[ast.expr] = []
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        names = [e.value for e in items if isinstance(e, ast.Constant) and e.value in known]
        if len(names) >= 3:
            out.append((node.lineno, names))
    return out


def test_the_checker_finds_a_switchboard() -> None:
    known = {"ece", "ace", "sce"}
    tree = ast.parse(
        'COLS = ("ece", "ace", "sce")\nX = {"ece": 1, "ace": 2}\n__all__ = ["ece", "ace", "sce"]\n'
    )
    assert _literal_name_lists(tree, known) == [(1, ["ece", "ace", "sce"])]


def test_no_module_keeps_its_own_list_of_metric_names() -> None:
    known = set(registry.METRICS) - {"accuracy", "nll", "brier"}  # scores are common words
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "registry.py" and path.parent.name == "metrics":
            continue
        hits = _literal_name_lists(ast.parse(path.read_text(encoding="utf-8")), known)
        if hits:
            found[str(path.relative_to(SRC))] = hits
    assert not found, f"lists of metric names outside the registry: {found}"
