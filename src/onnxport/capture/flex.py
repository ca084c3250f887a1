"""FlexAttention at capture time: a block mask of one block, and no training-only device check.

``torch.nn.attention.flex_attention`` computes attention with a user ``score_mod`` and a
``mask_mod`` (PyTorch docs, "torch.nn.attention.flex_attention"); onnxport translates the
``flex_attention`` higher-order op it records as dense attention
(:mod:`onnxport.ops.nn.flex_attention`), the same computation as torch's CPU implementation
(``math_attention`` in ``torch/_higher_order_ops/flex_attention.py``), which applies ``mask_mod``
at every position and never reads the block-sparsity tensors of the ``BlockMask``. Two things stop
the capture before that, and both are replaced while it runs, in the modules already imported:

- ``create_block_mask`` evaluates ``mask_mod`` over the whole (query, key) grid to find the blocks
  of 128 positions that are empty, full or partial. With a dynamic sequence length that count is
  a guard on the length (``s <= 128`` for a short example: the graph held one block), and
  transformers' masks fail inside it. During capture it returns the mask torch itself builds when
  none is given (``_create_empty_block_mask``: one block of ``_LARGE_SPARSE_BLOCK_SIZE`` positions,
  for which ``flex_attention`` skips its length checks), carrying the same ``mask_mod`` — the
  same values, since the dense computation applies ``mask_mod`` everywhere anyway.
- ``flex_attention`` refuses inputs that require grad on CPU ("FlexAttention does not support
  backward on CPU"), and a module's parameters do while torch.export traces it. An export never
  runs backward; the replacement keeps the function's device check only.

A transformers model loaded with ``attn_implementation="flex_attention"`` is captured with
``"sdpa"`` instead (``"eager"`` where the model has no SDPA path), then set back
(:func:`sdpa_instead_of_flex`): its FlexAttention mask builder branches on the attention mask's
values (``masking_utils.flex_attention_mask``: ``if not fast_all(attention_mask)``), which
torch.export cannot capture, while both implementations compute the same attention (transformers'
``flex_attention_forward`` and ``sdpa_attention_forward``) and the SDPA one becomes ONNX
``Attention``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch

_MODULE = "torch.nn.attention.flex_attention"


def _one_block_mask(flex: Any) -> Callable[..., Any]:
    def create_block_mask(mask_mod: Callable[..., Any], B: Any = None, H: Any = None, Q_LEN: Any = None,
                          KV_LEN: Any = None, device: Any = "cpu", *args: Any, **kwargs: Any) -> Any:
        """``create_block_mask`` as one partial block covering every position (module docstring),
        per batch entry when ``B`` is given (flex_attention checks it against the query's batch
        when key and value have another)."""
        batch = 1 if B is None else B
        blocks = torch.ones([batch, 1, 1], dtype=torch.int32, device=device)
        indices = torch.zeros([batch, 1, 1, 1], dtype=torch.int32, device=device)
        # One block is its own transpose: q_num_blocks/q_indices (read by the op's autograd rule)
        # given as they are, not computed by from_kv_blocks' vmap (ops run_decompositions re-traces).
        return flex.BlockMask(
            (1, 1), blocks, indices, None, None, blocks, indices, None, None,
            BLOCK_SIZE=(flex._LARGE_SPARSE_BLOCK_SIZE, flex._LARGE_SPARSE_BLOCK_SIZE), mask_mod=mask_mod,
        )

    return create_block_mask


def _devices_only(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> None:
    """flex_attention's input check without the requires-grad one (module docstring)."""
    if query.device != key.device or query.device != value.device:
        raise ValueError(
            f"Expected query, key, and value to have the same device type, but got query.device: "
            f"{query.device}, key.device: {key.device}, and value.device: {value.device} instead."
        )


def flex_attention_patches() -> list[tuple[Any, str, Callable[..., Any]]]:
    """``(module, attribute, replacement)`` for ``create_block_mask`` wherever it was imported
    and for flex_attention's device check, if ``torch.nn.attention.flex_attention`` is imported."""
    flex = sys.modules.get(_MODULE)
    if flex is None:
        return []
    original = getattr(flex, "create_block_mask", None)
    replacement = _one_block_mask(flex)
    owners = [m for m in list(sys.modules.values()) if m is not None and vars(m).get("create_block_mask") is original]
    return [(flex, "_validate_device", _devices_only), *((m, "create_block_mask", replacement) for m in owners)]


@contextlib.contextmanager
def sdpa_instead_of_flex(model: torch.nn.Module) -> Iterator[None]:
    """Within the block, the configs of ``model``'s modules that select transformers'
    ``"flex_attention"`` select ``"sdpa"`` (``"eager"`` if a module using that config says
    ``_supports_sdpa = False``); restored on exit (module docstring)."""
    configs: dict[int, tuple[Any, bool]] = {}
    for module in model.modules():
        config = getattr(module, "config", None)
        if getattr(config, "_attn_implementation", None) != "flex_attention":
            continue
        sdpa = configs.get(id(config), (config, True))[1] and getattr(module, "_supports_sdpa", True) is not False
        configs[id(config)] = (config, sdpa)
    try:
        for config, sdpa in configs.values():
            config._attn_implementation = "sdpa" if sdpa else "eager"
        yield
    finally:
        for config, _ in configs.values():
            config._attn_implementation = "flex_attention"
