"""Two torch.distributed (gloo) processes running one worker script, for the DDP tests.

The worker template is formatted with ``src`` (this checkout's ``src`` folder),
``init`` (a file store for ``init_process_group``) and ``result`` (a path prefix:
rank ``r`` writes ``{result}{r}.json``), plus any further fields given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def run_two_ranks(tmp_path: Path, template: str, **fields: Any) -> list[Any]:
    """Run ``template`` as ranks 0 and 1; the JSON each rank wrote, in rank order."""
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    script = tmp_path / "worker.py"
    script.write_text(
        template.format(
            src=str(SRC),
            init=(tmp_path / "store").as_uri(),
            result=str(tmp_path / "result"),
            **fields,
        )
    )
    env = {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    if sys.platform.startswith("linux"):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(r)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in (0, 1)
    ]
    logs = []
    try:
        for proc in procs:
            logs.append(proc.communicate(timeout=120)[0])
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert all(proc.returncode == 0 for proc in procs), "\n".join(logs)
    return [json.loads((tmp_path / f"result{r}.json").read_text()) for r in (0, 1)]
