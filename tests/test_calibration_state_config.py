"""The configuration of a CalibrationState: every supported lens, selection, binning
estimator and divergence, written to JSON and read back.

``data/calibration_state_configs.json`` holds the ``config`` of each state below as
written by calipers before the configuration codec moved beside the parts it
describes (``calipers.pipeline._config``, ``calipers.estimators._config``); a saved
state must keep loading, and its JSON must stay byte-identical.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calipers as cp
from calipers.stream.calibration_state import CalibrationState

SAVED = Path(__file__).parent / "data" / "calibration_state_configs.json"

#: Constructor arguments of a state, one per supported kind of part (built lazily:
#: selections and divergences are objects).
CONFIGS: dict[str, Callable[[], dict[str, Any]]] = {
    "default": lambda: {},
    "lens top_label": lambda: {"lens": "top_label"},
    "lens top_label_per_class": lambda: {
        "lens": "top_label_per_class",
        "aggregate": "max",
        "class_aggregate": "weighted",
    },
    "lens classwise": lambda: {"lens": "classwise", "aggregate": "mean", "class_aggregate": "sum"},
    "lens binary": lambda: {"lens": "binary"},
    "lens top_k": lambda: {"lens": cp.top_k(2)},
    "selection threshold": lambda: {"lens": "classwise", "selection": cp.threshold(0.01)},
    "selection interval": lambda: {
        "selection": [cp.ScoreInterval(0.2, 0.9, "both", 0)],
    },
    "selection labels": lambda: {"lens": "classwise", "selection": cp.LabelSelection([0, 2])},
    "selection two": lambda: {
        "lens": "classwise",
        "selection": [cp.LabelSelection([1, 2]), cp.threshold(0.1)],
    },
    "estimator equal_width left": lambda: {"estimator": cp.EqualWidth(7, "left")},
    "estimator fixed_edges": lambda: {
        "estimator": cp.FixedEdges([0.0, 0.1, 1 / 3, 0.7, 1.0], closed="left"),
    },
    "estimator fixed_edges right": lambda: {"estimator": cp.FixedEdges([0.0, 0.5, 1.0])},
    "estimator equal_mass": lambda: {"estimator": cp.EqualMass(5, "nixon")},
    "divergence names": lambda: {"divergence": "squared_l2"},
    "divergence tvd name": lambda: {"divergence": "tvd"},
    "divergence kl name": lambda: {"divergence": "kl"},
    "divergence l2 name": lambda: {"divergence": "l2"},
    "divergence Lp": lambda: {"divergence": cp.Lp(3.0, False)},
    "divergence Lp root": lambda: {"divergence": cp.Lp(1.5)},
    "divergence TVD": lambda: {"divergence": cp.TVD()},
    "divergence KL": lambda: {"divergence": cp.KL()},
}

#: The streamable presets and their keywords.
PRESETS: dict[str, dict[str, Any]] = {
    "ece": {"n_bins": 5},
    "mce": {"n_bins": 5, "edge_rule": "left"},
    "bin_averaged_ece": {},
    "rmsce": {},
    "top_label_ece": {},
    "sce": {"n_bins": 5, "threshold": 0.05},
    "classwise_ece": {"reduction": "sum"},
    "tce_p": {"p": 3.0, "root": False},
    "cwce_p": {},
    "top_k_ece": {"k": 2},
    "ace": {"n_bins": 4},
    "tace": {},
}


def _data(binary: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Deterministic scores, labels and weights (no random generator)."""
    i = np.arange(40)
    if binary:
        p = (np.sin(i * 1.7) + 1.0) / 2.05 + 0.01
        return p, (np.cos(i * 2.3) > 0.2 - p).astype(np.int64), 0.5 + (i % 3)
    raw = np.stack([1.5 + np.sin(i * (c + 1.3)) for c in range(4)], axis=1)
    return raw / raw.sum(1, keepdims=True), i * 7 % 4, 0.5 + (i % 3)


def _states() -> dict[str, CalibrationState]:
    out = {name: CalibrationState(**kw()) for name, kw in CONFIGS.items()}
    out.update({f"preset {m}": CalibrationState.for_metric(m, **kw) for m, kw in PRESETS.items()})
    return out


STATES = sorted(_states())


def test_every_configuration_is_saved() -> None:
    assert sorted(json.loads(SAVED.read_text())) == STATES


@pytest.mark.parametrize("name", STATES)
def test_config_json_is_unchanged(name: str) -> None:
    """The configuration is written byte for byte as before (older files stay readable)."""
    saved = json.loads(SAVED.read_text())[name]
    st = _states()[name]
    assert json.dumps(st.config) == saved
    # and a state read from that configuration writes it again
    assert json.dumps(CalibrationState._from_config(json.loads(saved)).config) == saved


@pytest.mark.parametrize("name", STATES)
def test_state_round_trips(name: str) -> None:
    """A state with totals reads back to the same JSON and the same values."""
    st = _states()[name]
    P, y, w = _data(binary=name == "lens binary")
    st.update(P[:25], y[:25], sample_weight=w[:25])
    st.update(P[25:], y[25:], sample_weight=w[25:])
    text = st.to_json()
    back = CalibrationState.from_json(text)
    assert back.to_json() == text
    assert back.compute() == st.compute()
    assert back.nll() == st.nll()


@pytest.mark.parametrize("name", [n for n in CONFIGS if "equal_mass" not in n])
def test_state_equals_the_in_memory_error(name: str) -> None:
    """The parts read back from the configuration are the ones given: the streamed value
    is :func:`calipers.calibration_error` of the same arguments on all the data."""
    kw = CONFIGS[name]()
    P, y, w = _data(binary=name == "lens binary")
    st = CalibrationState.from_json(CalibrationState(**kw).to_json())
    st.update(P[:25], y[:25], sample_weight=w[:25])
    st.update(P[25:], y[25:], sample_weight=w[25:])
    expected = cp.calibration_error(P, y, sample_weight=w, **kw)
    assert st.compute() == pytest.approx(expected, rel=1e-12, abs=1e-15)
