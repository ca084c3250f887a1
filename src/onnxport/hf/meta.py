"""A transformers model without its weights: parameters on the meta device, names, and binding.

- :func:`build` makes the model of a ``config.json`` with every parameter on the ``meta`` device
  (no weight memory) and every buffer real, so buffers the model computes at construction and
  never stores (rotary ``inv_freq``, non-persistent) keep their values. This is accelerate's
  ``init_empty_weights(include_buffers=False)`` idea (huggingface/accelerate
  ``big_modeling.py``): each parameter is moved to ``meta`` as it is registered.
- :func:`own_names` maps the export wrapper's parameter names (``model.model.layers.0...``) to the
  model's own state_dict keys (``model.layers.0...``), by tensor identity, so initializer names
  are the keys of the checkpoint; tied parameters (``lm_head.weight`` = ``embed_tokens.weight``)
  share one initializer and every alias is kept.
- :func:`materialize` loads the checkpoint's tensors into a meta model as memory-mapped tensors
  (``load_state_dict(assign=True)``), for the eager reference of the validation.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import onnx_ir as ir
import torch

from onnxport.errors import HFError
from onnxport.hf.checkpoint import Checkpoint, model_keys


@contextlib.contextmanager
def parameters_on_meta() -> Iterator[None]:
    """Inside, every ``nn.Module`` parameter is moved to the ``meta`` device when registered.

    Buffers stay on the CPU with the values the module computes. ``torch.empty`` allocations made
    by ``__init__`` before registration are never touched, so they cost no resident memory.
    """
    register = torch.nn.Module.register_parameter

    def register_on_meta(module: torch.nn.Module, name: str, param: Any) -> None:
        register(module, name, param)
        if param is not None and param.device.type != "meta":
            kind = type(param)
            module._parameters[name] = kind(param.to("meta"), requires_grad=param.requires_grad)

    torch.nn.Module.register_parameter = register_on_meta  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register  # type: ignore[method-assign]


def build(config: Any, auto_class: str, dtype: torch.dtype | None) -> torch.nn.Module:
    """The model of ``config`` for ``auto_class`` with parameters on ``meta``, in eval mode.

    Args:
        config: A ``transformers.PretrainedConfig``.
        auto_class: ``AutoModelForCausalLM``, ``AutoModel``, ...
        dtype: Parameter dtype (the checkpoint's floating dtype); ``None`` keeps the config's.

    Raises:
        HFError: transformers cannot build the model for this config and auto class.
    """
    import transformers

    auto = getattr(transformers, auto_class)
    kwargs = {"dtype": dtype} if dtype is not None else {}
    try:
        with parameters_on_meta():
            model = auto.from_config(config, **kwargs)
    except ValueError as e:
        if "Unrecognized configuration class" in str(e):
            raise HFError(
                f"{type(config).__name__} ({config.model_type}) has no {auto_class} model."
            ) from e
        raise HFError(f"transformers could not build {auto_class}: {type(e).__name__}: {e}") from e
    except Exception as e:
        raise HFError(f"transformers could not build {auto_class}: {type(e).__name__}: {e}") from e
    return model.eval()


def _tensors(module: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    yield from module.named_parameters(remove_duplicate=False)
    yield from module.named_buffers(remove_duplicate=False)


def aliases(model: torch.nn.Module) -> dict[int, list[str]]:
    """``id(tensor)`` → every name of a parameter or buffer (non-persistent ones included) of
    the model holding it (tied weights: several)."""
    out: dict[int, list[str]] = {}
    for name, tensor in _tensors(model):
        out.setdefault(id(tensor), []).append(name)
    return out


def own_names(wrapper: torch.nn.Module, model: torch.nn.Module) -> dict[str, list[str]]:
    """Wrapper parameter/buffer name → the model's own names for the same tensor (first =
    canonical)."""
    by_id = aliases(model)
    out = {}
    for name, tensor in _tensors(wrapper):
        if id(tensor) in by_id:
            out.setdefault(name, by_id[id(tensor)])
    return out


def rename_initializers(graph: ir.Graph, names: dict[str, list[str]]) -> None:
    """Rename initializers named after wrapper keys (or derived from them: ``<key>.T``) to the
    model's own keys."""
    for value in list(graph.initializers.values()):
        old = value.name or ""
        for prefix, own in names.items():
            if old == prefix or old.startswith(prefix + "."):
                value.name = own[0] + old[len(prefix) :]
                break


@dataclasses.dataclass
class Binding:
    """Initializer name → checkpoint tensor name, for the initializers the checkpoint provides.

    Attributes:
        sources: Initializer name → checkpoint name.
        computed: Initializers with data the model computed itself (non-persistent buffers).
        unused: Checkpoint tensors no initializer reads (e.g. a tied copy, layers cut by a slice).
    """

    sources: dict[str, str]
    computed: list[str]
    unused: list[str]


def bind(
    graph: ir.Graph, model: torch.nn.Module, checkpoint: Checkpoint, names: dict[str, list[str]]
) -> Binding:
    """Match every initializer of ``graph`` with its checkpoint tensor, checking shape and dtype.

    An initializer wrapping a ``meta`` tensor needs a checkpoint tensor; one with data (a buffer
    the model computed) uses the checkpoint's when present.

    Raises:
        HFError: Listing every initializer the checkpoint lacks and every shape/dtype mismatch.
    """
    keys = model_keys(model, checkpoint)
    own = {alias for group in names.values() for alias in group}
    sources, computed, missing, mismatched = {}, [], [], []
    groups = {g[0]: g for g in names.values()}
    for name, value in graph.initializers.items():
        data = value.const_value
        on_meta = isinstance(data, ir.tensor_adapters.TorchTensor) and data.raw.device.type == "meta"
        if on_meta and data.raw.numel() == 0:  # an empty constant (an empty cache): no data needed
            value.const_value = ir.tensor_adapters.TorchTensor(
                torch.empty(data.raw.shape, dtype=data.raw.dtype), name=name
            )
            continue
        if name not in own:
            if on_meta:
                missing.append(f"{name} (a constant the model computes on the meta device)")
            continue  # an initializer the export made (a constant), not a model tensor
        group = groups[name]
        found = next((keys[a] for a in group if a in keys), None)
        if found is None:
            if on_meta:
                missing.append(name)
            else:
                computed.append(name)
            continue
        entry = checkpoint.entries[found]
        want_dtype = ir.tensor_adapters.from_torch_dtype(entry.dtype)
        if tuple(entry.shape) != tuple(value.shape or ()) or value.dtype != want_dtype:
            mismatched.append(
                f"{name}: model {value.dtype} {list(value.shape or ())}, checkpoint {found} "
                f"{entry.dtype} {list(entry.shape)}"
            )
            continue
        sources[name] = found
    if missing or mismatched:
        lines = [f"  missing: {n}" for n in missing] + [f"  mismatched: {m}" for m in mismatched]
        raise HFError(
            f"The checkpoint in {checkpoint.folder} does not fit the model of its config.json "
            f"({len(missing)} missing, {len(mismatched)} mismatched):\n" + "\n".join(lines)
        )
    used = set(sources.values())
    return Binding(sources, computed, [n for n in checkpoint.entries if n not in used])


def attach(
    graph: ir.Graph,
    binding: Binding,
    checkpoint: Checkpoint,
    on_read: Callable[[str, int], None] | None = None,
) -> None:
    """Make each bound initializer read its checkpoint tensor lazily (``onnx_ir.LazyTensor``):
    one tensor is memory-mapped when it is serialized, then released. ``on_read(name, nbytes)``
    is called after each read (progress)."""
    for name, source in binding.sources.items():
        value = graph.initializers[name]

        def read(name: str = name, source: str = source) -> ir.TensorProtocol:
            tensor = checkpoint.tensor(source)
            if on_read is not None:
                on_read(name, checkpoint.entries[source].nbytes)
            return ir.tensor_adapters.TorchTensor(tensor, name=name)

        value.const_value = ir.LazyTensor(
            read, dtype=value.dtype or ir.DataType.UNDEFINED, shape=ir.Shape(value.shape or []), name=name
        )


def materialize(model: torch.nn.Module, checkpoint: Checkpoint) -> torch.nn.Module:
    """Give a meta model the checkpoint's tensors, memory-mapped (file pages, no copy), in place.

    Raises:
        HFError: A parameter has no tensor in the checkpoint.
    """
    keys = model_keys(model, checkpoint)
    state = {}
    missing = []
    for group in aliases(model).values():
        found = next((keys[a] for a in group if a in keys), None)
        tensor = model.get_parameter(group[0]) if _is_param(model, group[0]) else None
        if found is None:
            if tensor is not None and tensor.device.type == "meta":
                missing.append(group[0])
            continue
        loaded = checkpoint.tensor(found)
        for alias in group:
            state[alias] = loaded
    if missing:
        raise HFError(
            f"The checkpoint in {checkpoint.folder} has no tensor for {len(missing)} parameters "
            f"(first: {missing[:3]})."
        )
    model.load_state_dict(state, strict=False, assign=True)
    return model


def _is_param(model: torch.nn.Module, name: str) -> bool:
    try:
        model.get_parameter(name)
    except AttributeError:
        return False
    return True
