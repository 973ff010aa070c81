"""The HTML report in a real browser: headless Chromium renders it offline."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import calipers as cp

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine (Debian: apt-get install chromium)")


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    browser = _browser()
    rng = np.random.default_rng(0)
    z = rng.normal(size=(600, 4)) * 2
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = (rng.random(600)[:, None] > p.cumsum(1)).sum(1).clip(0, 3)
    rep = cp.report(
        {"overconfident": (3 * z[300:], y[300:])},
        logits=True,
        calibration={"overconfident": (3 * z[:300], y[:300])},
        recalibrators=[cp.TemperatureScaling()],
        figures=True,
        null_resamples=20,
    )
    rep.save(tmp_path)
    page = tmp_path / "report.html"
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--user-data-dir=" + str(tmp_path / "profile"),
    ]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the rendered DOM holds the table and every number of the first row
    assert "<table" in dom.stdout and "TemperatureScaling" in dom.stdout
    assert f"{rep.row('overconfident').metrics['ece']:.4f}" in dom.stdout
    assert dom.stdout.count("data:image/png;base64,") == 6
    shot = tmp_path / "shot.png"
    res = subprocess.run(
        [browser, *flags, "--window-size=1200,1600", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0 and shot.exists(), res.stderr[-2000:]
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)
    assert img.shape[0] >= 1000 and img.shape[1] >= 1000
    # a rendered page with a table and six figures is far from blank
    nonwhite = np.mean(np.any(img[..., :3] < 0.9, axis=-1))
    assert 0.03 < nonwhite < 0.9
