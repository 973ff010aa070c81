"""One test per input-validation rule of ``calipers.check_predictions``.

Every rejection must be a :class:`calipers.CalibrationInputError` (a
``ValueError``) whose message names the rule and the first offending row /
column / value; every acceptance must keep the caller's array as it is.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import calipers as cp
from calipers import CalibrationInputError, check_predictions

# three valid 2-class rows used as the base of most cases
P2 = np.array([[0.5, 0.5], [0.2, 0.8], [0.9, 0.1]])
Y2 = np.array([0, 1, 0])
P3 = np.array([[0.6, 0.3, 0.1], [0.4, 0.4, 0.2], [0.2, 0.5, 0.3]])
Y3 = np.array([0, 1, 2])


def _with(base: np.ndarray, idx: tuple[int, ...], value: float) -> np.ndarray:
    out = base.copy()
    out[idx] = value
    return out


def test_error_type_is_a_value_error() -> None:
    assert issubclass(CalibrationInputError, ValueError)
    with pytest.raises(ValueError):
        check_predictions(_with(P2, (1, 1), np.nan), Y2)


# ----------------------------------------------------------------------------- values of probs


def test_nan_in_probs_names_row_and_column() -> None:
    with pytest.raises(CalibrationInputError, match=r"non-finite value.*nan.*row 1, column 1"):
        check_predictions(_with(P2, (1, 1), np.nan), Y2)


def test_pos_inf_in_probs_names_row_and_column() -> None:
    with pytest.raises(CalibrationInputError, match=r"non-finite value.*inf.*row 2, column 0"):
        check_predictions(_with(P2, (2, 0), np.inf), Y2)


def test_neg_inf_in_probs_names_row_and_column() -> None:
    with pytest.raises(CalibrationInputError, match=r"non-finite value.*-inf.*row 0, column 1"):
        check_predictions(_with(P2, (0, 1), -np.inf), Y2)


def test_nan_in_binary_probs_names_row() -> None:
    with pytest.raises(CalibrationInputError, match=r"non-finite value.*nan.*row 2"):
        check_predictions(np.array([0.2, 0.7, np.nan]), [0, 1, 1])


def test_negative_prob_rejected() -> None:
    P = P2.copy()
    P[1] = [-0.1, 1.1]  # row sum still 1: only the range rule can catch it
    with pytest.raises(CalibrationInputError, match=r"\[0, 1\].*-0\.1.*row 1, column 0"):
        check_predictions(P, Y2)


def test_prob_above_one_rejected() -> None:
    P = P2.copy()
    P[2] = [1.2, -0.2]
    with pytest.raises(CalibrationInputError, match=r"\[0, 1\].*1\.2.*row 2, column 0"):
        check_predictions(P, Y2)


def test_binary_prob_out_of_range_rejected() -> None:
    with pytest.raises(CalibrationInputError, match=r"\[0, 1\].*1\.5.*row 1"):
        check_predictions(np.array([0.2, 1.5, 0.3]), [0, 1, 1])
    with pytest.raises(CalibrationInputError, match=r"\[0, 1\].*-0\.5.*row 0"):
        check_predictions(np.array([-0.5, 0.5, 0.3]), [0, 1, 1])


def test_row_sum_not_one_names_row() -> None:
    P = _with(P2, (2, 1), 0.2)  # row 2 = [0.9, 0.2], sums to 1.1
    with pytest.raises(CalibrationInputError, match=r"row 2 of probs sums to 1\.1, not 1"):
        check_predictions(P, Y2)


def test_row_sum_short_of_one_names_row() -> None:
    P = _with(P2, (1, 1), 0.5)  # row 1 = [0.2, 0.5], sums to 0.7
    with pytest.raises(CalibrationInputError, match=r"row 1 of probs sums to 0\.7, not 1"):
        check_predictions(P, Y2)


def test_row_sum_tolerance_boundary() -> None:
    # default tolerance for float64 is 1e-4 (absolute)
    ok = _with(P2, (2, 1), 0.1 + 9e-5)
    check_predictions(ok, Y2)
    bad = _with(P2, (2, 1), 0.1 + 1.1e-4)
    with pytest.raises(CalibrationInputError, match=r"row 2 of probs sums to 1\.00011"):
        check_predictions(bad, Y2)
    # an explicit sum_tol is honoured
    check_predictions(bad, Y2, sum_tol=2e-4)


def test_imdb_like_sum_error_passes() -> None:
    # IMDB (cleanlab label-errors) rows sum to 1 only within 2e-5
    P = np.array([[0.99999, 0.00003], [0.25, 0.75], [0.00002, 1.0]])
    assert np.max(np.abs(P.sum(1) - 1)) == pytest.approx(2e-5)
    out = check_predictions(P, [0, 1, 1])
    assert out.probs is P


def test_imdb_rows_accepted_by_default() -> None:
    # rows 13 and 21 of ../shared/data/labelerrors_imdb.npz, copied verbatim: float32
    # rounding puts the top probability just above 1 (by 1.2e-6 and 1.0e-5) and the
    # row sums 2e-5 above 1; the IMDB file is specified to be accepted by default
    P = np.array(
        [
            [1.0000011920928955, 1.88354588317452e-05],
            [1.0000100135803223, 1.000006068352377e-05],
            [0.25, 0.75],
        ]
    )
    out = check_predictions(P, [0, 0, 1])
    assert out.probs is P


def test_renormalize_fixes_row_sums() -> None:
    P = np.array([[0.5, 0.3], [0.1, 0.3], [0.45, 0.05]])
    with pytest.raises(CalibrationInputError, match=r"row 0 of probs sums to 0\.8"):
        check_predictions(P, Y2)
    out = check_predictions(P, Y2, renormalize=True)
    np.testing.assert_allclose(out.probs, [[0.625, 0.375], [0.25, 0.75], [0.9, 0.1]], rtol=1e-15)
    np.testing.assert_allclose(out.probs.sum(1), 1.0, rtol=1e-15)
    np.testing.assert_array_equal(P, [[0.5, 0.3], [0.1, 0.3], [0.45, 0.05]])  # input untouched
    # unnormalised non-negative scores (e.g. counts) are divided by their row sums too
    counts = check_predictions(np.array([[2.0, 2.0], [1.0, 3.0]]), [0, 1], renormalize=True)
    np.testing.assert_allclose(counts.probs, [[0.5, 0.5], [0.25, 0.75]], rtol=1e-15)


def test_renormalize_zero_row_rejected() -> None:
    P = np.array([[0.0, 0.0], [0.2, 0.8]])
    with pytest.raises(CalibrationInputError, match=r"row 0 of probs sums to 0"):
        check_predictions(P, [0, 1], renormalize=True)


def test_clip_fixes_out_of_range() -> None:
    P = np.array([[1 + 1e-3, -1e-3], [0.3, 0.7]])
    with pytest.raises(CalibrationInputError, match=r"\[0, 1\].*row 0, column 0"):
        check_predictions(P, [0, 1])
    out = check_predictions(P, [0, 1], clip=True)
    np.testing.assert_array_equal(out.probs, [[1.0, 0.0], [0.3, 0.7]])


def test_rounding_outside_unit_interval_within_tolerance_is_kept_unchanged() -> None:
    # float32 rounding like 1.0000012 (seen in the IMDB file) is accepted, not clipped
    P = np.array([[1 + 1e-6, -1e-6], [0.3, 0.7]])
    out = check_predictions(P, [0, 1])
    np.testing.assert_array_equal(out.probs, P)
    with pytest.raises(CalibrationInputError, match=r"\[0, 1\]; found 1.0002 at row 0, column 0"):
        check_predictions(np.array([[1.0002, -0.0002]]), [0], sum_tol=1e-4)


def test_clip_does_not_hide_nan() -> None:
    with pytest.raises(CalibrationInputError, match=r"non-finite.*row 1, column 1"):
        check_predictions(_with(P2, (1, 1), np.nan), Y2, clip=True)


# ----------------------------------------------------------------------------- labels


def test_negative_label_rejected() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"labels must be in \[0, 3\); found -1 at row 2"
    ):
        check_predictions(P3, [0, 1, -1])


def test_label_equal_to_k_rejected() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"labels must be in \[0, 3\); found 3 at row 1"
    ):
        check_predictions(P3, [0, 3, 1])


def test_binary_label_two_rejected() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"labels must be in \[0, 2\); found 2 at row 0"
    ):
        check_predictions(np.array([0.1, 0.9]), [2, 1])


def test_non_integer_float_label_rejected() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"labels must be integers; found .*0\.5.* row 1"
    ):
        check_predictions(P3, np.array([0.0, 0.5, 1.0]))


def test_nan_label_rejected() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"labels must be integers; found .*nan.* row 2"
    ):
        check_predictions(P3, np.array([0.0, 1.0, np.nan]))


def test_integral_float_labels_accepted() -> None:
    out = check_predictions(P3, np.array([0.0, 2.0, 1.0]))
    assert out.labels.dtype == np.int64
    np.testing.assert_array_equal(out.labels, [0, 2, 1])


def test_bool_labels_accepted_for_binary() -> None:
    out = check_predictions(np.array([0.2, 0.7, 0.5]), np.array([True, False, True]))
    np.testing.assert_array_equal(out.labels, [1, 0, 1])
    out2 = check_predictions(P2, [True, False, True])  # (n, 2) is binary too
    np.testing.assert_array_equal(out2.labels, [1, 0, 1])


def test_bool_labels_rejected_for_more_than_two_classes() -> None:
    with pytest.raises(CalibrationInputError, match=r"boolean labels.*binary.*3 classes"):
        check_predictions(P3, np.array([True, False, True]))


def test_one_hot_labels_accepted() -> None:
    out = check_predictions(P3, np.eye(3)[[2, 0, 1]])
    np.testing.assert_array_equal(out.labels, [2, 0, 1])
    assert out.labels.dtype == np.int64


def test_one_hot_with_two_ones_rejected() -> None:
    Y = np.array([[1, 0, 0], [0, 1, 1], [0, 0, 1]])
    with pytest.raises(CalibrationInputError, match=r"exactly one 1 per row; row 1 has 2"):
        check_predictions(P3, Y)


def test_one_hot_with_no_one_rejected() -> None:
    Y = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0]])
    with pytest.raises(CalibrationInputError, match=r"exactly one 1 per row; row 2 has 0"):
        check_predictions(P3, Y)


def test_one_hot_with_fractions_rejected() -> None:
    Y = np.array([[1.0, 0, 0], [0, 0.5, 0.5], [0, 0, 1]])
    with pytest.raises(
        CalibrationInputError, match=r"only 0 and 1; found .*0\.5.* row 1, column 1"
    ):
        check_predictions(P3, Y)


def test_string_labels_without_classes_ask_for_classes() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"labels are not class indices .*'a' at row 0.*pass classes="
    ):
        check_predictions(P2, np.array(["a", "b", "a"]))


# ----------------------------------------------------------------------------- shapes


def test_label_length_mismatch() -> None:
    with pytest.raises(CalibrationInputError, match=r"labels has 2 entries but probs has 3 rows"):
        check_predictions(P3, [0, 1])


def test_2d_labels_of_wrong_width_rejected() -> None:
    with pytest.raises(CalibrationInputError, match=r"labels must be a 1-D array.*shape \(3, 2\)"):
        check_predictions(P3, np.zeros((3, 2), dtype=int))


def test_3d_probs_rejected() -> None:
    with pytest.raises(CalibrationInputError, match=r"shape \(n, k\) or \(n,\); got \(1, 3, 3\)"):
        check_predictions(P3[None], Y3)


def test_empty_input_rejected() -> None:
    with pytest.raises(CalibrationInputError, match=r"empty \(0 rows\)"):
        check_predictions(np.zeros((0, 3)), np.zeros(0, dtype=int))
    with pytest.raises(CalibrationInputError, match=r"empty \(0 rows\)"):
        check_predictions(np.zeros(0), np.zeros(0, dtype=int))


def test_single_column_rejected() -> None:
    with pytest.raises(CalibrationInputError, match=r"1 column.*k >= 2.*shape \(n,\)"):
        check_predictions(np.ones((3, 1)), [0, 0, 0])


def test_ragged_list_rejected() -> None:
    with pytest.raises(CalibrationInputError, match=r"probs (could not be converted|.*ragged)"):
        check_predictions([[0.5, 0.5], [1.0]], [0, 0])


def test_string_probs_rejected() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"probs must be a real numeric array; got dtype <U"
    ):
        check_predictions(np.array([["0.5", "0.5"]]), [0])


# ----------------------------------------------------------------------------- sample weights


def test_negative_sample_weight_rejected() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"sample_weight must be non-negative; found .*-1\.0.* at row 1"
    ):
        check_predictions(P2, Y2, sample_weight=[1.0, -1.0, 1.0])


def test_nan_sample_weight_rejected() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"sample_weight must be finite; found .*nan.* row 2"
    ):
        check_predictions(P2, Y2, sample_weight=[1.0, 1.0, np.nan])


def test_inf_sample_weight_rejected() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"sample_weight must be finite; found .*inf.* row 0"
    ):
        check_predictions(P2, Y2, sample_weight=[np.inf, 1.0, 1.0])


@pytest.mark.parametrize("w", [[1.0, 1.0], [[1.0, 1.0, 1.0]], [1.0, 1.0, 1.0, 1.0]])
def test_sample_weight_wrong_shape_rejected(w: list) -> None:
    shape = re.escape(str(np.asarray(w).shape))
    with pytest.raises(
        CalibrationInputError, match=rf"sample_weight must have shape \(3,\); got {shape}"
    ):
        check_predictions(P2, Y2, sample_weight=w)


def test_all_zero_sample_weight_rejected() -> None:
    with pytest.raises(CalibrationInputError, match=r"sample_weight sums to 0"):
        check_predictions(P2, Y2, sample_weight=[0.0, 0.0, 0.0])


def test_valid_sample_weight_kept_as_float64() -> None:
    out = check_predictions(P2, Y2, sample_weight=[1, 0, 2])
    assert out.sample_weight.dtype == np.float64
    np.testing.assert_array_equal(out.sample_weight, [1.0, 0.0, 2.0])


# ----------------------------------------------------------------------------- logits


def test_logits_with_inf_rejected() -> None:
    z = np.array([[1.0, 2.0], [0.5, np.inf], [0.0, 0.0]])
    with pytest.raises(
        CalibrationInputError, match=r"logits contain a non-finite value.*inf.*row 1, column 1"
    ):
        check_predictions(z, Y2, logits=True)


def test_logits_with_nan_binary_rejected() -> None:
    with pytest.raises(
        CalibrationInputError, match=r"logits contain a non-finite value.*nan.*row 1"
    ):
        check_predictions(np.array([0.3, np.nan]), [0, 1], logits=True)


def test_logits_outside_unit_interval_accepted() -> None:
    z = np.array([[3.0, -2.0], [-10.0, 10.0]])
    out = check_predictions(z, [0, 1], logits=True)
    e = np.exp(z)
    np.testing.assert_allclose(out.probs, e / e.sum(1, keepdims=True), rtol=1e-14)
    assert out.logits is z


# ----------------------------------------------------------------------------- accepted input


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_valid_input_not_copied(dtype: type) -> None:
    P = P3.astype(dtype)
    out = check_predictions(P, Y3)
    assert np.shares_memory(out.probs, P)
    assert out.probs.dtype == dtype


def test_valid_binary_input_not_copied() -> None:
    p = np.array([0.1, 0.6, 0.9])
    out = check_predictions(p, [0, 1, 1])
    assert np.shares_memory(out.probs, p)
    assert out.binary and out.n_classes == 2


def test_float16_kept_as_float16() -> None:
    P = P3.astype(np.float16)
    out = check_predictions(P, Y3)
    assert out.probs.dtype == np.float16
    assert np.shares_memory(out.probs, P)


def test_integer_probs_become_float64() -> None:
    out = check_predictions(np.array([[1, 0], [0, 1]]), [0, 1])
    assert out.probs.dtype == np.float64


def test_validate_false_skips_value_checks() -> None:
    bad = np.array([[1.5, 0.5], [np.nan, 0.3], [0.9, 0.9]])
    out = check_predictions(bad, Y2, validate=False)
    assert out.probs is bad
    # shapes and labels are still checked
    with pytest.raises(
        CalibrationInputError, match=r"labels must be in \[0, 2\); found 5 at row 2"
    ):
        check_predictions(bad, [0, 1, 5], validate=False)
    with pytest.raises(CalibrationInputError, match=r"labels has 2 entries"):
        check_predictions(bad, [0, 1], validate=False)


def test_validate_false_gives_same_metric_on_valid_input() -> None:
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(4), size=200)
    y = rng.integers(0, 4, size=200)
    assert cp.ece(P, y, validate=False) == cp.ece(P, y)
    assert cp.nll(P, y, validate=False) == cp.nll(P, y)


@pytest.mark.parametrize(
    "metric",
    [
        cp.ece,
        cp.mce,
        cp.sce,
        cp.ace,
        cp.tace,
        cp.rmsce,
        cp.classwise_ece,
        cp.full_ece,
        cp.tce_p,
        cp.nll,
        cp.brier,
        cp.accuracy,
        cp.murphy_decomposition,
        cp.corp_decomposition,
        cp.calibration_error,
    ],
)
def test_every_entry_point_validates(metric) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CalibrationInputError, match=r"non-finite value.*row 1, column 2"):
        metric(_with(P3, (1, 2), np.nan), Y3)
