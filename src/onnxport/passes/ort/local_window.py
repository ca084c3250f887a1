"""Sliding-window layers: ``local_window_size`` on their ``com.microsoft.GroupQueryAttention``.

A sliding-window decoder layer (Mistral, Gemma 2/3's local layers, Starcoder2) attends to the last
``sliding_window`` positions, the query's own included (transformers'
``sliding_window_causal_mask_function``: ``kv_idx > q_idx - sliding_window``). The standard graph
carries the window in the attention mask, which the GQA fusion passes on as ``attention_bias``;
onnxruntime's kernel also takes the window as the attribute ``local_window_size``
(docs/ContribOperators.md; onnxruntime-genai's builder sets it to ``config.sliding_window``,
``get_attention_op_attributes`` in src/python/py/models/builders/base.py), which lets the kernel
and onnxruntime-genai's shared-buffer cache window the keys without the mask. The same value was
checked numerically here: ``local_window_size = sliding_window`` with and without the bias equals
the standard graph (tests/passes/ort/test_local_window.py); ``sliding_window ± 1`` does not.

Which layer is windowed is not in the graph's ops but in the model's config, so the caller
names them by their past-key graph input (``past_key_values.{i}.key``, :mod:`onnxport.hf`).
"""

from __future__ import annotations

from collections.abc import Mapping

import onnx_ir as ir

from onnxport.passes.ort.kernels import MICROSOFT

PAST_KEY_INPUT = 3  # GroupQueryAttention's ``past_key`` input


class LocalWindowPass(ir.passes.InPlacePass):
    """Set ``local_window_size`` on each GroupQueryAttention whose past key is a named graph input.

    Args:
        windows: Past-key graph input name → window (positions attended, the query's included).
    """

    def __init__(self, windows: Mapping[str, int]) -> None:
        super().__init__()
        self.windows = dict(windows)

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for node in model.graph:
            if node.op_type != "GroupQueryAttention" or node.domain != MICROSOFT:
                continue
            past = node.inputs[PAST_KEY_INPUT] if len(node.inputs) > PAST_KEY_INPUT else None
            if past is None or not past.is_graph_input() or past.name not in self.windows:
                continue
            window = int(self.windows[past.name])
            node.attributes["local_window_size"] = ir.AttrInt64("local_window_size", window)
            modified = True
        return ir.passes.PassResult(model, modified)
