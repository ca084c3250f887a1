"""Mixture-of-experts layers captured as onnxruntime's fused ``com.microsoft.MoE`` (``target="onnxruntime"``).

transformers 5 dispatches an experts module's forward (``MixtralExperts``, ``Qwen2MoeExperts``,
``Qwen3MoeExperts``, ``OlmoeExperts``, ``DeepseekV3NaiveMoe``, ...: decorated with
``use_experts_implementation``, ``transformers/integrations/moe.py``) through
``config._experts_implementation`` and its ``ExpertsInterface``. While a model is captured for the
onnxruntime target, :func:`fused_experts` registers ``"onnxport_moe"`` there and selects it: a
module that qualifies (SwiGLU experts with SiLU — a module or ``F.silu`` itself, as LFM2-MoE's —,
``gate_up_proj`` (E, 2I, H) gate rows first, ``down_proj`` (E, H, I), or both input-major
(``is_transposed``, Aria: fed transposed, folded into the written weights), no bias, no
post-expert norm, the default gate, float32)
calls :func:`onnxport.ops.nn.moe.moe_experts`, translated to ``com.microsoft.MoE``; gpt-oss's
``GptOssExperts`` (biases, input-major weights, interleaved gate/up, its clamped SwiGLU ``_apply_gate``)
calls :func:`onnxport.ops.nn.moe.clamped_swiglu_experts`, the same op with the kernel's
``swiglu_limit``; any other falls back to transformers' ``grouped_mm`` implementation (the standard
graph, a ``Loop`` over the experts). The router stays as the model computes it: the op takes its chosen experts and
weights (see :mod:`onnxport.ops.nn.moe`), so any routing (softmax then top-k, renormalized or
not, grouped or sigmoid scores) is exact. Eager validation runs the model's own implementation:
the previous settings are restored on exit.

onnxruntime-genai's builder emits the same op for Mixtral-like models (``make_moe``,
``builders/base.py``); its input layout was read there and in ContribOperators.md.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any, cast

import torch

from onnxport.capture.expert_loops import dbrx_projections
from onnxport.ops.nn.moe import clamped_swiglu_experts, moe_experts
from onnxport.passes.ort.kernels import has_kernel

EXPERTS_IMPLEMENTATION = "onnxport_moe"


def _silu(act: Any) -> bool:
    """Whether ``act`` is SiLU: a module (``nn.SiLU``, transformers' ``SiLUActivation``) or the
    function itself (LFM2-MoE's ``act_fn = F.silu``)."""
    import transformers.activations  # heavy optional dependency, imported only for an hf export

    return isinstance(act, (torch.nn.SiLU, transformers.activations.SiLUActivation)) or act is torch.nn.functional.silu


def _projections(module: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """``module``'s ``(gate_up_proj, down_proj)`` laid out output-major, ``[E, 2I, H]`` and
    ``[E, H, I]``: an input-major module's (``is_transposed``, Aria) transposed, which
    :mod:`onnxport.passes.weight_layout` folds into the written weights."""
    gate_up, down = cast(torch.Tensor, module.gate_up_proj), cast(torch.Tensor, module.down_proj)
    if module.is_transposed:
        return gate_up.transpose(1, 2), down.transpose(1, 2)
    return gate_up, down


def qualifies(module: torch.nn.Module) -> bool:
    """Whether ``module`` is a transformers experts module :func:`moe_experts` computes exactly:
    SwiGLU with SiLU, gate rows first, no bias, float32, stored output-major or input-major."""
    from transformers.integrations import moe as hf_moe  # heavy optional dependency

    gate_up, down = getattr(module, "gate_up_proj", None), getattr(module, "down_proj", None)
    if not isinstance(gate_up, torch.Tensor) or not isinstance(down, torch.Tensor):
        return False
    if gate_up.dim() != 3 or down.dim() != 3 or gate_up.dtype != torch.float32 or down.dtype != torch.float32:
        return False
    flags = {"has_gate": True, "has_bias": False, "is_concatenated": True, "has_post_expert_norm": False}
    if any(getattr(module, name, None) is not value for name, value in flags.items()):
        return False
    transposed = getattr(module, "is_transposed", None)
    if transposed not in (True, False):
        return False
    # shapes only (qualifies runs inside the capture: a transpose here would be a second reader)
    if transposed:  # gate_up [E, H, 2I], down [E, I, H]
        experts, hidden, rows = gate_up.shape
        down_shape = tuple(down.shape)
    else:  # gate_up [E, 2I, H], down [E, H, I]
        experts, rows, hidden = gate_up.shape
        down_shape = (down.shape[0], down.shape[2], down.shape[1])
    if rows % 2 or down_shape != (experts, rows // 2, hidden):
        return False
    return _silu(getattr(module, "act_fn", None)) and getattr(type(module), "_apply_gate", None) is hf_moe._default_apply_gate


def clamped_qualifies(module: torch.nn.Module) -> bool:
    """Whether ``module`` is gpt-oss's experts module, which
    :func:`~onnxport.ops.nn.moe.clamped_swiglu_experts` computes exactly."""
    from transformers.models.gpt_oss import modeling_gpt_oss  # heavy optional dependency: see above

    if getattr(type(module), "_apply_gate", None) is not modeling_gpt_oss.GptOssExperts._apply_gate:
        return False
    tensors = [getattr(module, n, None) for n in ("gate_up_proj", "gate_up_proj_bias", "down_proj", "down_proj_bias")]
    if not all(isinstance(t, torch.Tensor) and t.dtype == torch.float32 for t in tensors):
        return False
    gate_up, gate_up_bias, down, down_bias = tensors
    assert gate_up is not None and gate_up_bias is not None and down is not None and down_bias is not None
    if gate_up.dim() != 3 or gate_up.shape[2] % 2:
        return False
    experts, hidden, rows = gate_up.shape
    return (
        tuple(gate_up_bias.shape) == (experts, rows)
        and tuple(down.shape) == (experts, rows // 2, hidden)
        and tuple(down_bias.shape) == (experts, hidden)
        and getattr(module, "is_transposed", None) is True
        and getattr(module, "has_bias", None) is True
    )


def _forward(self: Any, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor) -> torch.Tensor:
    """The ``"onnxport_moe"`` experts implementation (module docstring)."""
    from transformers.integrations import moe as hf_moe  # heavy optional dependency

    weights, index = top_k_weights.to(hidden_states.dtype), top_k_index.to(torch.int64)
    if qualifies(self):
        return moe_experts(hidden_states, index, weights, *_projections(self))
    if clamped_qualifies(self):
        return clamped_swiglu_experts(
            hidden_states, index, weights, self.gate_up_proj, self.gate_up_proj_bias, self.down_proj,
            self.down_proj_bias, float(self.alpha), float(self.limit),
        )  # fmt: skip
    return hf_moe.grouped_mm_experts_forward(self, hidden_states, top_k_index, top_k_weights)


def fused_count(model: torch.nn.Module) -> int:
    """How many experts modules of ``model`` :func:`fused_experts` would fuse."""
    return sum(
        1 for m in model.modules() if hasattr(m, "gate_up_proj") and (qualifies(m) or clamped_qualifies(m))
    )


@contextlib.contextmanager
def fused_experts(model: torch.nn.Module) -> Iterator[int]:
    """Within the block, ``model``'s qualifying experts modules compute through
    :func:`onnxport.ops.nn.moe.moe_experts` (module docstring); yields how many qualify.

    Nothing changes (0) when onnxruntime has no CPU ``MoE`` kernel or no module qualifies.
    """
    count = fused_count(model) if has_kernel("MoE") else 0
    if not count:
        yield 0
        return
    from transformers.integrations import moe as hf_moe  # heavy optional dependency

    hf_moe.ALL_EXPERTS_FUNCTIONS.register(EXPERTS_IMPLEMENTATION, _forward)
    configs: dict[int, Any] = {
        id(m.config): m.config for m in model.modules() if hasattr(m, "gate_up_proj") and hasattr(m, "config")
    }
    saved = {key: config._experts_implementation for key, config in configs.items()}
    try:
        for config in configs.values():
            config._experts_implementation = EXPERTS_IMPLEMENTATION
        yield count
    finally:
        for key, config in configs.items():
            config._experts_implementation = saved[key]


def _is_dbrx_experts(module: torch.nn.Module) -> bool:
    """Whether ``module`` is DBRX's experts module (``DbrxExperts``: ``mlp.w1``, ``mlp.v1``,
    ``mlp.w2`` of ``[E·I, H]`` float32 each, SiLU) that :func:`moe_experts` computes exactly."""
    mlp = getattr(module, "mlp", None)
    if type(module).__name__ != "DbrxExperts" or mlp is None:
        return False
    experts, inner, hidden = (getattr(module, n, None) for n in ("num_experts", "ffn_hidden_size", "hidden_size"))
    if not (isinstance(experts, int) and isinstance(inner, int) and isinstance(hidden, int)):
        return False
    tensors = [getattr(mlp, n, None) for n in ("w1", "v1", "w2")]
    if not all(isinstance(t, torch.Tensor) and t.dtype == torch.float32 for t in tensors):
        return False
    shape = (experts * inner, hidden)
    return _silu(getattr(mlp, "activation_fn", None)) and all(tuple(t.shape) == shape for t in tensors)  # type: ignore[union-attr]


def _dbrx_forward(
    self: Any, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor
) -> torch.Tensor:
    """``DbrxExperts.forward`` through :func:`moe_experts`: the ``[E·I, H]`` parameters viewed as
    ``[E, I, H]``, gate and up joined ``[E, 2I, H]``, down transposed to ``[E, H, I]`` (folded
    into the written weights by :mod:`onnxport.passes.weight_layout`)."""
    gate, up, down = dbrx_projections(self)
    rows = hidden_states.reshape(-1, self.hidden_size)
    weights, index = top_k_weights.to(rows.dtype), top_k_index.to(torch.int64)
    out = moe_experts(rows, index, weights, torch.cat([gate, up], dim=1), down.transpose(1, 2))
    return out.view(hidden_states.shape[0], -1, self.hidden_size)


@contextlib.contextmanager
def fused_looped_experts(model: torch.nn.Module) -> Iterator[int]:
    """Within the block, ``model``'s DBRX experts modules (which loop over the experts a batch hits
    in Python; captured otherwise through :mod:`onnxport.capture.expert_loops`) compute through
    :func:`moe_experts` (``com.microsoft.MoE``) when onnxruntime has the kernel and they qualify
    (:func:`_is_dbrx_experts`). Yields how many; their own forward is back on exit (eager
    validation runs it)."""
    modules = [m for m in model.modules() if _is_dbrx_experts(m)] if has_kernel("MoE") else []
    for m in modules:
        m.forward = types.MethodType(_dbrx_forward, m)  # type: ignore[method-assign]
    try:
        yield len(modules)
    finally:
        for m in modules:
            del m.forward


@contextlib.contextmanager
def grouped_mm_fallback() -> Iterator[None]:
    """Within the block, transformers' ``grouped_mm`` experts use its ``grouped_mm_fallback``
    custom op instead of ``torch.nn.functional.grouped_mm``, whose meta kernel accepts bfloat16
    only: the streamed path runs (probes, captures) float32 meta-device models.

    transformers chooses between the two in ``transformers.integrations.moe._can_use_grouped_mm``
    (device, dtype and torch version checks); this replaces that choice for the block. Both
    translate to the same ``Loop`` (:mod:`onnxport.ops.nn.moe`) and compute the same values.
    Nothing changes when the installed transformers has no such function.
    """
    try:
        from transformers.integrations import moe as hf_moe  # heavy optional dependency
    except ImportError:
        yield
        return
    original = getattr(hf_moe, "_can_use_grouped_mm", None)
    if original is None:
        yield
        return
    hf_moe._can_use_grouped_mm = lambda *args, **kwargs: False
    try:
        yield
    finally:
        hf_moe._can_use_grouped_mm = original
