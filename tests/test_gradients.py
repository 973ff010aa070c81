"""Gradients of the metrics docs/pytorch.md calls differentiable, and detached results of the rest.

The two tables of docs/pytorch.md (differentiability, dtypes) are kept here as data:
every row must appear in the page verbatim, and every row is checked against what the
function does (``torch.autograd.gradcheck`` against finite differences in float64 for
the differentiable ones, ``requires_grad is False`` for the detached ones, the returned
dtype for every input dtype). The page's example runs as a doctest.
"""

from __future__ import annotations

import doctest
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import calipers as cp  # noqa: E402

PAGE = Path(__file__).resolve().parents[1] / "docs" / "pytorch.md"
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]

Metric = Callable[..., Any]


def _page() -> str:
    if not PAGE.is_file():
        pytest.skip("docs/pytorch.md is not beside the tests")
    return PAGE.read_text(encoding="utf-8")


def _logits(n: int, k: int, seed: int) -> tuple[Any, Any]:
    """Float64 logits (spread 1.5) and labels drawn from their softmax, both seeded."""
    g = torch.Generator().manual_seed(seed)
    z = 1.5 * torch.randn(n, k, dtype=torch.float64, generator=g)
    y = torch.multinomial(torch.softmax(z, 1), 1, generator=g)[:, 0]
    return z, y


def _value(r: Any) -> Any:
    return r.value if isinstance(r, cp.ProperCalibrationError) else r


# ----------------------------------------------------------------------------- the table

# docs/pytorch.md, "Which results carry a gradient": (function, w.r.t. probs,
# w.r.t. logits, held constant). Rendered as "| `name` | probs | logits | constant |".
GRAD_TABLE: list[tuple[str, str, str, str]] = [
    ("nll", "yes", "yes", "—"),
    ("brier", "yes", "yes", "—"),
    ("calibration_upper_bound", "yes", "yes", "—"),
    ("rbs", "yes", "yes", "—"),
    ("recalibration_improvement", "yes", "yes", "—"),
    ("proper_calibration_error", "yes", "yes", 'the bandwidth chosen by `bandwidth="mle"`'),
    ("ce_kl", "yes", "yes", 'the bandwidth chosen by `bandwidth="mle"`'),
    ("ce_squared_l2", "yes", "yes", 'the bandwidth chosen by `bandwidth="mle"`'),
    ("smece", "yes", "yes", "the fixed-point bandwidth s\\* (exact: s\\* is piecewise constant)"),
    ("kde_calibration_error", "yes", "yes", "the default bandwidth (`kde_bandwidth`)"),
    ("mmce", "yes", "yes", "— (first derivatives only)"),
    ("skce", "yes", "yes", "— (unbiased, biased: first derivatives only)"),
    ("ece", "no", "no", "detached: binned"),
    ("mce", "no", "no", "detached: binned"),
    ("rmsce", "no", "no", "detached: binned"),
    ("bin_averaged_ece", "no", "no", "detached: binned"),
    ("top_label_ece", "no", "no", "detached: binned"),
    ("sce", "no", "no", "detached: binned"),
    ("ace", "no", "no", "detached: binned"),
    ("tace", "no", "no", "detached: binned"),
    ("classwise_ece", "no", "no", "detached: binned"),
    ("top_k_ece", "no", "no", "detached: binned"),
    ("full_ece", "no", "no", "detached: binned"),
    ("group_ece", "no", "no", "detached: binned"),
    ("tce_p", "no", "no", "detached: binned"),
    ("cwce_p", "no", "no", "detached: binned"),
    ("ce_p", "no", "no", "detached: binned"),
    ("calibration_error", "no", "no", "detached: totals in NumPy"),
    ("debiased_calibration_error", "no", "no", "detached: binned"),
    ("ks_calibration_error", "no", "no", "detached: computed in NumPy"),
    ("confidence_calibration_error", "no", "no", "detached: computed in NumPy"),
    ("accuracy", "no", "no", "detached: piecewise constant"),
]


def _row(entry: tuple[str, str, str, str]) -> str:
    name, p, z, held = entry
    return f"| `{name}` | {p} | {z} | {held} |"


def _after(x: Any, logits: bool) -> Any:
    """A second prediction set derived from ``x`` (for recalibration_improvement)."""
    if logits:
        return 0.5 * x
    if x.ndim == 1:
        return 1 - x
    return x.flip(-1) if isinstance(x, torch.Tensor) else x[:, ::-1]  # exact in any dtype


# One call per table name: fn(x, y, logits) with every data-driven bandwidth fixed.
CALLS: dict[str, Metric] = {
    "nll": lambda x, y, lg: cp.nll(x, y, logits=lg),
    "brier": lambda x, y, lg: cp.brier(x, y, logits=lg),
    "calibration_upper_bound": lambda x, y, lg: cp.calibration_upper_bound(x, y, logits=lg),
    "rbs": lambda x, y, lg: cp.rbs(x, y, logits=lg),
    "recalibration_improvement": lambda x, y, lg: cp.recalibration_improvement(
        x, _after(x, lg), y, logits=lg
    ),
    "proper_calibration_error": lambda x, y, lg: (
        cp.proper_calibration_error(x, y, bandwidth=0.1, logits=lg).value
    ),
    "ce_kl": lambda x, y, lg: cp.ce_kl(x, y, bandwidth=0.1, logits=lg),
    "ce_squared_l2": lambda x, y, lg: cp.ce_squared_l2(x, y, bandwidth=0.1, logits=lg),
    "smece": lambda x, y, lg: cp.smece(x, y, bandwidth=0.1, logits=lg),
    "kde_calibration_error": lambda x, y, lg: cp.kde_calibration_error(
        x, y, bandwidth=0.1, logits=lg
    ),
    "mmce": lambda x, y, lg: cp.mmce(x, y, logits=lg),
    "skce": lambda x, y, lg: cp.skce(x, y, logits=lg),
    "ece": lambda x, y, lg: cp.ece(x, y, logits=lg),
    "mce": lambda x, y, lg: cp.mce(x, y, logits=lg),
    "rmsce": lambda x, y, lg: cp.rmsce(x, y, logits=lg),
    "bin_averaged_ece": lambda x, y, lg: cp.bin_averaged_ece(x, y, logits=lg),
    "top_label_ece": lambda x, y, lg: cp.top_label_ece(x, y, logits=lg),
    "sce": lambda x, y, lg: cp.sce(x, y, logits=lg),
    "ace": lambda x, y, lg: cp.ace(x, y, logits=lg),
    "tace": lambda x, y, lg: cp.tace(x, y, logits=lg),
    "classwise_ece": lambda x, y, lg: cp.classwise_ece(x, y, logits=lg),
    "top_k_ece": lambda x, y, lg: cp.top_k_ece(x, y, k=2, logits=lg),
    "full_ece": lambda x, y, lg: cp.full_ece(x, y, logits=lg),
    "group_ece": lambda x, y, lg: cp.group_ece(x, y, [[0], [1, 2]], logits=lg),
    "tce_p": lambda x, y, lg: cp.tce_p(x, y, logits=lg),
    "cwce_p": lambda x, y, lg: cp.cwce_p(x, y, logits=lg),
    "ce_p": lambda x, y, lg: cp.ce_p(x, y, logits=lg),
    "calibration_error": lambda x, y, lg: cp.calibration_error(x, y, logits=lg),
    "debiased_calibration_error": lambda x, y, lg: cp.debiased_calibration_error(x, y, logits=lg),
    "ks_calibration_error": lambda x, y, lg: cp.ks_calibration_error(x, y, logits=lg),
    "confidence_calibration_error": lambda x, y, lg: cp.confidence_calibration_error(
        x, y, logits=lg
    ),
    "accuracy": lambda x, y, lg: cp.accuracy(x, y, logits=lg),
}


def test_table_rows_are_on_the_page() -> None:
    page = _page()
    missing = [_row(e) for e in GRAD_TABLE if _row(e) not in page]
    assert not missing, "rows missing from docs/pytorch.md:\n" + "\n".join(missing)


def test_table_covers_every_scalar_metric() -> None:
    # every public function that returns one number is in the table, and only those
    named = {e[0] for e in GRAD_TABLE}
    assert named == set(CALLS)
    assert named <= set(cp.__all__)


@pytest.mark.parametrize("entry", GRAD_TABLE, ids=[e[0] for e in GRAD_TABLE])
@pytest.mark.parametrize("logits", [False, True], ids=["probs", "logits"])
def test_table_says_what_the_function_does(entry: tuple[str, str, str, str], logits: bool) -> None:
    name, wrt_probs, wrt_logits, _ = entry
    z, y = _logits(30, 3, 0)
    x = (z if logits else torch.softmax(z, 1)).clone().requires_grad_(True)
    r = CALLS[name](x, y, logits)
    assert isinstance(r, torch.Tensor) and r.ndim == 0 and r.dtype == torch.float64
    claimed = (wrt_logits if logits else wrt_probs) == "yes"
    assert r.requires_grad is claimed
    if claimed:
        (g,) = torch.autograd.grad(r, x)
        assert torch.isfinite(g).all() and g.abs().sum() > 0
    else:
        assert r.grad_fn is None


# ----------------------------------------------------------------------------- gradcheck

# (id, table name, fn(x, y, logits), inputs, fast): gradcheck against central finite
# differences in float64; "fast" uses gradcheck's random-projection mode (still against
# finite differences) where one evaluation is slow (the 2**14-point KDE grid).
GRADCHECK: list[tuple[str, str, Metric, tuple[str, ...], bool]] = [
    ("nll", "nll", CALLS["nll"], ("probs", "logits", "binary"), False),
    ("brier", "brier", CALLS["brier"], ("probs", "logits", "binary"), False),
    (
        "upper_bound",
        "calibration_upper_bound",
        CALLS["calibration_upper_bound"],
        ("logits",),
        False,
    ),
    ("rbs", "rbs", CALLS["rbs"], ("probs", "logits"), False),
    (
        "recalibration_improvement",
        "recalibration_improvement",
        CALLS["recalibration_improvement"],
        ("probs", "logits"),
        False,
    ),
    ("ce_kl", "ce_kl", CALLS["ce_kl"], ("probs", "logits"), False),
    ("ce_squared_l2", "ce_squared_l2", CALLS["ce_squared_l2"], ("probs", "logits"), False),
    (
        "proper_ce_classwise_via_risk",
        "proper_calibration_error",
        lambda x, y, lg: (
            cp.proper_calibration_error(
                x,
                y,
                divergence="squared_l2",
                lens="classwise",
                method="via_risk",
                bandwidth=0.2,
                logits=lg,
            ).value
        ),
        ("probs", "logits"),
        False,
    ),
    (
        "proper_ce_refinement_top_label",
        "proper_calibration_error",
        lambda x, y, lg: (
            cp.proper_calibration_error(x, y, lens="top_label", bandwidth=0.2, logits=lg).refinement
        ),
        ("probs", "logits"),
        False,
    ),
    ("smece", "smece", CALLS["smece"], ("probs", "logits", "binary"), False),
    (
        "smece_small_bandwidth",
        "smece",
        lambda x, y, lg: cp.smece(x, y, bandwidth=0.03, logits=lg),
        ("logits",),
        False,
    ),
    (
        "smece_top_label_weighted",
        "smece",
        lambda x, y, lg: cp.smece(
            x,
            y,
            lens="top_label",
            bandwidth=0.1,
            sample_weight=torch.linspace(0.5, 2.0, x.shape[0], dtype=torch.float64),
            logits=lg,
        ),
        ("binary",),
        False,
    ),
    (
        "kde",
        "kde_calibration_error",
        CALLS["kde_calibration_error"],
        ("probs", "logits", "binary"),
        True,
    ),
    (
        "kde_p2_unrooted",
        "kde_calibration_error",
        lambda x, y, lg: cp.kde_calibration_error(x, y, p=2, root=False, bandwidth=0.05, logits=lg),
        ("logits",),
        True,
    ),
    ("mmce", "mmce", CALLS["mmce"], ("probs", "logits", "binary"), False),
    (
        "mmce_squared_weighted",
        "mmce",
        lambda x, y, lg: cp.mmce(
            x,
            y,
            squared=True,
            bandwidth=0.1,
            sample_weight=torch.linspace(0.5, 2.0, x.shape[0], dtype=torch.float64),
            logits=lg,
        ),
        ("logits",),
        False,
    ),
    ("skce_unbiased", "skce", CALLS["skce"], ("probs", "logits", "binary"), False),
    (
        "skce_biased_weighted",
        "skce",
        lambda x, y, lg: cp.skce(
            x,
            y,
            estimator="biased",
            bandwidth=0.5,
            sample_weight=torch.linspace(0.5, 2.0, x.shape[0], dtype=torch.float64),
            logits=lg,
        ),
        ("probs", "logits"),
        False,
    ),
    (
        "skce_block",
        "skce",
        lambda x, y, lg: cp.skce(x, y, estimator="block", block_size=4, logits=lg),
        ("probs", "logits"),
        False,
    ),
]
GRADCHECK_PARAMS = [
    pytest.param(fn, inp, fast, id=f"{cid}-{inp}")
    for cid, _, fn, inputs, fast in GRADCHECK
    for inp in inputs
]


def _input(kind: str, n: int = 16, k: int = 3, seed: int = 1) -> tuple[Any, Any, bool]:
    """(x requiring a gradient, labels, logits flag) of one input kind."""
    if kind == "binary":  # 1-D P(y = 1)
        z, _ = _logits(n, 2, seed)
        s = z[:, 1] - z[:, 0]
        y = (torch.sigmoid(s) > torch.rand(n, generator=torch.Generator().manual_seed(seed))).long()
        return torch.sigmoid(s).clone().requires_grad_(True), y, False
    z, y = _logits(n, k, seed)
    if kind == "logits":
        return z.clone().requires_grad_(True), y, True
    return torch.softmax(z, 1).clone().requires_grad_(True), y, False


def test_every_differentiable_row_is_gradchecked() -> None:
    claimed = {e[0] for e in GRAD_TABLE if e[1] == "yes"}
    assert claimed == {table_name for _, table_name, _, _, _ in GRADCHECK}


@pytest.mark.parametrize(("fn", "kind", "fast"), GRADCHECK_PARAMS)
def test_gradcheck(fn: Metric, kind: str, fast: bool) -> None:
    x, y, logits = _input(kind)
    assert torch.autograd.gradcheck(lambda x: fn(x, y, logits), (x,), fast_mode=fast)


@pytest.mark.parametrize(("fn", "kind", "fast"), GRADCHECK_PARAMS)
def test_gradient_leaves_the_value_unchanged(fn: Metric, kind: str, fast: bool) -> None:
    # the value with a gradient is the value without one, bit for bit
    x, y, logits = _input(kind)
    with_grad = fn(x, y, logits)
    assert with_grad.requires_grad
    assert float(with_grad.detach()) == float(fn(x.detach(), y, logits))


def test_gradcheck_fails_on_a_wrong_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    # the check can fail: an MMCE whose attached gradient is off by 1 % is caught
    from calipers.metrics import _mmce as module

    real = module.attach_gradient

    def wrong(value: float, t: Any, grad: Any) -> Any:
        return real(value, t, 1.01 * grad)

    x, y, logits = _input("logits")
    assert torch.autograd.gradcheck(lambda x: cp.mmce(x, y, logits=logits), (x,))
    monkeypatch.setattr(module, "attach_gradient", wrong)
    assert not torch.autograd.gradcheck(
        lambda x: cp.mmce(x, y, logits=logits), (x,), raise_exception=False
    )


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, y: cp.mmce(x, y, logits=True),
        lambda x, y: cp.skce(x, y, logits=True),
    ],
    ids=["mmce", "skce"],
)
def test_second_derivative_raises_where_only_first_is_given(fn: Metric) -> None:
    x, y, _ = _input("logits")
    (g,) = torch.autograd.grad(fn(x, y), x, create_graph=True)
    with pytest.raises(RuntimeError, match="first derivative of this metric only"):
        g.sum().backward()


# ----------------------------------------------------------------------------- bandwidths


def _grad(r: Any, x: Any) -> Any:
    return torch.autograd.grad(r, x)[0]


def test_smece_fixed_point_bandwidth_is_held_constant_and_exact() -> None:
    # s* is a multiple of 2**-10 that does not move under small changes of the
    # scores, so its derivative is 0 and the gradient at fixed s* is the whole one
    x, y, _ = _input("logits", n=24)
    s = cp.smece_bandwidth(x.detach(), y, logits=True)
    g_default = _grad(cp.smece(x, y, logits=True), x)
    g_fixed = _grad(cp.smece(x, y, bandwidth=s, logits=True), x)
    assert torch.equal(g_default, g_fixed)
    assert torch.autograd.gradcheck(lambda x: cp.smece(x, y, logits=True), (x,))


def test_kde_default_bandwidth_is_held_constant() -> None:
    # the rule-of-thumb bandwidth moves with the scores; that is not differentiated
    x, y, _ = _input("logits")
    h = cp.kde_bandwidth(x.detach(), y, logits=True)
    g_default = _grad(cp.kde_calibration_error(x, y, logits=True), x)
    g_fixed = _grad(cp.kde_calibration_error(x, y, bandwidth=h, logits=True), x)
    assert torch.equal(g_default, g_fixed)
    # so finite differences, which do move the bandwidth, disagree with it
    assert not torch.autograd.gradcheck(
        lambda x: cp.kde_calibration_error(x, y, logits=True),
        (x,),
        fast_mode=True,
        raise_exception=False,
    )


def test_proper_ce_mle_bandwidth_is_held_constant() -> None:
    x, y, _ = _input("logits")
    res = cp.proper_calibration_error(x, y, logits=True)  # bandwidth="mle"
    assert isinstance(res.bandwidth, float)
    g_mle = _grad(res.value, x)
    g_fixed = _grad(cp.ce_kl(x, y, bandwidth=res.bandwidth, logits=True), x)
    torch.testing.assert_close(g_mle, g_fixed, rtol=0, atol=0)


# ----------------------------------------------------------------------------- dtypes

# docs/pytorch.md, "Dtypes": (input dtype, returned, gradient reaches the input as).
DTYPE_TABLE: list[tuple[str, str, str]] = [
    ("torch.float64", "0-d `torch.float64` tensor", "`torch.float64`"),
    ("torch.float32", "0-d `torch.float64` tensor", "`torch.float32`"),
    ("torch.float16", "0-d `torch.float64` tensor", "`torch.float16`"),
    ("torch.bfloat16", "0-d `torch.float64` tensor", "`torch.bfloat16`"),
]


def _dtype_row(entry: tuple[str, str, str]) -> str:
    return f"| `{entry[0]}` | {entry[1]} | {entry[2]} |"


def test_dtype_rows_are_on_the_page() -> None:
    page = _page()
    missing = [_dtype_row(e) for e in DTYPE_TABLE if _dtype_row(e) not in page]
    assert not missing, "rows missing from docs/pytorch.md:\n" + "\n".join(missing)


def _torch_dtype(text: str) -> Any:
    return getattr(torch, text.strip("`").removeprefix("torch."))


@pytest.mark.parametrize("dtype_row", DTYPE_TABLE, ids=[e[0] for e in DTYPE_TABLE])
@pytest.mark.parametrize("entry", GRAD_TABLE, ids=[e[0] for e in GRAD_TABLE])
def test_returned_dtype_is_the_documented_one(
    entry: tuple[str, str, str, str], dtype_row: tuple[str, str, str]
) -> None:
    name, wrt_probs, _, _ = entry
    dtype = _torch_dtype(dtype_row[0])
    z, y = _logits(30, 3, 2)
    x = torch.softmax(z, 1).to(dtype).requires_grad_(True)
    r = CALLS[name](x, y, False)
    assert isinstance(r, torch.Tensor) and r.ndim == 0
    assert r.dtype == _torch_dtype(dtype_row[1].split("`")[1])
    if wrt_probs == "yes":
        (g,) = torch.autograd.grad(r, x)
        assert g.dtype == _torch_dtype(dtype_row[2])
    assert np.isfinite(float(r.detach()))
    if dtype in (torch.float64, torch.float32):
        # the value is that of a NumPy array of the same dtype (sums in float64)
        want = CALLS[name](x.detach().numpy(), y.numpy(), False)
        assert float(r.detach()) == pytest.approx(float(want), rel=1e-12, abs=1e-15)


# ----------------------------------------------------------------------------- devices


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", [e[0] for e in GRAD_TABLE if e[1] == "yes"])
def test_result_and_gradient_stay_on_the_device(device: str, name: str) -> None:
    z, y = _logits(20, 3, 3)
    x = z.to(device).requires_grad_(True)
    r = CALLS[name](x, y.to(device), True)
    assert r.device.type == device
    (g,) = torch.autograd.grad(r, x)
    assert g.device.type == device


# ----------------------------------------------------------------------------- the page


def test_page_examples_run() -> None:
    _page()
    result = doctest.testfile(
        str(PAGE),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert result.failed == 0 and result.attempted > 0
