"""Peak memory of exporting a model already in RAM through the Python API, onnxport vs torch.onnx.

Issue 12: "The Python API with a model already in memory: peak above the loaded model ≤ +0.1x its
weights". Each (model, exporter) runs in its own child process: build the random-weight model,
export a tiny MLP first (lazy imports and tables load then, for both exporters), then measure
RSS (psutil, sampled every 5 ms by a thread) during ``export`` and during ``save``
(external data, in a temporary folder beside this script's output); report the peaks above the
RSS of the loaded model, as multiples of the weights' bytes.

    HF_HUB_OFFLINE=1 python bench/api_memory.py                 # bert, gpt2, llama-0.5b
    HF_HUB_OFFLINE=1 python bench/api_memory.py --models bert --exporters onnxport
    HF_HUB_OFFLINE=1 python bench/api_memory.py --to-file    # export(f=path) in one call

Models (random weights, float32, built from configs, no hub): ``bert`` (bert-base dims),
``gpt2`` (gpt2 small dims), ``llama`` (hidden 1536, intermediate 4096, 16 layers, 12/4 heads,
vocab 32000: 0.51 B parameters, 2.0 GB).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import psutil
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


class Sampler:
    """Max RSS of this process, sampled every ``period`` seconds in a thread."""

    def __init__(self, period: float = 0.005) -> None:
        self.period = period
        self.peak = 0
        self._stop = threading.Event()
        self._proc = psutil.Process()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss)
            time.sleep(self.period)

    def __enter__(self) -> Sampler:
        self.peak = self._proc.memory_info().rss
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)


def build(name: str) -> tuple[torch.nn.Module, tuple[Any, ...]]:
    import transformers

    torch.manual_seed(0)
    if name == "bert":
        config = transformers.BertConfig()
        model = transformers.BertModel(config)
    elif name == "gpt2":
        config = transformers.GPT2Config(use_cache=False)
        model = transformers.GPT2LMHeadModel(config)
    elif name == "llama":
        config = transformers.LlamaConfig(
            hidden_size=1536, intermediate_size=4096, num_hidden_layers=16, num_attention_heads=12,
            num_key_value_heads=4, vocab_size=32000, use_cache=False,
        )
        model = transformers.LlamaForCausalLM(config)
    else:
        raise SystemExit(f"unknown model {name}")
    model.eval()
    ids = torch.randint(0, config.vocab_size, (1, 16))
    return model, (ids,)


def _warm_up(exporter: str) -> None:
    """A first tiny export loads lazy imports and tables, for both exporters, before measuring."""
    import onnxport  # imported before measuring: neither exporter profits from the other's imports

    warm = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    with torch.no_grad():
        if exporter == "onnxport":
            onnxport.export(warm, (torch.randn(2, 8),))
        else:
            torch.onnx.export(warm, (torch.randn(2, 8),), dynamo=True, optimize=False, verbose=False)


def one(model_name: str, exporter: str, out_dir: str) -> dict[str, Any]:
    import onnxport  # imported by _warm_up before measuring

    _warm_up(exporter)
    model, args = build(model_name)
    weights = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    proc = psutil.Process()
    base = proc.memory_info().rss
    start = time.perf_counter()
    with torch.no_grad(), Sampler() as during_export:
        if exporter == "onnxport":
            program = onnxport.export(model, args)
        else:
            program = torch.onnx.export(model, args, dynamo=True, optimize=False, verbose=False)
    export_s = time.perf_counter() - start
    path = os.path.join(out_dir, f"{model_name}-{exporter}.onnx")
    start = time.perf_counter()
    with Sampler() as during_save:
        program.save(path, external_data=True)
    save_s = time.perf_counter() - start
    return {
        "model": model_name,
        "exporter": exporter,
        "weights_bytes": weights,
        "export_peak_above_model": (during_export.peak - base) / weights,
        "save_peak_above_model": (during_save.peak - base) / weights,
        "export_s": round(export_s, 2),
        "save_s": round(save_s, 2),
    }


def one_to_file(model_name: str, exporter: str, out_dir: str) -> dict[str, Any]:
    """``export(model, args, f=path)`` / ``torch.onnx.export(model, args, path, dynamo=True)`` in
    one call, each exporter's default save (both external data), after the same tiny warm-up."""
    import onnxport  # imported by _warm_up before measuring

    _warm_up(exporter)
    model, args = build(model_name)
    weights = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    base = psutil.Process().memory_info().rss
    path = os.path.join(out_dir, f"{model_name}-{exporter}.onnx")
    start = time.perf_counter()
    with torch.no_grad(), Sampler() as during:
        if exporter == "onnxport":
            onnxport.export(model, args, f=path)
        else:
            torch.onnx.export(model, args, path, dynamo=True, verbose=False)
    seconds = time.perf_counter() - start
    files = sorted(os.listdir(out_dir))
    return {"model": model_name, "exporter": exporter, "weights_bytes": weights,
            "export_to_file_peak_above_model": (during.peak - base) / weights,
            "export_to_file_s": round(seconds, 2), "files": files}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="bert,gpt2,llama")
    parser.add_argument("--exporters", default="onnxport,torch.onnx")
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "EXPORTER"), help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--json", default=None, help="write the rows to this JSON file")
    parser.add_argument("--to-file", action="store_true",
                        help="measure export(..., f=path) in one call instead of export, then save")
    options = parser.parse_args()
    if options.one:
        measure = one_to_file if options.to_file else one
        print(json.dumps(measure(options.one[0], options.one[1], options.out)))
        return
    if options.to_file:
        to_file_rows(options)
        return
    rows = _children(options, [])
    _table(rows, f"{'export +x':>10} {'save +x':>8} {'export s':>9} {'save s':>7}",
           lambda r: f"{r['export_peak_above_model']:+10.3f} {r['save_peak_above_model']:+8.3f} "
                     f"{r['export_s']:9.1f} {r['save_s']:7.1f}")
    for model_name in options.models.split(","):
        ours = next((r for r in rows if r["model"] == model_name and r["exporter"] == "onnxport" and "error" not in r), None)
        theirs = next((r for r in rows if r["model"] == model_name and r["exporter"] == "torch.onnx" and "error" not in r), None)
        if ours and theirs:
            print(f"{model_name}: export peak onnxport/torch.onnx = "
                  f"{max(ours['export_peak_above_model'], 1e-3) / max(theirs['export_peak_above_model'], 1e-3):.2f}, "
                  f"save peak ratio = {max(ours['save_peak_above_model'], 1e-3) / max(theirs['save_peak_above_model'], 1e-3):.2f}")
    _write_json(options, rows)


def _children(options: argparse.Namespace, extra: list[str]) -> list[dict[str, Any]]:
    """One child process per (model, exporter) (``--one``), in a fresh output folder each."""
    rows = []
    for model_name in options.models.split(","):
        for exporter in options.exporters.split(","):
            out = tempfile.mkdtemp(prefix="api-memory-", dir=HERE)
            try:
                result = subprocess.run(
                    [sys.executable, __file__, "--one", model_name, exporter, "--out", out, *extra],
                    capture_output=True, text=True, check=False,
                )
            finally:
                shutil.rmtree(out, ignore_errors=True)
            if result.returncode != 0:
                rows.append({"model": model_name, "exporter": exporter, "error": result.stderr.strip().splitlines()[-1:]})
            else:
                rows.append(json.loads(result.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def to_file_rows(options: argparse.Namespace) -> None:
    """``--to-file``: one child per (model, exporter) running :func:`one_to_file`; a table."""
    rows = _children(options, ["--to-file"])
    _table(rows, f"{'export(f=) +x':>14} {'seconds':>8}  files",
           lambda r: f"{r['export_to_file_peak_above_model']:+14.3f} {r['export_to_file_s']:8.1f}  {', '.join(r['files'])}")
    _write_json(options, rows)


def _table(rows: list[dict[str, Any]], header: str, cells: Callable[[dict[str, Any]], str]) -> None:
    """Print one line per row: model, exporter, weights, then ``cells(row)`` (or the error)."""
    print(f"\n{'model':8} {'exporter':10} {'weights':>9} {header}")
    for r in rows:
        if "error" in r:
            print(f"{r['model']:8} {r['exporter']:10} error: {r['error']}")
        else:
            print(f"{r['model']:8} {r['exporter']:10} {r['weights_bytes'] / 1e9:8.2f}G {cells(r)}")


def _write_json(options: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    if options.json:
        with open(options.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
