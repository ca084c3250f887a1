"""Multi-head latent attention (MLA) in its absorbed form, for both targets.

DeepSeek-V2/V3 (and the decoders transformers builds the same way: Youtu, GLM-4.7-Flash's
``glm4_moe_lite``, MiniCPM3, Mistral 4, A.X K1 ``axk1``, LongCat-Flash) cache one latent per
token instead of per-head keys and values: the normalized ``c = kv_a_layernorm(kv_a_proj_with_mqa(x)[:rank])`` (``kv_lora_rank`` wide) and one
rotated key part ``k_rot`` (``qk_rope_head_dim``) shared by every head. transformers
(``DeepseekV3Attention.forward`` / ``expand_kv`` in ``modeling_deepseek_v3.py``) expands the whole
cache back into per-head keys and values at every step, ``kv_b_proj(c)`` over all ``T`` cached
tokens: a decode step costs ``T * rank * heads * (qk_nope_head_dim + v_head_dim)`` multiply-adds
per layer, and its keys (``qk_nope + qk_rope`` wide) and values (``v_head_dim``) differ in width,
which onnxruntime's GroupQueryAttention refuses ("Input 'value' is expected to have same hidden
size as key").

The absorbed form (DeepSeek-V2 paper, arXiv:2405.04434, section 2.1.2: the up-projections are
absorbed into the query and the output) computes the same attention over the latent itself.
With ``W = kv_b_proj.weight.view(heads, qk_nope + v_head, rank)``, ``W_uk = W[:, :qk_nope]`` and
``W_uv = W[:, qk_nope:]``, per head ``h``::

    score(h, t) = q_nope[h] · (W_uk[h] c_t) + q_rot[h] · k_rot_t
                = [q_nope[h] W_uk[h], q_rot[h]] · [c_t, k_rot_t]
    out[h]      = W_uv[h] Σ_t p(h, t) c_t

so the attention is multi-query attention (one key head for all heads) with the query
``[q_nope W_uk, q_rot]`` and keys ``[c, k_rot]`` (``rank + qk_rope`` wide), the same softmax scale,
and values that may be the keys themselves: the output's first ``rank`` columns are ``Σ p c``,
its last ``qk_rope`` are dropped, then ``W_uv`` maps each head to ``v_head_dim``. The cache holds
``[c, k_rot]`` for both the key and the value (GroupQueryAttention takes both, of one width):
``2 * (rank + qk_rope)`` floats per token and layer (DeepSeek-V2-Lite: 1152) against
transformers' expanded ``heads * (qk_nope + qk_rope + v_head)`` (16 * 320 = 5120) per step, and
the step reads it once. The rotation stays outside the kernel (it covers the last ``qk_rope``
columns only). That is the onnxruntime target's cache.

The standard target keeps transformers' cache (``key``: the latent, ``value``: ``k_rot``, the
layout Optimum and transformers.js feed) and attends over their concatenation at each step, the
latent alone as the values (``transformers_cache``; since session 42: DeepSeek-V2-Lite's decode
step at 1024 cached tokens in 0.42x the time of transformers' computation, ``bench/mla_speed.py``).

:func:`absorbed_latent_attention` is entered by :func:`onnxport.hf.export.export` for every
target. Every export checks the absorbed graph against the model in eager, and
``tests/hf/test_latent_attention.py`` checks the absorbed eager model against transformers' own.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import torch


class Form(NamedTuple):
    """How a model type's attention class computes MLA (what :func:`absorbed_forward` must do alike)."""

    class_name: str
    rotary: str  # "complex", "cos_sin" or "interleave" (absorbed_forward)
    llama4_scale: bool = False  # the query takes Llama 4's position-dependent scale
    lora_scale: bool = False  # the query and the latent take LongCat-Flash's LoRA scales


# The attention classes whose forward is DeepSeek-V3's (source-identical: Youtu, GLM-4.7-Flash;
# MiniCPM3 without the interleaved rotary option; A.X K1 with the query LoRA always),
# DeepSeek-V2's (complex rotary), Mistral 4's (DeepSeek-V3's with Llama 4's position-dependent
# query scale, ``get_llama_4_attn_scale``) or LongCat-Flash's (``LongcatFlashMLA``: DeepSeek-V3's
# with its LoRA scales ``(hidden / q_lora_rank) ** 0.5`` on the query and ``(hidden /
# kv_lora_rank) ** 0.5`` on the latent, the rotary always interleaved), by model_type.
ABSORBABLE = {
    "deepseek_v2": Form("DeepseekV2Attention", "complex"),
    "deepseek_v3": Form("DeepseekV3Attention", "cos_sin"),
    "youtu": Form("YoutuAttention", "cos_sin"),
    "glm4_moe_lite": Form("Glm4MoeLiteAttention", "cos_sin"),
    "minicpm3": Form("MiniCPM3Attention", "cos_sin"),
    "mistral4": Form("Mistral4Attention", "cos_sin", llama4_scale=True),
    "axk1": Form("AXK1Attention", "cos_sin"),
    "longcat_flash": Form("LongcatFlashMLA", "interleave", lora_scale=True),
}


def model_types_of(model_or_folder: Any) -> tuple[str, ...]:
    """The ``model_type`` of a transformers model or of a folder's ``config.json``, and its text
    config's (a vision-language model's decoder); empty when there is none to read (the export
    reports that itself)."""
    config = getattr(model_or_folder, "config", None)
    if config is not None:
        text = getattr(config, "text_config", None)
        types = (getattr(config, "model_type", None), getattr(text, "model_type", None))
    else:
        try:
            data = json.loads((Path(model_or_folder) / "config.json").read_text())
        except (OSError, ValueError, TypeError):
            return ()
        text = data.get("text_config") if isinstance(data, dict) else None
        types = (data.get("model_type") if isinstance(data, dict) else None,
                 text.get("model_type") if isinstance(text, dict) else None)  # fmt: skip
    return tuple(t for t in types if isinstance(t, str))


@contextlib.contextmanager
def absorbed_latent_attention(model_types: Iterable[str], transformers_cache: bool = False) -> Iterator[bool]:
    """Within the block, the latent-attention classes of ``model_types`` (:data:`ABSORBABLE`) run
    the absorbed form (module docstring): every instance, so the export's meta model, its
    two-layer copy and the validation's models alike. Yields whether a class was swapped; other
    model types are left alone. The classes' own forwards are restored on exit.
    ``transformers_cache``: keep transformers' cache (``key`` the latent, ``value`` ``k_rot``; the
    standard target, :func:`absorbed_forward`)."""
    with contextlib.ExitStack() as stack:
        swapped = [
            stack.enter_context(_absorbed(t, transformers_cache)) for t in dict.fromkeys(model_types) if t in ABSORBABLE
        ]
        yield bool(swapped)


@contextlib.contextmanager
def _absorbed(model_type: str, transformers_cache: bool) -> Iterator[bool]:
    form = ABSORBABLE[model_type]
    # transformers: a heavy optional dependency, imported for this model type only
    namespace = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    cls = getattr(namespace, form.class_name)
    original = cls.__dict__["forward"]
    cls.forward = functools.partialmethod(
        absorbed_forward, rotary=form.rotary, llama4_scale=form.llama4_scale, lora_scale=form.lora_scale,
        transformers_cache=transformers_cache,
    )  # fmt: skip
    try:
        yield True
    finally:
        cls.forward = original


def _rotated(module: Any, rotary: str, q_rot: torch.Tensor, k_rot: torch.Tensor, position_embeddings: Any) -> Any:
    """``q_rot``, ``k_rot`` rotated as the module's own forward rotates them (its modeling file's
    functions: V2's complex ``apply_rotary_emb``, V3's ``apply_rotary_pos_emb[_interleave]``;
    ``"interleave"``: always the interleaved one, LongCat-Flash's)."""
    namespace = sys.modules[type(module).__module__]
    if rotary == "complex":
        return namespace.apply_rotary_emb(q_rot, k_rot, position_embeddings.to(q_rot.device))
    cos, sin = position_embeddings
    if rotary == "interleave" or getattr(module.config, "rope_interleave", False):
        return namespace.apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
    return namespace.apply_rotary_pos_emb(q_rot, k_rot, cos, sin)


def absorbed_forward(
    module: Any,
    hidden_states: torch.Tensor,
    position_embeddings: Any = None,
    attention_mask: torch.Tensor | None = None,
    past_key_values: Any = None,
    *,
    rotary: str,
    llama4_scale: bool,
    lora_scale: bool = False,
    transformers_cache: bool = False,
    **kwargs: Any,
) -> tuple[torch.Tensor, Any]:
    """One MLA layer in the absorbed form (module docstring).

    Args:
        module: The transformers attention module (``q_proj`` or ``q_a_proj``/``q_a_layernorm``/
            ``q_b_proj``, ``kv_a_proj_with_mqa``, ``kv_a_layernorm``, ``kv_b_proj``, ``o_proj``).
        hidden_states, position_embeddings, attention_mask, past_key_values: As the decoder layer
            passes them (``hidden_states`` ``[batch, sequence, hidden]``).
        rotary: The rotary form, ``"complex"``, ``"cos_sin"`` or ``"interleave"`` (:data:`ABSORBABLE`).
        llama4_scale: Whether the query takes Llama 4's scale from ``kwargs["position_ids"]``.
        lora_scale: Whether the query and the latent take the module's ``mla_scale_q_lora`` and
            ``mla_scale_kv_lora`` (LongCat-Flash).
        transformers_cache: Keep transformers' cache (``key``: the latent ``[batch, 1, T, rank]``,
            ``value``: ``k_rot`` ``[batch, 1, T, qk_rope]``) and attend over their concatenation
            per step, the latent alone as the values (the standard target: the layout Optimum and
            transformers.js feed, the cache never expanded by ``kv_b_proj``).
        kwargs: The layer's other keyword arguments, passed on to the attention function.

    Returns:
        ``(output [batch, sequence, hidden], attention weights or None)``; the cache's layer
        ``layer_idx`` receives ``[c, k_rot]`` ``[batch, 1, sequence, rank + qk_rope]`` as both its
        key and its value (``transformers_cache``: ``c`` and ``k_rot``, as transformers).
    """
    namespace = sys.modules[type(module).__module__]
    batch, length = hidden_states.shape[:-1]
    heads, nope, rope = module.num_heads, module.qk_nope_head_dim, module.qk_rope_head_dim
    rank, v_head = module.kv_lora_rank, module.v_head_dim
    if module.q_lora_rank is None:
        q = module.q_proj(hidden_states)
    else:
        q = module.q_b_proj(module.q_a_layernorm(module.q_a_proj(hidden_states)))
    q_nope, q_rot = torch.split(q.view(batch, length, heads, nope + rope).transpose(1, 2), [nope, rope], dim=-1)
    latent, k_rot = torch.split(module.kv_a_proj_with_mqa(hidden_states), [rank, rope], dim=-1)
    latent = module.kv_a_layernorm(latent).view(batch, 1, length, rank)
    if lora_scale:  # LongCat-Flash: before the rotation, as its forward scales them
        q_nope, q_rot = q_nope * module.mla_scale_q_lora, q_rot * module.mla_scale_q_lora
        latent = latent * module.mla_scale_kv_lora
    q_rot, k_rot = _rotated(module, rotary, q_rot, k_rot.view(batch, 1, length, rope), position_embeddings)
    if transformers_cache:
        if past_key_values is not None:
            latent, k_rot = past_key_values.update(latent, k_rot, module.layer_idx)
        keys, values = torch.cat((latent, k_rot), dim=-1), latent
    else:
        keys = values = torch.cat((latent, k_rot), dim=-1)
        if past_key_values is not None:  # the same values in both: each its own buffer for the kernel
            keys, values = past_key_values.update(keys, values, module.layer_idx)
    weight = module.kv_b_proj.weight.view(heads, nope + v_head, rank)
    query = torch.cat((torch.matmul(q_nope, weight[:, :nope]), q_rot), dim=-1)  # [batch, heads, sequence, rank + rope]
    if llama4_scale:  # a factor per position on the whole query, so on the absorbed one alike
        scaling = module.config.rope_parameters
        query = query * namespace.get_llama_4_attn_scale(
            kwargs["position_ids"], scaling.get("llama_4_scaling_beta"), scaling.get("original_max_position_embeddings")
        ).to(query.dtype)
    # the attention function repeats the keys num_key_value_groups times itself
    keys = namespace.repeat_kv(keys, heads // module.num_key_value_groups)
    values = namespace.repeat_kv(values, heads // module.num_key_value_groups)
    attention = namespace.ALL_ATTENTION_FUNCTIONS.get_interface(
        module.config._attn_implementation, namespace.eager_attention_forward
    )
    out, weights = attention(module, query, keys, values, attention_mask, dropout=0.0, scaling=module.scaling, **kwargs)
    # out: [batch, sequence, heads, rank + rope] → each head's latent through W_uv
    out = torch.matmul(out[..., :rank].transpose(1, 2), weight[:, nope:].transpose(1, 2))
    return module.o_proj(out.transpose(1, 2).reshape(batch, length, heads * v_head)), weights
