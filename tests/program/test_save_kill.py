"""A real ``kill -9`` in the middle of saving a ~400 MB model: the previous model stays intact and
the next save removes the killed run's temporary files.

Marked ``slow`` (three child processes each import torch, export and write 400 MB: ~40-60 s on 2
shared cores); run with ``pytest -m slow tests/program/test_save_kill.py``.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

CHILD = textwrap.dedent(
    """
    import sys, time
    import torch
    import onnxport

    dest, seed, slow = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "slow"

    class Big(torch.nn.Module):  # 10 x Linear(4096 -> 2560): 420 MB of float32 weights
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Linear(4096, 2560, bias=False) for _ in range(10))
            self.out = torch.nn.Linear(4096, 4, bias=False)

        def forward(self, x):
            return self.out(x) + sum(layer(x).sum(-1, keepdim=True) for layer in self.layers)

    torch.manual_seed(seed)
    with torch.no_grad():
        model = Big().eval()
        for layer in model.layers:
            layer.weight.normal_(std=0.01)
    program = onnxport.export(model, (torch.ones(1, 4096),))

    def progress(tensor, info):
        print(f"tensor {info.index}", flush=True)
        if slow:
            time.sleep(0.5)

    program.save(dest, external_data=True, callback=progress)
    with torch.no_grad():
        print("output", float(model(torch.ones(1, 4096)).sum()), flush=True)
    """
)


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()}


def _run_child(script: Path, dest: Path, seed: int) -> float:
    result = subprocess.run([sys.executable, str(script), str(dest), str(seed), "fast"],
                            capture_output=True, text=True, timeout=600, check=True)
    return float(result.stdout.strip().splitlines()[-1].split()[1])


@pytest.mark.slow
def test_kill_mid_save_keeps_previous_model(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    folder = tmp_path / "out"
    folder.mkdir()
    dest = folder / "model.onnx"

    first_output = _run_child(script, dest, seed=1)
    before = _digest(folder)
    assert sorted(before) == ["model.onnx", "model.onnx.data"]
    assert (folder / "model.onnx.data").stat().st_size > 400 * 1024**2

    child = subprocess.Popen([sys.executable, str(script), str(dest), "2", "slow"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert child.stdout is not None
    for line in child.stdout:
        if line.strip() == "tensor 3":  # three tensors written, the fourth in progress
            os.kill(child.pid, signal.SIGKILL)
            break
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL

    leftovers = sorted(p.name for p in folder.iterdir() if "onnxport-" in p.name)
    assert leftovers, "the killed save left its temporary data (else it was not killed mid-write)"
    assert {k: v for k, v in _digest(folder).items() if "onnxport-" not in k} == before
    session = ort.InferenceSession(str(dest), providers=["CPUExecutionProvider"])
    out = session.run(None, {session.get_inputs()[0].name: np.ones((1, 4096), np.float32)})[0]
    np.testing.assert_allclose(float(out.sum()), first_output, rtol=1e-4)

    _run_child(script, dest, seed=3)  # the next save to the same place sweeps the leftovers
    assert sorted(p.name for p in folder.iterdir()) == ["model.onnx", "model.onnx.data"]
    assert _digest(folder) != before
