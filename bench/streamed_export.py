"""Export time and peak memory of ``onnxport export --hf CKPT -o OUT --target onnxruntime
[--quantize int4]`` on the 0.85B Llama of ``large_model.py`` (``MODELS["small"]``), for two
onnxport source trees (before/after a change) and onnxruntime-genai's model builder, in one run.

Each export is a child process; the peak RssAnon/RssFile of its process tree is sampled as
``large_model.py`` does (:class:`large_model.Sampler`). The runs alternate in the order given, so
they see the same machine load; only same-run ratios mean something on a shared machine. The
checkpoint (with a word-level tokenizer, which the builder needs) is generated once into
``--work`` and kept unless ``--clean``; every export folder is deleted after its figures.

    HF_HUB_OFFLINE=1 python bench/streamed_export.py --before /work/main/src --after src
    HF_HUB_OFFLINE=1 python bench/streamed_export.py --runs "after int4,builder int4" --clean
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import large_model as lm

HERE = Path(__file__).resolve().parent


def tokenizer(folder: Path, vocab_size: int) -> None:
    """A word-level tokenizer (onnxruntime-genai's builder refuses a folder without one)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"t{i}": i for i in range(3, vocab_size)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<unk>"
    ).save_pretrained(folder)


def commands(args: argparse.Namespace, ckpt: Path) -> dict[str, tuple[str | None, list[str]]]:
    """Run name → (PYTHONPATH or None, command with ``{out}``)."""
    cli = [sys.executable, "-m", "onnxport", "export", "--hf", str(ckpt), "-o", "{out}", "--target", "onnxruntime"]
    builder = [str(Path(args.venv) / "bin" / "python"), "-m", "onnxruntime_genai.models.builder",
               "-i", str(ckpt), "-o", "{out}", "-e", "cpu", "-c", str(Path(args.work) / "cache")]  # fmt: skip
    return {
        "before ort": (args.before, cli),
        "after ort": (args.after, cli),
        "before int4": (args.before, [*cli, "--quantize", "int4"]),
        "after int4": (args.after, [*cli, "--quantize", "int4"]),
        "builder int4": (None, [*builder, "-p", "int4"]),
        "builder fp32": (None, [*builder, "-p", "fp32"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="/work/main/src", help="onnxport source tree (before)")
    parser.add_argument("--after", default=str(HERE.parent / "src"), help="onnxport source tree (after)")
    parser.add_argument("--venv", default="/work/venv-genai", help="venv with onnxruntime-genai")
    parser.add_argument("--work", default=str(HERE / "large_model_work" / "streamed_export"))
    parser.add_argument("--runs", default="before ort,after ort,before int4,after int4,builder int4")
    parser.add_argument("--clean", action="store_true", help="delete the checkpoint at the end")
    args = parser.parse_args()
    work = Path(args.work)
    ckpt = work / "ckpt"
    if not ckpt.exists():
        lm.generate(lm.MODELS["small"], ckpt, fast=True)
        tokenizer(ckpt, lm.MODELS["small"]["vocab_size"])
    table = commands(args, ckpt)
    results: dict[str, object] = {
        "checkpoint_bytes": sum(p.stat().st_size for p in ckpt.glob("*.safetensors"))
    }
    for name in args.runs.split(","):
        src, cmd = table[name]
        out = work / name.replace(" ", "-")
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work / "cache", ignore_errors=True)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", **({"PYTHONPATH": src} if src else {})}
        log = work / f"{out.name}.log"
        load = open("/proc/loadavg").read().split()[:3]
        start = time.perf_counter()
        with open(log, "w") as f:
            proc = subprocess.Popen(
                [c.replace("{out}", str(out)) for c in cmd], stdout=f, stderr=subprocess.STDOUT, env=env
            )
            with lm.Sampler(proc.pid) as sampler:
                code = proc.wait()
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) if out.exists() else 0
        lines = log.read_text(errors="replace").splitlines()
        results[name] = {
            "seconds": round(time.perf_counter() - start, 1),
            "peak_anon_gib": round(sampler.peak_anon / lm.GiB, 2),
            "peak_file_gib": round(sampler.peak_file / lm.GiB, 2),
            "returncode": code,
            "output_gib": round(size / lm.GiB, 3),
            "load_average_before": load,
            "summary": [x for x in lines if x.startswith(("Validation", "Quantized", "Weights:"))],
        }
        print(name, json.dumps(results[name]), flush=True)
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(work / "cache", ignore_errors=True)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "streamed_export.json").write_text(json.dumps(results, indent=1))
    if args.clean:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
