"""A transformers model without its weights: parameters on the meta device, names, and binding.

- :func:`build` makes the model of a ``config.json`` with every parameter on the ``meta`` device
  (no weight memory) and every buffer real, so buffers the model computes at construction and
  never stores (rotary ``inv_freq``, non-persistent) keep their values. This is accelerate's
  ``init_empty_weights(include_buffers=False)`` idea (huggingface/accelerate
  ``big_modeling.py``): each parameter is moved to ``meta`` as it is registered.
- :func:`own_names` / :func:`rename_weights` map the export wrapper's parameter names
  (``model.model.layers.0...``) to the model's own state_dict keys (``model.layers.0...``), by
  tensor identity, so initializer names are the keys of the checkpoint; tied parameters
  (``lm_head.weight`` = ``embed_tokens.weight``) share one initializer and every alias is kept.
- :func:`checkpoint_weights` gives ``ONNXProgram.apply_weights`` the checkpoint's tensors under
  those names, after the renames transformers applies on load (cast lazily, tensor by tensor,
  when the model was built in another floating dtype than the checkpoint's: ``dtype=``).
- :func:`materialize` loads the checkpoint's tensors into a meta model as memory-mapped tensors
  (``load_state_dict(assign=True)``), for the eager reference of the validation.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from onnxport.errors import HFError
from onnxport.hf.checkpoint import (
    Checkpoint,
    CheckpointSource,
    MergedSource,
    merged_keys,
    model_keys,
)
from onnxport.hf.tasks import model_class
from onnxport.weights.sources import CastSource, Source


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

    torch.nn.Module.register_parameter = register_on_meta  # type: ignore[method-assign,assignment]
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
    import transformers  # optional heavy dependency (the hf extra)

    auto = model_class(transformers, auto_class, config)
    kwargs = {"dtype": dtype} if dtype is not None else {}
    try:
        with parameters_on_meta():
            # an auto class's from_config, else a model class's own (_from_config: PatchTSTForPrediction)
            from_config = getattr(auto, "from_config", None) or auto._from_config
            model = from_config(config, **kwargs)
    except ValueError as e:
        if "Unrecognized configuration class" in str(e):
            raise HFError(
                f"{type(config).__name__} ({config.model_type}) has no {auto_class} model."
            ) from e
        raise HFError(f"transformers could not build {auto_class}: {type(e).__name__}: {e}") from e
    except Exception as e:
        raise HFError(f"transformers could not build {auto_class}: {type(e).__name__}: {e}") from e
    _initialize_unsaved(model)
    return model.eval()


def _initialize_unsaved(model: torch.nn.Module) -> None:
    """Give the parameters a checkpoint never holds (the class's ``_keys_to_ignore_on_save``:
    Marian's sinusoidal position tables, which ``save_pretrained`` leaves out and loading
    recomputes) their values in memory, from the model's own ``_init_weights`` of their module,
    as transformers' loading does."""
    patterns = getattr(model, "_keys_to_ignore_on_save", None) or []
    for name, param in list(model.named_parameters()):
        if param.device.type != "meta" or not any(re.fullmatch(p, name) or p == name for p in patterns):
            continue
        owner, _, attr = name.rpartition(".")
        module = model.get_submodule(owner)
        module._parameters[attr] = torch.nn.Parameter(torch.empty(param.shape, dtype=param.dtype), requires_grad=False)
        with torch.no_grad():
            model._init_weights(module)  # type: ignore[operator]


@contextlib.contextmanager
def all_on_meta(model: torch.nn.Module) -> Iterator[None]:
    """Inside, every parameter and buffer of ``model`` is on ``meta``; the in-memory ones (buffers,
    :func:`_initialize_unsaved`'s parameters) come back when it ends.

    A meta model keeps its buffers in memory (sinusoidal position tables, batch-norm statistics,
    ``final_logits_bias``); where the model combines one with an activation on ``meta``, torch
    refuses the mix of devices. Captured all on ``meta``, their values reach the graph from the
    checkpoint or from memory (:func:`checkpoint_weights`). Tensors the forward makes from Python
    data on ``meta`` keep their values too (:class:`_ConstantsInMemory`).
    """
    moved: list[tuple[dict[str, Any], str, torch.Tensor]] = []
    for module in model.modules():
        stores: tuple[dict[str, Any], ...] = (module._parameters, module._buffers)
        for store in stores:
            for name, tensor in store.items():
                if tensor is not None and tensor.device.type != "meta":
                    moved.append((store, name, tensor))
                    on_meta = tensor.to("meta")
                    parameter = isinstance(tensor, torch.nn.Parameter)
                    store[name] = torch.nn.Parameter(on_meta, requires_grad=False) if parameter else on_meta
    try:
        with _ConstantsInMemory():
            yield
    finally:
        for store, name, tensor in moved:
            store[name] = tensor


class _ConstantsInMemory(TorchFunctionMode):
    """``torch.tensor`` / ``as_tensor`` / ``asarray`` / ``Tensor.new_tensor`` of Python data on
    ``meta`` made in memory and then moved to ``meta``; so are the lists of ints a ``meta`` tensor
    is indexed with (:func:`_list_index_to_meta`: Falcon's ``fused_qkv[..., [-2], :]``); 0-dim
    tensors in memory given to an op with ``meta`` operands moved there too (:func:`_scalar_to_meta`).

    A meta tensor has no values, so a constant the forward builds on its activations' device
    (GPT-Neo's ``torch.tensor(mask_value, device=attn_weights.device)``) would reach the graph as
    a lifted constant with no data, which no checkpoint holds. Made in memory, torch.export lifts
    its value and records the move to ``meta`` as a ``_to_copy`` (a no-op in ONNX).
    """

    _FROM_DATA = (torch.tensor, torch.as_tensor, torch.asarray, torch.Tensor.new_tensor)
    _INDEXING = (torch.Tensor.__getitem__, torch.Tensor.__setitem__)

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if func in self._FROM_DATA:
            owner = args[0] if func is torch.Tensor.new_tensor else None
            device = kwargs.get("device", owner.device if isinstance(owner, torch.Tensor) else None)
            if device is not None and torch.device(device).type == "meta":
                data = args[1] if owner is not None else args[0]
                if not isinstance(data, torch.Tensor):
                    kwargs["device"] = "cpu"
                    if owner is not None:
                        kwargs.setdefault("dtype", owner.dtype)
                        return torch.tensor(data, **kwargs).to("meta")
                    return func(*args, **kwargs).to("meta")
        if func in self._INDEXING and isinstance(args[0], torch.Tensor) and args[0].device.type == "meta":
            args = (args[0], _list_index_to_meta(args[1]), *args[2:])
        if _on_meta(args, kwargs):
            args = tuple(_scalar_to_meta(a) for a in args)
            kwargs = {k: _scalar_to_meta(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)


def _list_index_to_meta(index: Any) -> Any:
    """An index with each list of ints (or bools) made a tensor in memory and moved to ``meta``:
    the same advanced indexing, but the index tensor torch would build from the list on the indexed
    tensor's device (``meta``, so without values) becomes a lifted constant with its values."""
    def convert(item: Any) -> Any:
        if isinstance(item, list) and _plain(item):
            return torch.tensor(item).to("meta")
        return item

    return tuple(convert(i) for i in index) if isinstance(index, tuple) else convert(index)


def _plain(items: list[Any]) -> bool:
    """Whether a (nested) list holds only Python ints (bools included)."""
    return bool(items) and all(_plain(i) if isinstance(i, list) else isinstance(i, int) for i in items)


def _on_meta(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return any(isinstance(a, torch.Tensor) and a.device.type == "meta" for a in (*args, *kwargs.values()))


def _scalar_to_meta(value: Any) -> Any:
    """A 0-dim tensor in memory, given to an op with ``meta`` operands, moved to ``meta``: eager
    PyTorch takes a 0-dim CPU tensor beside CUDA ones as a scalar, but not beside ``meta`` ones
    (SEW-D's ``masked_fill(mask, torch.tensor(finfo.min))``: "Expected `value` to be on same
    device")."""
    if isinstance(value, torch.Tensor) and value.dim() == 0 and value.device.type != "meta":
        return value.to("meta")
    return value


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
    out: dict[str, list[str]] = {}
    for name, tensor in _tensors(wrapper):
        if id(tensor) in by_id:
            out.setdefault(name, by_id[id(tensor)])
    return out


def rename_weights(program: Any, names: dict[str, list[str]]) -> None:
    """Rename the program's weights from the wrapper's names (``model.model.layers.0...``) to the
    model's own state_dict keys: initializers (and those derived from them, ``<key>.T``), the
    weight slots ``apply_weights`` matches by name, and the tied-weight aliases."""
    def own(name: str) -> str:
        if name in names:
            return names[name][0]
        head, _, tail = name.rpartition(".")
        while head:
            if head in names:
                return names[head][0] + name[len(head) :]
            head, _, _ = head.rpartition(".")
        return name

    for graph in program.model.graphs():
        for value in list(graph.initializers.values()):
            if value.name:
                value.name = own(value.name)
    table = program.weights
    slots = {}
    for name, slot in table.slots.items():
        slot.name = own(name)
        slots[slot.name] = slot
    table.slots = slots
    aliases = {own(a): own(c) for a, c in table.aliases.items()}
    for group in names.values():  # every other own name of a tied tensor
        aliases.update({alias: group[0] for alias in group[1:] if group[0] in slots})
    table.aliases = {a: c for a, c in aliases.items() if a != c}


def check(model: torch.nn.Module, checkpoint: Checkpoint, *, cast: bool = False) -> None:
    """Before exporting: every parameter has a checkpoint tensor of its shape and dtype.

    Args:
        model: The meta model.
        checkpoint: Its checkpoint.
        cast: The weights are cast as they stream (``dtype=``): a floating tensor may have another
            floating dtype than the parameter.

    Raises:
        HFError: Listing every parameter the checkpoint lacks and every shape/dtype mismatch.
    """
    keys = model_keys(model, checkpoint)
    merges = merged_keys(model, checkpoint)
    params = {id(p) for p in model.parameters()}
    missing, mismatched = [], []
    tensors = dict(_tensors(model))
    for group in aliases(model).values():
        tensor = tensors[group[0]]
        found = next((keys[a] for a in group if a in keys), None)
        merge = next((merges[a] for a in group if a in merges), None)
        if found is None and merge is None:
            if id(tensor) in params and tensor.device.type == "meta":
                missing.append(group[0])
            continue
        if found is not None:
            entry = checkpoint.entries[found]
            dtype, shape = entry.dtype, tuple(entry.shape)
        else:
            assert merge is not None
            source = MergedSource(checkpoint, merge)
            dtype, shape, found = checkpoint.entries[merge.names[0]].dtype, source.shape, f"{merge.names[0]} (merged)"
        castable = cast and dtype.is_floating_point and tensor.dtype.is_floating_point
        if shape != tuple(tensor.shape) or (dtype != tensor.dtype and not castable):
            mismatched.append(
                f"{group[0]}: model {tensor.dtype} {list(tensor.shape)}, checkpoint {found} "
                f"{dtype} {list(shape)}"
            )
    _raise_unfit(checkpoint, missing, mismatched)


def _raise_unfit(checkpoint: Checkpoint, missing: list[str], mismatched: list[str]) -> None:
    if missing or mismatched:
        lines = [f"  missing: {n}" for n in missing] + [f"  mismatched: {m}" for m in mismatched]
        raise HFError(
            f"The checkpoint in {checkpoint.folder} does not fit the model of its config.json "
            f"({len(missing)} missing, {len(mismatched)} mismatched):\n" + "\n".join(lines)
            + "\nCheck that config.json belongs to these weights; a checkpoint mixing float "
            "dtypes must be re-saved in one dtype."
        )


def checkpoint_weights(
    program: Any, model: torch.nn.Module, checkpoint: Checkpoint
) -> dict[str, torch.Tensor | Source]:
    """The checkpoint's tensors for the program's weights, by the model's own names, for
    ``ONNXProgram.apply_weights``: memory-mapped, nothing read yet; a tensor the checkpoint lacks
    (a non-persistent buffer) from the model's memory. Checkpoint tensors the program
    does not use (a slice's cut layers, a tied copy) are left out. A floating tensor whose dtype
    differs from its weight's in the graph (the model built with ``dtype=``) becomes a
    :class:`onnxport.weights.sources.CastSource`, converted when it is written."""
    keys = model_keys(model, checkpoint)
    merges = merged_keys(model, checkpoint)
    memory = {name: t for name, t in _tensors(model) if t.device.type != "meta"}
    table = program.weights
    out: dict[str, torch.Tensor | Source] = {}
    for name in set(table.slots) | set(table.aliases):
        slot = table.slots[table.aliases.get(name, name)]
        if name in merges:  # built from several checkpoint tensors when written
            merged = MergedSource(checkpoint, merges[name])
            out[name] = CastSource(merged, slot.dtype) if merged.dtype != slot.dtype else merged
            continue
        if name not in keys:
            if name in memory:  # a buffer or parameter the checkpoint does not hold (all_on_meta)
                out[name] = memory[name]
            continue
        source = CheckpointSource(checkpoint, keys[name])  # mapped only while it is written
        if source.dtype != slot.dtype and source.dtype.is_floating_point() and slot.dtype.is_floating_point():
            out[name] = CastSource(source, slot.dtype)
        else:
            out[name] = source
    return out


def materialize(model: torch.nn.Module, checkpoint: Checkpoint) -> torch.nn.Module:
    """Give a meta model the checkpoint's tensors, memory-mapped (file pages, no copy), in place.

    Raises:
        HFError: A parameter has no tensor in the checkpoint.
    """
    keys = model_keys(model, checkpoint)
    merges = merged_keys(model, checkpoint)
    state = {}
    missing = []
    for group in aliases(model).values():
        found = next((keys[a] for a in group if a in keys), None)
        merge = next((merges[a] for a in group if a in merges), None)
        tensor = model.get_parameter(group[0]) if _is_param(model, group[0]) else None
        if found is None and merge is None:
            if tensor is not None and tensor.device.type == "meta":
                missing.append(group[0])
            continue
        # a merged tensor (fused MoE experts) is built in memory: the reference model needs it whole
        loaded = checkpoint.tensor(found) if found is not None else merge.build(checkpoint.tensor)  # type: ignore[union-attr]
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
