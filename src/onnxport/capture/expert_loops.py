"""Mixture-of-experts layers that loop over the experts their tokens hit, computed without the loop
while captured.

transformers' SwitchTransformers and NLLB-MoE experts (``SwitchTransformersExperts.forward``,
``NllbMoeExperts.forward``, modules of ``expert_{i}`` feed-forwards) run::

    expert_mask = ...                                       # (experts, k, tokens), 0/1
    expert_hit = (expert_mask.sum((-1, -2)) > 0).nonzero()   # data-dependent
    for e in expert_hit:
        idx, top_x = torch.where(expert_mask[e].squeeze(0))  # data-dependent
        out.index_add_(0, top_x, expert_e(x[top_x]) * weights[top_x, idx, None])

The loop's trip count and the gathered token counts depend on the routing: torch.export stops at
the ``nonzero`` (a data-dependent guard), and a meta-device probe cannot run it. During capture
:func:`_dense_sum` computes the same sum over every expert and every token, each expert's output
weighted by ``w[t, e] = sum_k expert_mask[e, k, t] * weights[t, k]``, which is 0 where the loop
skips the pair (an expert hit by no token adds exact zeros). The per-expert product is taken in
the same order (expert output times weight, then cast); only tokens routed to one expert twice
(NLLB-MoE's mask, which the loop visits once per ``k``) sum their weights before the product, a
rounding-level difference. The graph computes every expert for every token: exact for any
routing, at the cost of ``experts`` times one expert's work.

DBRX's experts (``DbrxExperts.forward``) run the same loop over SwiGLU experts stored as three
``[E·I, H]`` parameters (``mlp.w1`` gate, ``mlp.v1`` up, ``mlp.w2`` down, each expert's rows
input-major). :func:`dbrx_experts` views them as ``[E, I, H]`` and calls transformers' own
``grouped_mm`` experts implementation (``grouped_mm_experts_forward``,
``transformers/integrations/moe.py``: the (token, expert) pairs sorted by expert, one grouped
matmul per projection), given ``gate_up_proj`` = gate and up joined input-major ``[E, H, 2I]`` and
``down_proj`` = ``w2`` viewed ``[E, I, H]``: each token's rows multiply its own experts only. The
views and the join are folded into the written weights (:mod:`onnxport.passes.weight_layout`).
LongCat-Flash's experts add identity experts to the same loop (:func:`longcat_experts`).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import torch


def _dense_sum(
    experts: Any, hidden_states: torch.Tensor, expert_mask: torch.Tensor, weights: torch.Tensor, scale: float
) -> torch.Tensor:
    """``sum_e expert_e(hidden_states) * w[:, e]`` (module docstring), each term times ``scale``.

    Args:
        experts: The ``expert_{i}`` module dict.
        hidden_states: (tokens, hidden).
        expert_mask: (experts, k, tokens) 0/1 routing mask.
        weights: (tokens, k) routing weights.
        scale: Factor on each expert's weighted output (NLLB-MoE's ``1 - moe_token_dropout``).
    """
    per_expert = torch.einsum("ekt,tk->te", expert_mask.to(weights.dtype), weights)
    final = torch.zeros_like(hidden_states)
    for e in range(expert_mask.shape[0]):
        out = experts[f"expert_{e}"](hidden_states) * per_expert[:, e, None]
        if scale != 1.0:
            out = out * scale
        final = final + out.to(hidden_states.dtype)
    return final


def switch_experts(_original: Callable[..., Any]) -> Callable[..., Any]:
    """``SwitchTransformersExperts.forward``: ``selected_experts`` (tokens, 1, experts) one-hot,
    ``routing_weights`` (tokens, 1)."""

    @functools.wraps(_original)
    def forward(self: Any, hidden_states: torch.Tensor, selected_experts: torch.Tensor,
                routing_weights: torch.Tensor) -> torch.Tensor:  # fmt: skip
        return _dense_sum(self, hidden_states, selected_experts.permute(2, 1, 0), routing_weights, 1.0)

    return forward


def nllb_moe_experts(_original: Callable[..., Any]) -> Callable[..., Any]:
    """``NllbMoeExperts.forward``: ``router_mask`` (tokens, experts), whose values the loop reads
    as expert indices (``one_hot(router_mask, num_experts)``), ``router_probs`` (tokens, experts);
    in eval mode each expert's output is scaled by ``1 - moe_token_dropout``."""

    @functools.wraps(_original)
    def forward(self: Any, hidden_states: torch.Tensor, router_mask: torch.Tensor,
                router_probs: torch.Tensor) -> torch.Tensor:  # fmt: skip
        mask = torch.nn.functional.one_hot(router_mask, num_classes=self.num_experts).permute(2, 1, 0)
        dropout = self.moe_token_dropout if self.moe_token_dropout > 0 and not self.training else 0.0
        return _dense_sum(self, hidden_states, mask, router_probs, 1.0 - dropout)

    return forward


def dbrx_projections(experts: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A ``DbrxExperts`` module's gate, up and down parameters viewed ``[E, I, H]`` (each
    expert's rows input-major; module docstring)."""
    shape = (experts.num_experts, experts.ffn_hidden_size, experts.hidden_size)
    mlp = experts.mlp
    return mlp.w1.view(shape), mlp.v1.view(shape), mlp.w2.view(shape)


def dbrx_experts(_original: Callable[..., Any]) -> Callable[..., Any]:
    """``DbrxExperts.forward`` (module docstring): ``hidden_states`` (batch, sequence, hidden),
    ``top_k_index`` and ``top_k_weights`` (tokens, k)."""

    @functools.wraps(_original)
    def forward(self: Any, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                top_k_weights: torch.Tensor) -> torch.Tensor:  # fmt: skip
        # heavy optional dependency, already loaded with the patched class
        from transformers.integrations import moe as hf_moe

        gate, up, down = dbrx_projections(self)
        grouped = types.SimpleNamespace(
            num_experts=self.num_experts, has_gate=True, has_bias=False, is_transposed=True, has_post_expert_norm=False,
            _is_expert_parallel=False, act_fn=self.mlp.activation_fn, down_proj=down,
            gate_up_proj=torch.cat([gate.transpose(1, 2), up.transpose(1, 2)], dim=2),
        )  # fmt: skip
        grouped._apply_gate = functools.partial(hf_moe._default_apply_gate, grouped)
        rows = hidden_states.reshape(-1, self.hidden_size)
        out = hf_moe.grouped_mm_experts_forward(grouped, rows, top_k_index, top_k_weights)  # type: ignore[arg-type]  # duck-typed
        return out.view(hidden_states.shape[0], -1, self.hidden_size)

    return forward


def longcat_experts(_original: Callable[..., Any]) -> Callable[..., Any]:
    """``LongcatFlashExperts.forward``: the same loop over ``n_routed_experts`` SwiGLU experts
    (``gate_up_proj`` ``[E', 2I, H]`` gate rows first, ``down_proj`` ``[E, H, I]``) and
    ``zero_expert_num`` identity ("zero-computation") experts, indices ``E`` and up, whose output is
    the token itself. Captured as transformers' ``grouped_mm`` experts over the routed experts (a
    pair routed to an identity expert goes to expert 0 with weight 0) plus each token times the
    summed weights of its identity experts: the loop's sum in another order."""

    @functools.wraps(_original)
    def forward(self: Any, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                top_k_weights: torch.Tensor) -> torch.Tensor:  # fmt: skip
        # heavy optional dependency, already loaded with the patched class
        from transformers.integrations import moe as hf_moe

        routed = top_k_index < self.num_routed_experts
        identity = (top_k_weights * (~routed).to(top_k_weights.dtype)).sum(-1, keepdim=True)
        out = hidden_states * identity.to(hidden_states.dtype)
        if self.gate_up_proj is None:
            return out
        grouped = types.SimpleNamespace(
            num_experts=self.num_routed_experts, has_gate=True, has_bias=False, is_transposed=False,
            has_post_expert_norm=False, _is_expert_parallel=False, act_fn=self.act_fn, down_proj=self.down_proj,
            gate_up_proj=self.gate_up_proj[: self.num_routed_experts],
        )  # fmt: skip
        grouped._apply_gate = functools.partial(hf_moe._default_apply_gate, grouped)
        index = torch.where(routed, top_k_index, torch.zeros_like(top_k_index))
        weights = torch.where(routed, top_k_weights, torch.zeros_like(top_k_weights))
        experts = hf_moe.grouped_mm_experts_forward(grouped, hidden_states, index, weights)  # type: ignore[arg-type]  # duck-typed
        return out + experts.to(hidden_states.dtype)

    return forward


#: (module, class, method, replacement factory), as :data:`onnxport.capture.patches.METHOD_PATCHES`
#: (applied there during capture, and by :func:`onnxport.capture.patches.dense_experts` in probes).
EXPERT_LOOP_PATCHES: tuple[tuple[str, str, str, Callable[[Any], Callable[..., Any]]], ...] = (
    ("transformers.models.switch_transformers.modeling_switch_transformers", "SwitchTransformersExperts", "forward",
     switch_experts),
    ("transformers.models.nllb_moe.modeling_nllb_moe", "NllbMoeExperts", "forward", nllb_moe_experts),
    ("transformers.models.dbrx.modeling_dbrx", "DbrxExperts", "forward", dbrx_experts),
    ("transformers.models.longcat_flash.modeling_longcat_flash", "LongcatFlashExperts", "forward", longcat_experts),
)  # fmt: skip

