"""Tests for the shipped default predictions (calipers.datasets)."""

from __future__ import annotations

import dataclasses
from importlib import resources

import numpy as np
import pytest

from calipers.datasets import DefaultPredictions, load_default_predictions

N = 1797
N_CLASSES = 10
MODEL_NAMES = ("gaussian_nb", "random_forest", "logistic_regression")


@pytest.fixture(scope="module")
def data() -> DefaultPredictions:
    return load_default_predictions()


def _accuracy_and_confidence(probs: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    accuracy = float(np.mean(probs.argmax(axis=1) == labels))
    confidence = float(np.mean(probs.max(axis=1)))
    return accuracy, confidence


def test_npz_loads_without_pickle() -> None:
    resource = resources.files("calipers.datasets") / "default_predictions.npz"
    with resource.open("rb") as fh, np.load(fh, allow_pickle=False) as f:
        files = set(f.files)
        for key in f.files:
            assert f[key].dtype != object, key
    expected = {"labels", "model_names", "is_calibration", "description"}
    expected |= {f"probs_{name}" for name in MODEL_NAMES}
    expected |= {"logits_logistic_regression"}
    assert files == expected


def test_npz_is_small() -> None:
    resource = resources.files("calipers.datasets") / "default_predictions.npz"
    with resource.open("rb") as fh:
        size = len(fh.read())
    assert size < 1_000_000


def test_fields_and_types(data: DefaultPredictions) -> None:
    assert isinstance(data, DefaultPredictions)
    assert data.model_names == MODEL_NAMES
    assert tuple(data.probs) == MODEL_NAMES
    assert set(data.logits) == {"logistic_regression"}
    assert isinstance(data.description, str)
    assert "load_digits" in data.description
    assert "StratifiedKFold" in data.description
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.labels = np.zeros(3)  # type: ignore[misc]


def test_labels(data: DefaultPredictions) -> None:
    assert data.labels.shape == (N,)
    assert data.labels.dtype == np.int64
    assert data.labels.min() >= 0
    assert data.labels.max() < N_CLASSES
    assert np.unique(data.labels).size == N_CLASSES


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_probabilities(data: DefaultPredictions, name: str) -> None:
    probs = data.probs[name]
    assert probs.shape == (N, N_CLASSES)
    assert probs.dtype == np.float64
    assert np.all(np.isfinite(probs))
    assert np.all(probs >= 0.0)
    assert np.all(probs <= 1.0)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=0.0, atol=1e-9)


def test_logits_match_probabilities(data: DefaultPredictions) -> None:
    logits = data.logits["logistic_regression"]
    assert logits.shape == (N, N_CLASSES)
    assert logits.dtype == np.float64
    assert np.all(np.isfinite(logits))
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    softmax = shifted / shifted.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(softmax, data.probs["logistic_regression"], rtol=0.0, atol=1e-9)


def test_models_are_reasonable_classifiers(data: DefaultPredictions) -> None:
    # Measured: gaussian_nb 0.851, random_forest 0.973, logistic_regression 0.966.
    floors = {"gaussian_nb": 0.80, "random_forest": 0.95, "logistic_regression": 0.95}
    for name, floor in floors.items():
        accuracy, _ = _accuracy_and_confidence(data.probs[name], data.labels)
        assert accuracy > floor, name


def test_gaussian_nb_is_over_confident(data: DefaultPredictions) -> None:
    # Measured: confidence - accuracy = +0.137 (about +0.13/+0.15 in each half).
    accuracy, confidence = _accuracy_and_confidence(data.probs["gaussian_nb"], data.labels)
    assert confidence - accuracy > 0.05


def test_random_forest_is_under_confident(data: DefaultPredictions) -> None:
    # Measured: confidence - accuracy = -0.201 (about -0.20 in each half).
    accuracy, confidence = _accuracy_and_confidence(data.probs["random_forest"], data.labels)
    assert confidence - accuracy < -0.05


def test_logistic_regression_is_nearly_calibrated(data: DefaultPredictions) -> None:
    # Measured: confidence - accuracy = -0.004 (-0.003 / -0.005 in the halves).
    accuracy, confidence = _accuracy_and_confidence(data.probs["logistic_regression"], data.labels)
    assert abs(confidence - accuracy) < 0.02


@pytest.mark.parametrize("half", ["calibration", "test"])
def test_calibration_claims_hold_in_each_half(data: DefaultPredictions, half: str) -> None:
    mask = data.is_calibration if half == "calibration" else ~data.is_calibration
    labels = data.labels[mask]
    gaps = {}
    for name in MODEL_NAMES:
        accuracy, confidence = _accuracy_and_confidence(data.probs[name][mask], labels)
        gaps[name] = confidence - accuracy
    assert gaps["gaussian_nb"] > 0.05
    assert gaps["random_forest"] < -0.05
    assert abs(gaps["logistic_regression"]) < 0.03


def test_is_calibration_split_is_stratified(data: DefaultPredictions) -> None:
    is_cal = data.is_calibration
    assert is_cal.shape == (N,)
    assert is_cal.dtype == np.bool_
    n_cal = int(is_cal.sum())
    assert abs(n_cal - (N - n_cal)) <= 1
    cal_counts = np.bincount(data.labels[is_cal], minlength=N_CLASSES)
    test_counts = np.bincount(data.labels[~is_cal], minlength=N_CLASSES)
    assert np.all(np.abs(cal_counts - test_counts) <= 1)


def test_each_call_returns_fresh_arrays() -> None:
    first = load_default_predictions()
    first.probs["gaussian_nb"][:] = -1.0
    first.labels[:] = -1
    second = load_default_predictions()
    assert np.all(second.probs["gaussian_nb"] >= 0.0)
    assert np.all(second.labels >= 0)
