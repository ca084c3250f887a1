"""Decode-step latency of onnxport's encoder-decoder folders against eager PyTorch, same run.

    python bench/seq2seq_speed.py [--workdir DIR] [--steps 24] [--threads 2]

For a Whisper-tiny-shaped model (d_model 384, 4 + 4 layers, 1500 encoder frames, vocab 51865)
and a BART-base-shaped one (d_model 768, 6 + 6 layers, 512 encoder tokens, vocab 50265), random
weights saved with ``save_pretrained`` into ``--workdir``: exports the folder with
``onnxport.hf.export`` (``encoder_model.onnx`` + ``decoder_model_merged.onnx``, the cross-attention
cache computed on the first step and fed back with ``use_cache_branch``), then runs greedy decoding
for ``--steps`` tokens, batch 1:

- onnxruntime (CPU, ``--threads`` intra-op threads): the encoder once, the first decoder step, the
  median of the later steps;
- eager PyTorch (``torch.set_num_threads(--threads)``): the same with transformers'
  ``EncoderDecoderCache`` (its cross-attention cache filled on the first step).

Prints the milliseconds and the ratios onnxport / eager, and whether both decoded the same tokens.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import time
from typing import Any

import numpy as np
import onnxruntime as ort
import torch

import onnxport.hf
from onnxport.hf.generate import empty_cache, next_cache

SHAPES: dict[str, tuple[str, dict[str, Any]]] = {
    "whisper-tiny": ("WhisperForConditionalGeneration", dict(
        d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6, decoder_attention_heads=6,
        encoder_ffn_dim=1536, decoder_ffn_dim=1536, num_mel_bins=80, vocab_size=51865, max_source_positions=1500,
        max_target_positions=448, decoder_start_token_id=50258,
    )),
    "bart-base": ("BartForConditionalGeneration", dict(
        d_model=768, encoder_layers=6, decoder_layers=6, encoder_attention_heads=12, decoder_attention_heads=12,
        encoder_ffn_dim=3072, decoder_ffn_dim=3072, vocab_size=50265, max_position_embeddings=1024,
        decoder_start_token_id=2, forced_eos_token_id=None,
    )),
}  # fmt: skip
ENCODER_TOKENS = 512


def build(name: str, folder: pathlib.Path) -> Any:
    import transformers

    cls, config = SHAPES[name]
    if not (folder / "config.json").is_file():
        torch.manual_seed(0)
        model_cls = getattr(transformers, cls)
        model_cls(model_cls.config_class(**config)).eval().save_pretrained(folder)
    return getattr(transformers, cls).from_pretrained(folder).eval()


def encoder_inputs(model: Any) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    config = model.config
    if hasattr(config, "num_mel_bins"):
        frames = 2 * config.max_source_positions
        return {"input_features": torch.randn(1, config.num_mel_bins, frames, generator=gen)}
    ids = torch.randint(3, config.vocab_size, (1, ENCODER_TOKENS), generator=gen)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def run_onnx(folder: pathlib.Path, inputs: dict[str, torch.Tensor], start: int, steps: int, threads: int) -> dict[str, Any]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    encoder = ort.InferenceSession(str(folder / "onnx" / "encoder_model.onnx"), options, providers=["CPUExecutionProvider"])
    decoder = ort.InferenceSession(str(folder / "onnx" / "decoder_model_merged.onnx"), options, providers=["CPUExecutionProvider"])
    feeds_in = {k: v.numpy() for k, v in inputs.items()}
    began = time.perf_counter()
    (hidden,) = encoder.run(None, feeds_in)
    encoder_ms = 1e3 * (time.perf_counter() - began)
    fixed = {"encoder_hidden_states": hidden}
    names = {i.name for i in decoder.get_inputs()}
    if "encoder_attention_mask" in names:
        fixed["encoder_attention_mask"] = feeds_in["attention_mask"]
    feeds = {"input_ids": np.array([[start]], dtype=np.int64), **empty_cache(decoder, 1)}
    times, tokens = [], []
    for step in range(steps):
        if "use_cache_branch" in names:  # absent from folders of onnxport before the cross-attention cache
            feeds["use_cache_branch"] = np.array([step > 0])
        began = time.perf_counter()
        outputs = decoder.run(None, {**fixed, **feeds})
        times.append(1e3 * (time.perf_counter() - began))
        token = int(outputs[0][0, -1].argmax())
        tokens.append(token)
        feeds = {"input_ids": np.array([[token]], dtype=np.int64), **next_cache(decoder, outputs)}
    return {"encoder": encoder_ms, "first": times[0], "later": statistics.median(times[2:]), "tokens": tokens}


def run_eager(model: Any, inputs: dict[str, torch.Tensor], start: int, steps: int) -> dict[str, Any]:
    from transformers import DynamicCache, EncoderDecoderCache

    with torch.no_grad():
        began = time.perf_counter()
        encoded = model.get_encoder()(**inputs)
        encoder_ms = 1e3 * (time.perf_counter() - began)
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        ids = torch.tensor([[start]])
        extra = {"attention_mask": inputs["attention_mask"]} if "attention_mask" in inputs else {}
        times, tokens = [], []
        for _ in range(steps):
            began = time.perf_counter()
            out = model(encoder_outputs=encoded, decoder_input_ids=ids, past_key_values=cache, use_cache=True, **extra)
            times.append(1e3 * (time.perf_counter() - began))
            cache = out.past_key_values
            token = int(out.logits[0, -1].argmax())
            tokens.append(token)
            ids = torch.tensor([[token]])
    return {"encoder": encoder_ms, "first": times[0], "later": statistics.median(times[2:]), "tokens": tokens}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=pathlib.Path, default=pathlib.Path("/tmp/onnxport-seq2seq-bench"))
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    ok = True
    for name in args.models:
        source, out = args.workdir / f"{name}-src", args.workdir / name
        model = build(name, source)
        if not (out / "onnx" / "decoder_model_merged.onnx").is_file():
            began = time.perf_counter()
            onnxport.hf.export(source, output_dir=out)
            print(f"{name}: exported in {time.perf_counter() - began:.1f} s")
        inputs = encoder_inputs(model)
        start = model.config.decoder_start_token_id
        onnx = run_onnx(out, inputs, start, args.steps, args.threads)
        eager = run_eager(model, inputs, start, args.steps)
        same = onnx["tokens"] == eager["tokens"]
        ok = ok and same
        print(f"{name}, batch 1, {args.steps} greedy steps ({'same tokens' if same else 'DIFFERENT tokens'}):")
        for key, label in (("encoder", "encoder"), ("first", "first decoder step"), ("later", "later steps (median)")):
            print(f"  {label:22s} onnxport {onnx[key]:8.2f} ms   eager {eager[key]:8.2f} ms   ratio {onnx[key] / eager[key]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
