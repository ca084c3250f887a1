"""Dynamic NTK rotary embeddings (``rope_type: "dynamic"``) as a function of the step's positions.

transformers recomputes a dynamic rotary embedding's ``inv_freq`` in Python when the sequence
grows past the cached length (``dynamic_rope_update`` / ``dynamic_frequency_update``,
``modeling_rope_utils.py``): ``if seq_len > max_seq_len_cached`` on ``seq_len =
max(position_ids) + 1``, a branch on data that torch.export cannot capture (the export failed
with ``GuardOnDataDependentSymNode`` at that line). The frequencies themselves are
``_compute_dynamic_ntk_parameters(config, seq_len=...)``, which takes a tensor ``seq_len`` and
clamps it to ``max_position_embeddings`` without branching; at or below that length they are
the original ones. So within :func:`positions_driven_dynamic_rope` every dynamic rotary module
computes them from the step's ``position_ids`` in the graph.

transformers keeps the largest frequencies seen until a sequence shorter than
``max_position_embeddings`` resets them; in a generation the positions only grow, so the graph's
step equals transformers' step (prompt, then each new token).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

import torch


def _dynamic(module: torch.nn.Module) -> bool:
    rope_type = getattr(module, "rope_type", None)
    forward = getattr(type(module), "forward", None)
    buffer = getattr(module, "inv_freq", None)
    return (isinstance(rope_type, str) and "dynamic" in rope_type and hasattr(module, "config")
            and hasattr(forward, "__wrapped__") and isinstance(buffer, torch.Tensor))  # fmt: skip


@contextlib.contextmanager
def positions_driven_dynamic_rope(model: torch.nn.Module) -> Iterator[None]:
    """Within the block, each dynamic-NTK rotary embedding module of ``model`` (``rope_type``
    holding ``"dynamic"``, its forward wrapped by transformers' ``dynamic_rope_update``) runs its
    undecorated forward (``inspect.unwrap``) with ``inv_freq`` computed from ``max(position_ids) +
    1`` by transformers' own ``ROPE_INIT_FUNCTIONS[rope_type]``; its buffer is left as it was.
    Other models: nothing changes."""
    modules = [m for m in model.modules() if _dynamic(m)]
    if not modules:
        yield
        return
    # optional heavy dependency, imported here: only the hf exports come to this function
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    def stateless(module: torch.nn.Module) -> Any:
        # the function under transformers' decorators (torch.no_grad, dynamic_rope_update: functools.wraps)
        undecorated = inspect.unwrap(type(module).forward)
        init = ROPE_INIT_FUNCTIONS[str(module.rope_type)]

        def forward(x: torch.Tensor, position_ids: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            inv_freq, _ = init(module.config, x.device, seq_len=position_ids.max() + 1)
            kept = module.inv_freq
            module.inv_freq = inv_freq
            try:
                return undecorated(module, x, position_ids, *args, **kwargs)
            finally:
                module.inv_freq = kept

        return forward

    for module in modules:
        module.forward = stateless(module)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for module in modules:
            del module.forward

