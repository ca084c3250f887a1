"""Large models: ``onnxport export --hf`` on random-weight Llama checkpoints bigger than RAM.

For each checkpoint (issue 12's acceptance):

- generates a random-weight Llama checkpoint as safetensors shards, one shard in memory at a time,
  with ``config.json`` (``architectures``) and ``model.safetensors.index.json``;
- runs ``onnxport export --hf CKPT -o OUT`` as a child process, sampling the peak anonymous memory
  (``RssAnon`` of ``/proc/<pid>/status``, summed over the process tree) and the wall time;
- measures the floor: ``torch.export`` of the same model on the meta device (a child process,
  imports included, as for the CLI) + a raw copy of the checkpoint bytes to the same disk (fsync);
- checks the stored weight bytes (within 1% of the checkpoint's) and that every external-data
  reference of every ``*.onnx`` in OUT points inside OUT, to an existing range of a file;
- ``small`` (0.85B): logits from onnxruntime vs eager within 1e-3 relative, and
  ``torch.onnx.export(dynamo=True)`` on the same model in the same run (peak and time, as ratios).

Targets: peak RssAnon ≤ 2 GiB + the largest tensor; wall ≤ 1.3× the floor.

The Python-API case (a model already in memory) is ``bench/api_memory.py``.

    HF_HUB_OFFLINE=1 python bench/large_model.py --models small            # ~10 min
    HF_HUB_OFFLINE=1 python bench/large_model.py --models 7b,7b-bf16        # ~1 h, 25 + 25 GiB disk

Checkpoints and exports go under ``--workdir`` (default ``bench/large_model_work``) and are
deleted after each model unless ``--keep``. Results: ``bench/results/large_model.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

GiB = 2**30
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_act": "silu",
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
    "vocab_size": 32000,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
MODELS: dict[str, dict[str, Any]] = {
    # ~0.85B parameters, 3.2 GiB in float32
    "small": {**LLAMA, "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 16,
              "num_attention_heads": 32, "num_key_value_heads": 8, "dtype": "float32"},
    # Llama-2-7B shapes: 6.7B parameters, 25.1 GiB in float32, 12.6 GiB in bfloat16
    "7b": {**LLAMA, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 32, "dtype": "float32"},
    "7b-bf16": {**LLAMA, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
                "num_attention_heads": 32, "num_key_value_heads": 32, "dtype": "bfloat16"},
}


# -- memory sampling ---------------------------------------------------------------------------
def _status(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(("RssAnon:", "RssFile:")):
                    key, value = line.split(":")
                    out[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out


def _children(pid: int) -> list[int]:
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:
        pass
    return kids


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo += _children(p)
    return pids


class Sampler:
    """Samples RssAnon/RssFile of a process tree every ``interval`` seconds; keeps the peaks."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid, self.interval = pid, interval
        self.peak_anon = self.peak_file = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            stats = [_status(p) for p in tree(self.pid)]
            self.peak_anon = max(self.peak_anon, sum(s.get("RssAnon", 0) for s in stats))
            self.peak_file = max(self.peak_file, sum(s.get("RssFile", 0) for s in stats))
            self._stop.wait(self.interval)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_measured(cmd: list[str], log: Path) -> dict[str, Any]:
    """Run ``cmd``; wall seconds, peak RssAnon/RssFile of its process tree, return code."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        with Sampler(proc.pid) as sampler:
            code = proc.wait()
    return {
        "seconds": time.perf_counter() - start,
        "peak_anon_gib": sampler.peak_anon / GiB,
        "peak_file_gib": sampler.peak_file / GiB,
        "returncode": code,
        "log_tail": log.read_text(errors="replace").splitlines()[-12:],
    }


# -- checkpoint generation ----------------------------------------------------------------------
def tensor_shapes(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Every persistent tensor of the Llama model, from the model built on the meta device."""
    import torch
    import transformers

    cfg = transformers.LlamaConfig(**{k: v for k, v in config.items() if k != "dtype"})
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(cfg)
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def generate(config: dict[str, Any], folder: Path, shard_bytes: int = GiB, fast: bool = False) -> dict[str, Any]:
    """Random weights (normal, std 0.02; norms 1) shard by shard: at most one shard in memory.
    ``fast``: each tensor tiles one 2**24-element random block (rolled by a random shift)."""
    import torch
    from safetensors.torch import save_file

    dtype = getattr(torch, config["dtype"])
    folder.mkdir(parents=True)
    shapes = tensor_shapes(config)
    generator = torch.Generator().manual_seed(0)
    # Large checkpoints: tensors are tiles of one random block (rolled per tensor), so generating
    # costs a copy, not a normal_ per element (the disk, not the generator, sets the pace).
    block = torch.empty(2**24, dtype=torch.float32).normal_(0, 0.02, generator=generator).to(dtype)
    groups: list[list[str]] = [[]]
    size = 0
    for name, shape in shapes.items():
        nbytes = dtype.itemsize * _numel(shape)
        if groups[-1] and size + nbytes > shard_bytes:
            groups.append([])
            size = 0
        groups[-1].append(name)
        size += nbytes
    weight_map, total, largest = {}, 0, 0
    start = time.perf_counter()
    codes = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}
    raw_block = block.view(torch.uint8).numpy().tobytes() if fast else b""
    for i, names in enumerate(groups):
        file = f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors"
        for name in names:
            weight_map[name] = file
            nbytes = dtype.itemsize * _numel(shapes[name])
            total += nbytes
            largest = max(largest, nbytes)
        if fast:  # the safetensors layout written directly: header, then each tensor's bytes
            _write_tiled(folder / file, {n: shapes[n] for n in names}, codes[dtype], dtype.itemsize, raw_block)
            continue
        shard = {}
        for name in names:
            if name.endswith("norm.weight"):
                t = torch.ones(shapes[name], dtype=dtype)
            else:
                t = torch.empty(shapes[name], dtype=torch.float32).normal_(0, 0.02, generator=generator)
                t = t.to(dtype)
            shard[name] = t
        save_file(shard, folder / file, metadata={"format": "pt"})
        del shard
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=1)
    )
    (folder / "config.json").write_text(json.dumps({**config, "dtype": config["dtype"]}, indent=1))
    return {"bytes": total, "largest": largest, "shards": len(groups),
            "parameters": sum(_numel(s) for s in shapes.values()),
            "seconds": time.perf_counter() - start}


def _write_tiled(path: Path, shapes: dict[str, tuple[int, ...]], code: str, itemsize: int, block: bytes) -> None:
    """A ``.safetensors`` file (8-byte header length, JSON header, data) whose tensors repeat
    ``block``, each from another offset (the format: huggingface/safetensors README)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in shapes.items():
        size = itemsize * _numel(shape)
        header[name] = {"dtype": code, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    view = memoryview(block)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for i, shape in enumerate(shapes.values()):
            left = itemsize * _numel(shape)
            start = (i * 7919 * itemsize) % len(block)
            while left:
                chunk = view[start : start + left]
                f.write(chunk)
                left -= len(chunk)
                start = 0


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def raw_copy(src: Path, dst: Path, limit: int | None = None) -> dict[str, Any]:
    """Copy the shards' bytes to ``dst`` (same disk) with fsync; seconds for all the bytes.

    With ``limit``, only the first ``limit`` bytes are copied (shard by shard) and the time is
    extrapolated to the whole checkpoint at the measured rate (when the disk cannot hold a second
    copy beside the export)."""
    dst.mkdir(parents=True)
    files = sorted(src.glob("*.safetensors"))
    total = sum(p.stat().st_size for p in files)
    copied = 0
    start = time.perf_counter()
    for path in files:
        if limit is not None and copied >= limit:
            break
        with open(path, "rb") as fin, open(dst / path.name, "wb") as fout:
            shutil.copyfileobj(fin, fout, 16 * 2**20)
            fout.flush()
            os.fsync(fout.fileno())
        copied += path.stat().st_size
        (dst / path.name).unlink()  # one copied shard on disk at a time
    seconds = time.perf_counter() - start
    shutil.rmtree(dst)
    return {"seconds": seconds * total / copied, "copied_bytes": copied, "measured_seconds": seconds,
            "extrapolated": copied < total, "mb_per_s": copied / seconds / 1e6}


# -- child-process jobs -------------------------------------------------------------------------
def job_meta_export(ckpt: str) -> None:
    """torch.export of the model on the meta device with the inputs onnxport uses (no ONNX)."""
    import torch

    from onnxport.hf import inputs as hf_inputs
    from onnxport.hf import meta
    from onnxport.hf.loading import LoadedModel, read_config
    from onnxport.hf.tasks import get_task

    task = get_task("text-generation")
    config = read_config(Path(ckpt))
    model = meta.build(config, task.auto_class, getattr(torch, json.loads((Path(ckpt) / "config.json").read_text())["dtype"]))
    part = hf_inputs.components(LoadedModel(model, task, Path(ckpt)))[0]
    inputs = torch.utils._pytree.tree_map(
        lambda t: t.to("meta") if isinstance(t, torch.Tensor) else t,
        part.make_inputs(hf_inputs.EXPORT_SIZES),
    )
    def dims(spec: Any) -> Any:  # onnxport's named dims → Dim.DYNAMIC (torch.export's form)
        if isinstance(spec, dict) and all(isinstance(k, int) for k in spec):
            return {k: torch.export.Dim.DYNAMIC for k in spec}
        if isinstance(spec, dict):
            return {k: dims(v) for k, v in spec.items()}
        if isinstance(spec, (list, tuple)):
            return type(spec)(dims(v) for v in spec)
        return spec

    start = time.perf_counter()
    torch.export.export(part.module, (), inputs, dynamic_shapes=dims(part.dynamic_shapes), strict=False)
    print(f"torch.export seconds {time.perf_counter() - start:.2f}")


def _step_inputs(vocab: int) -> dict[str, Any]:
    import torch

    ids = torch.randint(3, vocab, (2, 12), generator=torch.Generator().manual_seed(3))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids),
            "position_ids": torch.arange(12).expand(2, 12).contiguous()}


def job_logits(ckpt: str, onnx_path: str) -> None:
    """Logits of the exported model (onnxruntime) vs eager (the checkpoint memory-mapped)."""
    import numpy as np
    import torch

    from onnxport.hf import meta, streamed
    from onnxport.hf.checkpoint import read_checkpoint
    from onnxport.hf.loading import read_config

    config = read_config(Path(ckpt))
    checkpoint = read_checkpoint(Path(ckpt))
    model = meta.materialize(meta.build(config, "AutoModelForCausalLM", checkpoint.float_dtype()), checkpoint)
    feeds = _step_inputs(config.vocab_size)
    with torch.no_grad():
        expected = model(**feeds).logits.float().numpy()
    session = streamed.session(Path(onnx_path))
    names = [i.name for i in session.get_inputs()]
    arrays = {k: v.numpy() for k, v in feeds.items()}
    for name in names[3:]:  # empty past
        arrays[name] = np.zeros((2, config.num_key_value_heads, 0, config.head_dim), np.float32)
    actual = session.run(["logits"], arrays)[0]
    rel = float(np.abs(actual - expected).max() / np.abs(expected).max())
    print(json.dumps({"logits_max_rel_diff": rel, "logits_max_abs": float(np.abs(expected).max())}))


def job_torch_onnx(ckpt: str, out: str) -> None:
    """torch.onnx.export(dynamo=True) of the same model loaded with transformers, saved."""
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32).eval()
    feeds = _step_inputs(model.config.vocab_size)
    model.config.use_cache = False
    start = time.perf_counter()
    program = torch.onnx.export(model, (), kwargs=feeds, dynamo=True, optimize=False,
                                dynamic_shapes={k: {0: "batch", 1: "sequence"} for k in feeds})
    program.save(out, external_data=True)
    print(f"torch.onnx seconds {time.perf_counter() - start:.2f}")


# -- checks on the output -------------------------------------------------------------------------
def check_output(out: Path, checkpoint_bytes: int) -> dict[str, Any]:
    """Stored weight bytes vs the checkpoint's; every external-data reference inside ``out``."""
    import onnx

    stored, refs, bad = 0, 0, []
    root = out.resolve()
    for model_path in sorted(out.rglob("*.onnx")):  # OUT/onnx/model.onnx (transformers.js layout)
        proto = onnx.load(str(model_path), load_external_data=False)
        for init in proto.graph.initializer:
            if init.data_location != onnx.TensorProto.EXTERNAL:
                stored += len(init.raw_data)
                continue
            info = {e.key: e.value for e in init.external_data}
            path = (model_path.parent / info["location"]).resolve()
            offset, length = int(info.get("offset", 0)), int(info.get("length", 0))
            refs += 1
            stored += length
            if root not in path.parents or not path.is_file() or offset + length > path.stat().st_size:
                bad.append(f"{init.name}: {info}")
    return {"stored_bytes": stored, "stored_vs_checkpoint": stored / checkpoint_bytes,
            "bytes_within_1pct": abs(stored / checkpoint_bytes - 1) <= 0.01,
            "external_refs": refs, "bad_refs": bad[:5], "refs_inside_out": not bad}


# -- driver --------------------------------------------------------------------------------------
def bench_model(name: str, work: Path, keep: bool, torch_onnx: bool, copy_limit: int | None) -> dict[str, Any]:
    ckpt, out = work / f"{name}-ckpt", work / f"{name}-onnx"
    for path in (ckpt, out):
        shutil.rmtree(path, ignore_errors=True)
    row: dict[str, Any] = {"model": name, "config": MODELS[name]}
    try:
        row["checkpoint"] = generate(MODELS[name], ckpt, fast=name != "small")
        print(f"[{name}] checkpoint {row['checkpoint']}", flush=True)
        copy = raw_copy(ckpt, work / f"{name}-copy", copy_limit)
        row["raw_copy"] = copy
        row["raw_copy_seconds"] = copy["seconds"]
        me = run_measured([sys.executable, __file__, "--job", "meta-export", ckpt.as_posix()], work / "meta.log")
        row["meta_export"] = me
        if me["returncode"] != 0:
            raise RuntimeError(f"torch.export on meta failed: {me['log_tail']}")
        row["floor_seconds"] = me["seconds"] + row["raw_copy_seconds"]
        print(f"[{name}] floor {row['floor_seconds']:.1f} s (raw copy {row['raw_copy_seconds']:.1f} s"
              f"{' extrapolated' if copy['extrapolated'] else ''}, {copy['mb_per_s']:.0f} MB/s; "
              f"meta torch.export process {me['seconds']:.1f} s)", flush=True)
        cli = run_measured([sys.executable, "-m", "onnxport", "export", "--hf", str(ckpt), "-o", str(out)],
                           work / f"{name}-cli.log")
        row["onnxport"] = cli
        budget = 2 * GiB + row["checkpoint"]["largest"]
        row["targets"] = {
            "peak_anon_budget_gib": budget / GiB,
            "peak_anon_ok": cli["peak_anon_gib"] * GiB <= budget,
            "wall_vs_floor": cli["seconds"] / row["floor_seconds"],
            "wall_ok": cli["seconds"] <= 1.3 * row["floor_seconds"],
        }
        print(f"[{name}] onnxport: rc {cli['returncode']}, {cli['seconds']:.1f} s "
              f"({row['targets']['wall_vs_floor']:.2f}x floor), peak RssAnon {cli['peak_anon_gib']:.2f} GiB "
              f"(budget {budget / GiB:.2f}), peak RssFile {cli['peak_file_gib']:.2f} GiB", flush=True)
        if cli["returncode"] == 0:
            row["output"] = check_output(out, row["checkpoint"]["bytes"])
            print(f"[{name}] output {row['output']}", flush=True)
            if name == "small":
                onnx_path = next(p for p in (out / "onnx" / "model.onnx", out / "model.onnx") if p.exists())
                lg = run_measured([sys.executable, __file__, "--job", "logits", ckpt.as_posix(), onnx_path.as_posix()],
                                  work / "logits.log")
                row["logits"] = json.loads(lg["log_tail"][-1]) if lg["returncode"] == 0 else lg
                print(f"[{name}] logits {row['logits']}", flush=True)
        shutil.rmtree(out, ignore_errors=True)
        if torch_onnx and name == "small":
            out.mkdir()
            ref = run_measured([sys.executable, __file__, "--job", "torch-onnx", ckpt.as_posix(), (out / "model.onnx").as_posix()],
                               work / "torch_onnx.log")
            row["torch_onnx"] = ref
            if ref["returncode"] == 0:
                row["ratios_onnxport_over_torch_onnx"] = {
                    "seconds": cli["seconds"] / ref["seconds"],
                    "peak_anon": cli["peak_anon_gib"] / ref["peak_anon_gib"],
                    "peak_rss": (cli["peak_anon_gib"] + cli["peak_file_gib"]) / (ref["peak_anon_gib"] + ref["peak_file_gib"]),
                }
            print(f"[{name}] torch.onnx: rc {ref['returncode']}, {ref['seconds']:.1f} s, peak RssAnon "
                  f"{ref['peak_anon_gib']:.2f} GiB, peak RssFile {ref['peak_file_gib']:.2f} GiB; onnxport/torch.onnx "
                  f"{row.get('ratios_onnxport_over_torch_onnx')}", flush=True)
    finally:
        if not keep:
            shutil.rmtree(ckpt, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="small", help="comma list of small, 7b, 7b-bf16 (or none)")
    parser.add_argument("--workdir", type=Path, default=HERE / "large_model_work")
    parser.add_argument("--keep", action="store_true", help="keep the generated checkpoints")
    parser.add_argument("--no-torch-onnx", action="store_true", help="skip torch.onnx on the small model")
    parser.add_argument("--copy-limit-gib", type=float, default=None,
                        help="copy only this much of the checkpoint for the floor and extrapolate")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "large_model.json")
    parser.add_argument("--job", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job:
        kind, *rest = args.job
        {"meta-export": job_meta_export, "logits": job_logits, "torch-onnx": job_torch_onnx}[kind](*rest)
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"load_average_start": os.getloadavg(), "models": []}
    for name in [m for m in args.models.split(",") if m and m != "none"]:
        limit = int(args.copy_limit_gib * GiB) if args.copy_limit_gib else None
        results["models"].append(bench_model(name, args.workdir, args.keep, not args.no_torch_onnx, limit))
    results["load_average_end"] = os.getloadavg()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1, default=str))
    print(f"results: {args.json}")


if __name__ == "__main__":
    main()
