"""Recalibrators judge their inputs exactly as the metrics do.

Every registered recalibrator, every entry point that takes scores, labels or
weights (``fit``, ``predict_proba``, ``predict``, ``cross_val_predict_proba``,
``cross_val_score``), and a table of bad inputs: each call must raise a
:class:`CalibrationInputError` (never a TypeError, AttributeError, IndexError
or a silent conversion), and when the kind of scores is told
(``logits=True/False``) the message must be the one :func:`calipers.ece` gives
for the same scores, labels and weights. Inputs the metrics accept
(float16 and bfloat16 scores among them) are accepted, with the values as given.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import calipers as cp
import calipers.recalibration as recal
from calipers.recalibration import base
from calipers.recalibration.split import cross_val_predict_proba, cross_val_score
from calipers.validation import CalibrationInputError

for _mod in pkgutil.iter_modules(recal.__path__):
    importlib.import_module(f"{recal.__name__}.{_mod.name}")

METHODS = sorted(
    name for name, c in base._REGISTRY.items() if c.__module__.startswith("calipers.recalibration")
)
KINDS = ("multiclass", "binary")
N, K = 60, 3

# ----------------------------------------------------------------------------- data


def _softmax(z: np.ndarray) -> np.ndarray:
    if z.ndim == 1:
        return 1.0 / (1.0 + np.exp(-z))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _data(kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    if kind == "binary":
        z = 2.0 * rng.standard_normal(N)
        y = (rng.random(N) < _softmax(z / 2)).astype(np.int64)
        return z, y
    z = 2.0 * rng.standard_normal((N, K)) + [0.3, 0.0, -0.2]
    p = _softmax(z / 2)
    y = np.minimum((rng.random(N)[:, None] > np.cumsum(p, axis=1)).sum(axis=1), K - 1)
    return z, y


DATA = {kind: _data(kind) for kind in KINDS}
_BINARY_ONLY = re.compile(r"binary method")


def _supported(name: str, kind: str) -> bool:
    z, y = DATA[kind]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            base._REGISTRY[name]().fit(z, y, logits=True)
    except CalibrationInputError as exc:
        if _BINARY_ONLY.search(str(exc)):
            return False
        raise
    return True


PAIRS = [(m, k) for m in METHODS for k in KINDS if _supported(m, k)]

# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Bad:
    """One bad input: what it is, where it goes, and a pattern its message must match."""

    what: str
    target: str  # "scores", "labels" or "sample_weight"
    value: Any
    pattern: str
    told: tuple[bool | None, ...] = (True, False, None)  # the logits= values it is bad under
    same_as_metrics: bool = True


def _with(a: np.ndarray, idx: Any, v: float) -> np.ndarray:
    out = np.array(a, dtype=np.float64)
    out[idx] = v
    return out


def bad_scores(kind: str, told: bool | None) -> list[Bad]:
    """Scores the metrics refuse under ``logits=told`` (None: the recalibrator's reading)."""
    z, _ = DATA[kind]
    s = _softmax(z) if told is False else z
    at = 3 if kind == "binary" else (3, 1)
    cases = [
        Bad("complex", "scores", s + 1j, r"real"),
        Bad("numeric strings", "scores", s.astype(str), r"real numeric array; got dtype <U"),
        Bad("object array", "scores", s.astype(object), r"Python objects"),
        Bad("None", "scores", None, r"Python objects"),
        Bad("ragged list", "scores", [[0.2, 0.8], [1.0]], r"could not be converted"),
        Bad("3-D", "scores", s.reshape(N, -1, 1), r"shape"),
        Bad("scalar", "scores", np.float64(0.5), r"shape"),
        Bad("empty", "scores", s[:0], r"empty"),
        # one column (n, 1) is valid: binary scores of class 1 (test_sklearn.py)
        Bad("no column", "scores", s.reshape(N, -1)[:, :0], r"0 column"),
        Bad("NaN", "scores", _with(s, at, np.nan), r"nan"),
        Bad("+inf", "scores", _with(s, at, np.inf), r"inf"),
        Bad("-inf", "scores", _with(s, at, -np.inf), r"inf"),
    ]
    if told is False:
        off = 1.3 * s if kind == "multiclass" else s + 1.0
        cases.append(Bad("off the simplex", "scores", off, r"sums to|lie in \[0, 1\]"))
        cases.append(Bad("negative", "scores", _with(s, at, -0.2), r"lie in \[0, 1\]"))
    return [c for c in cases if told in c.told]


def bad_labels(kind: str) -> list[Bad]:
    _, y = DATA[kind]
    k = 2 if kind == "binary" else K
    # string labels name the columns in sorted order when there is one per column (valid
    # input, tested in test_sklearn.py); otherwise the recalibrators ask for classes=, and
    # the metrics (which never infer classes) refuse strings with another message
    other = 3 if kind == "binary" else 2
    names = np.array(["ant", "bee", "cat"])[np.arange(N) % other]
    return [
        Bad("no labels", "labels", None, r"needs labels", same_as_metrics=False),
        Bad(
            f"{other} string classes for {k} columns",
            "labels",
            names,
            rf"labels name {other} classes .*Pass classes=",
            same_as_metrics=False,
        ),
        Bad("fractional", "labels", y + 0.5, r"labels must be integers; found \d\.5 at row 0"),
        Bad("NaN", "labels", _with(y, 2, np.nan), r"labels must be integers; found nan"),
        Bad("out of range", "labels", _with(y, 2, k).astype(int), rf"in \[0, {k}\); found {k}"),
        Bad("negative", "labels", _with(y, 2, -1).astype(int), r"found -1"),
        Bad("too few", "labels", y[:-1], rf"labels has {N - 1} entries"),
        Bad("complex", "labels", y + 0j, r"labels must be integers or booleans"),
        Bad("one-hot with 0.5", "labels", np.full((N, k), 0.5), r"only 0 and 1"),
    ]


def bad_weights() -> list[Bad]:
    w = np.ones(N)
    return [
        Bad("negative", "sample_weight", _with(w, 4, -1.0), r"non-negative"),
        Bad("NaN", "sample_weight", _with(w, 4, np.nan), r"finite"),
        Bad("inf", "sample_weight", _with(w, 4, np.inf), r"finite"),
        Bad("too few", "sample_weight", w[:-1], r"shape"),
        Bad("strings", "sample_weight", w.astype(str), r"numeric"),
        Bad("all zero", "sample_weight", np.zeros(N), r"sums to 0|positive weight"),
        Bad("2-D", "sample_weight", w[:, None], r"shape"),
        Bad("complex", "sample_weight", w + 1j, r"numeric"),
    ]


@dataclass(frozen=True)
class Call:
    """One (function, bad input) pair and the metrics' verdict on the same input."""

    function: str
    bad: Bad
    told: bool | None
    run: Callable[[], Any]
    metrics: Callable[[], Any] | None


_FITTED: dict[tuple[str, str], base.Recalibrator] = {}


def _fitted(name: str, kind: str) -> base.Recalibrator:
    if (name, kind) not in _FITTED:
        z, y = DATA[kind]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _FITTED[name, kind] = base._REGISTRY[name]().fit(z, y, logits=True)
    return _FITTED[name, kind]


def calls(name: str, kind: str) -> Iterator[Call]:
    """Every (function, bad input) pair for one method and kind of problem."""
    cls = base._REGISTRY[name]
    z, y = DATA[kind]
    p = _softmax(z)

    def good(told: bool | None) -> np.ndarray:
        return p if told is False else z

    def n_rows(s: Any) -> int:
        shape = np.shape(s) if isinstance(s, np.ndarray) else ()
        return int(shape[0]) if shape else 1

    for told in (True, False, None):
        for bad in bad_scores(kind, told):
            s = bad.value
            rc = _fitted(name, kind)

            def metrics(s: Any = s, t: bool = bool(told)) -> Any:
                return cp.ece(s, np.zeros(n_rows(s), dtype=np.int64), logits=t)

            ref = None if told is None else metrics
            yield Call("fit", bad, told, lambda s=s, t=told: cls().fit(s, y, logits=t), ref)
            yield Call(
                "predict_proba",
                bad,
                told,
                lambda s=s, t=told, rc=rc: rc.predict_proba(s, logits=t),
                ref,
            )
            yield Call(
                "predict", bad, told, lambda s=s, t=told, rc=rc: rc.predict(s, logits=t), ref
            )
            yield Call(
                "cross_val_predict_proba",
                bad,
                told,
                lambda s=s, t=told: cross_val_predict_proba(cls(), s, y, logits=t, n_splits=2),
                ref,
            )
        for bad in bad_labels(kind) + bad_weights():
            kw = {bad.target: bad.value}
            args = {"labels": y, "sample_weight": None, **kw}
            s = good(told)
            ref = None
            if told is not None and bad.same_as_metrics:
                ref = lambda s=s, a=args, t=bool(told): cp.ece(  # noqa: E731
                    s, a["labels"], logits=t, sample_weight=a["sample_weight"]
                )
            yield Call(
                "fit",
                bad,
                told,
                lambda s=s, a=args, t=told: cls().fit(
                    s, a["labels"], logits=t, sample_weight=a["sample_weight"]
                ),
                ref,
            )
            yield Call(
                "cross_val_score",
                bad,
                told,
                lambda s=s, a=args, t=told: cross_val_score(
                    cls(), s, a["labels"], logits=t, n_splits=2, sample_weight=a["sample_weight"]
                ),
                ref,
            )


def _outcome(call: Call) -> tuple[str, str]:
    """("CalibrationInputError" | exception name | "accepted", message)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call.run()
    except CalibrationInputError as exc:
        return "CalibrationInputError", str(exc)
    except Exception as exc:  # noqa: BLE001 - the point is to see which
        return type(exc).__name__, str(exc)
    return "accepted", ""


def _metrics_message(call: Call) -> str | None:
    if call.metrics is None:
        return None
    try:
        call.metrics()
    except CalibrationInputError as exc:
        return str(exc)
    raise AssertionError(f"the metrics accept {call.bad.what} ({call.bad.target}); fix the table")


# ----------------------------------------------------------------------------- the tests


_FUNCTIONS = {"fit", "predict_proba", "predict", "cross_val_predict_proba", "cross_val_score"}


@pytest.mark.parametrize(("name", "kind"), PAIRS)
def test_every_bad_input_gives_the_metrics_verdict(name: str, kind: str) -> None:
    problems = []
    count = 0
    functions = set()
    for call in calls(name, kind):
        count += 1
        functions.add(call.function)
        where = f"{call.function}({call.bad.target}: {call.bad.what}, logits={call.told})"
        got, msg = _outcome(call)
        if got != "CalibrationInputError":
            problems.append(f"{where}: {got} {msg[:80]}")
            continue
        if not re.search(call.bad.pattern, msg):
            problems.append(f"{where}: message does not say /{call.bad.pattern}/: {msg[:120]}")
        expected = _metrics_message(call)
        if expected is not None and msg != expected:
            problems.append(f"{where}: message differs from cp.ece's:\n  {msg}\n  {expected}")
    assert count > 100 and functions == _FUNCTIONS
    assert not problems, f"{len(problems)} of {count} calls:\n" + "\n".join(problems)


# ----------------------------------------------------------------------------- accepted inputs


try:
    import torch as _torch
except ImportError:  # pragma: no cover - torch is installed for the tests
    _torch = None


def _cases_the_metrics_accept(kind: str) -> dict[str, tuple[Any, bool]]:
    """Scores in dtypes the metrics accept: (scores, logits)."""
    z, _ = DATA[kind]
    p = _softmax(z)
    out: dict[str, tuple[Any, bool]] = {
        "float16 probabilities": (p.astype(np.float16), False),
        "float16 logits": (z.astype(np.float16), True),
    }
    try:
        import torch
    except ImportError:
        return out
    out["torch bfloat16 probabilities"] = (torch.tensor(p).to(torch.bfloat16), False)
    out["torch bfloat16 logits"] = (torch.tensor(z).to(torch.bfloat16), True)
    out["torch float16 probabilities"] = (torch.tensor(p).to(torch.float16), False)
    return out


@pytest.mark.parametrize(("name", "kind"), PAIRS)
def test_low_precision_scores_accepted_where_the_metrics_accept_them(name: str, kind: str) -> None:
    cls = base._REGISTRY[name]
    _, y = DATA[kind]
    for what, (s, told) in _cases_the_metrics_accept(kind).items():
        cp.ece(s, y, logits=told)  # the metrics accept them (else this table is wrong)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            low = cls().fit(s, y, logits=told)
            # what the validation layer makes of the same input, passed on as it is
            via = cls().fit(cp.check_predictions(s, y, logits=told), None)
        # the float64 probabilities, and what predict_proba returns: the same values in the
        # input's array type and floating dtype (a tensor of the tensor's dtype)
        q, _ = low._predict_all(s, told)
        out = low.predict_proba(s, logits=told)
        if isinstance(s, np.ndarray):
            assert out.dtype == np.float64
            np.testing.assert_array_equal(out, q, what)
        else:
            assert out.dtype == s.dtype and out.device == s.device, what
            assert out.equal(_torch.from_numpy(q).to(s.dtype)), what
        assert np.all(np.isfinite(q)), what
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            oof = cross_val_predict_proba(cls(), s, y, logits=told, n_splits=2)
        assert oof.shape == q.shape and np.all(np.isfinite(oof)), what
        P = cp.check_predictions(s, np.zeros(N, dtype=np.int64), logits=told)
        np.testing.assert_array_equal(q, via._predict_all(P, None)[0], what)
        if told:  # logits keep their values: the fit on the same numbers in float32
            f32 = s.float().numpy() if hasattr(s, "float") else s.astype(np.float32)
            if cls.input == "logits":
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    ref = cls().fit(f32, y, logits=True)
                np.testing.assert_array_equal(q, ref.predict_proba(f32, logits=True), what)


def test_huge_logits_accepted_or_refused_by_name() -> None:
    """Logits of +-1e308 (finite: the metrics accept them). A logit method refuses them
    with a message about their magnitude; a probability method takes their softmax.
    Before, the finiteness check summed the array, the sum overflowed, and the search
    for the offending entry found nothing (or the fit went on with infinities)."""
    assert {m for m, _ in PAIRS} == set(METHODS)  # (every method is in the tables above)
    for name, kind in PAIRS:
        cls = base._REGISTRY[name]
        z, y = DATA[kind]
        big = _with(_with(z, 0, 1e308), 1, -1e308)
        cp.ece(big, y, logits=True)
        for told in (True, None):
            if cls.input == "logits":
                with pytest.raises(CalibrationInputError, match=r"magnitude at most 1e\+100"):
                    cls().fit(big, y, logits=told)
                with pytest.raises(CalibrationInputError, match=r"magnitude at most 1e\+100"):
                    _fitted(name, kind).predict_proba(big, logits=told)
            else:
                try:
                    q = cls().fit(big, y, logits=told).predict_proba(big, logits=told)
                except CalibrationInputError as exc:  # beta calibration: sigmoid(1e308) = 1
                    assert "strictly between 0 and 1" in str(exc)
                else:
                    assert np.all(np.isfinite(q))
        # just inside the limit every method predicts finite probabilities (or says why)
        edge = _with(_with(z, 0, 1e100), 1, -1e100)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                q = cls().fit(edge, y, logits=True).predict_proba(edge, logits=True)
        except CalibrationInputError as exc:
            assert re.search(r"ill-conditioned|strictly between|non-finite", str(exc)), str(exc)
        else:
            assert np.all(np.isfinite(q)), name


def test_two_column_and_binary_scores_give_the_same_map() -> None:
    """A one-vs-rest fit on (n, 2) columns predicts (n,) P(y = 1) as column 1 of its
    prediction on [1 - p, p], and a fit on (n,) predicts (n, 2) as [1 - q, q]; both
    crashed (IndexError) or mixed up the classes before."""
    z, y = DATA["binary"]
    p = _softmax(z)
    P2 = np.stack([1 - p, p], axis=1)
    for cls in (cp.HistogramBinning, cp.IsotonicRegression):
        two = cls().fit(P2, y, logits=False)
        np.testing.assert_array_equal(
            two.predict_proba(p, logits=False), two.predict_proba(P2, logits=False)[:, 1]
        )
        one = cls().fit(p, y, logits=False)
        q = one.predict_proba(p, logits=False)
        np.testing.assert_array_equal(
            one.predict_proba(P2, logits=False), np.stack([1 - q, q], axis=1)
        )
