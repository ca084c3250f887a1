"""A safetensors checkpoint folder read lazily: which tensor lives in which shard, its dtype and shape.

Nothing here reads weight bytes: headers only (``safetensors.safe_open``). A tensor is read with
:meth:`Checkpoint.tensor`, which returns a torch tensor backed by the file's memory map (file pages,
not anonymous memory), so a model bigger than RAM can be streamed one tensor at a time.

Layouts accepted (as ``transformers.PreTrainedModel.from_pretrained`` reads them): a sharded
checkpoint with ``model.safetensors.index.json`` (``weight_map``: tensor name → shard file), a single
``model.safetensors``, or any ``*.safetensors`` files beside ``config.json``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import onnx_ir as ir
import torch
from safetensors import safe_open

from onnxport.errors import HFError
from onnxport.weights.sources import Source

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"

# safetensors header dtype → torch dtype (the safetensors format's names).
DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


@dataclasses.dataclass(frozen=True)
class Entry:
    """One checkpoint tensor: shard file, dtype, shape (no data)."""

    file: Path
    dtype: torch.dtype
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        count = 1
        for d in self.shape:
            count *= d
        return count * self.dtype.itemsize


@dataclasses.dataclass
class Checkpoint:
    """The tensors of a safetensors checkpoint folder, by their checkpoint names.

    Attributes:
        folder: The model folder.
        entries: Checkpoint tensor name → :class:`Entry`.
    """

    folder: Path
    entries: dict[str, Entry]

    @property
    def nbytes(self) -> int:
        """Total tensor bytes (the sum of every tensor's size; headers excluded)."""
        return sum(e.nbytes for e in self.entries.values())

    @property
    def largest(self) -> int:
        """The largest tensor's size in bytes."""
        return max((e.nbytes for e in self.entries.values()), default=0)

    def float_dtype(self) -> torch.dtype | None:
        """The floating dtype most bytes are stored in (``None`` without float tensors)."""
        sizes: Counter[torch.dtype] = Counter()
        for e in self.entries.values():
            if e.dtype.is_floating_point:
                sizes[e.dtype] += e.nbytes
        return sizes.most_common(1)[0][0] if sizes else None

    def tensor(self, name: str) -> torch.Tensor:
        """The tensor ``name``, memory-mapped from its shard (no copy; read-only file pages).

        Raises:
            HFError: The shard cannot be opened or does not hold ``name``.
        """

        entry = self.entries[name]
        try:
            with safe_open(entry.file, framework="pt") as f:
                return f.get_tensor(name)
        except Exception as e:  # safetensors raises its own SafetensorError, OSError
            raise HFError(
                f"Cannot read tensor {name!r} from {entry.file}: {type(e).__name__}: {e}"
            ) from e


@dataclasses.dataclass
class SlicedCheckpoint(Checkpoint):
    """A checkpoint as the meta model of a slice of its config sees it (:func:`sliced`): the
    tensors of ``cuts`` (name → (dim, length)) are their first ``length`` entries along ``dim``
    (a view of the memory map, nothing read)."""

    cuts: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)

    def tensor(self, name: str) -> torch.Tensor:
        tensor = super().tensor(name)
        if name in self.cuts:
            dim, length = self.cuts[name]
            tensor = tensor.narrow(dim, 0, length)
        return tensor


def sliced(checkpoint: Checkpoint, model: Any, ratios: list[tuple[int, int]]) -> Checkpoint:
    """``checkpoint`` for ``model``, built from a config whose stacks were cut from ``count`` to
    ``layers`` hidden layers (``ratios``: (layers, count) pairs). A checkpoint tensor with one dim
    larger than its model tensor's by exactly such a ratio holds every layer's rows or columns side
    by side, layer by layer, and is cut to the slice's first layers: Gemma 4's (and Gemma 3n's)
    per-layer embedding table ``embed_tokens_per_layer`` ``[vocab, layers * d]`` and projection
    ``per_layer_model_projection`` ``[layers * d, hidden]``, reshaped to ``[..., layers, d]`` by
    the model (``transformers/models/gemma4/modeling_gemma4.py``, ``get_per_layer_inputs``).
    Other tensors are left as they are (a shape that still differs fails when bound)."""
    shapes = {name: tuple(t.shape) for name, t in model.state_dict(keep_vars=True).items()}
    cuts = {}
    for key, name in model_keys(model, checkpoint).items():
        want, have = shapes.get(key), checkpoint.entries[name].shape
        if want is None or len(want) != len(have):
            continue
        differ = [d for d, (w, h) in enumerate(zip(want, have, strict=True)) if w != h]
        if len(differ) == 1 and any(want[differ[0]] * count == have[differ[0]] * layers for layers, count in ratios):
            cuts[name] = (differ[0], want[differ[0]])
    if not cuts:
        return checkpoint
    entries = {n: dataclasses.replace(e, shape=_cut(e.shape, *cuts[n])) if n in cuts else e for n, e in checkpoint.entries.items()}
    return SlicedCheckpoint(checkpoint.folder, entries, cuts)


def _cut(shape: tuple[int, ...], dim: int, length: int) -> tuple[int, ...]:
    return shape[:dim] + (length,) + shape[dim + 1:]


def _header(path: Path) -> dict[str, Entry]:

    if not path.is_file():
        raise HFError(f"Checkpoint shard {path} is missing; copy the complete checkpoint folder.")
    try:
        with safe_open(path, framework="pt") as f:
            entries = {}
            for name in f.keys():
                part = f.get_slice(name)
                code = part.get_dtype()
                if code not in DTYPES:
                    raise HFError(
                        f"{path}: tensor {name!r} has dtype {code}, which onnxport cannot export."
                    )
                entries[name] = Entry(path, DTYPES[code], tuple(part.get_shape()))
            return entries
    except HFError:
        raise
    except Exception as e:  # SafetensorError for a truncated or corrupt header
        raise HFError(
            f"{path} is not a readable safetensors file ({type(e).__name__}: {e}); "
            "re-download or re-save the checkpoint."
        ) from e


def read_checkpoint(folder: Path) -> Checkpoint:
    """Index the safetensors checkpoint of ``folder`` (headers only).

    Raises:
        HFError: No safetensors weights; the index is not JSON or has no ``weight_map``; a shard it
            names is missing or unreadable; the index names a tensor its shard does not hold; or two
            shards hold the same tensor.
    """
    index_path = folder / INDEX
    if index_path.is_file():
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise HFError(f"{index_path} is not valid JSON ({e}); re-save the checkpoint.") from e
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict) or not weight_map:
            raise HFError(f'{index_path} has no "weight_map" (tensor name → shard file).')
        shards = sorted({str(v) for v in weight_map.values()})
        headers = {shard: _header(folder / shard) for shard in shards}
        entries: dict[str, Entry] = {}
        absent = [n for n, shard in weight_map.items() if n not in headers[str(shard)]]
        if absent:
            raise HFError(
                f"{index_path} maps {len(absent)} tensors to shards that do not hold them "
                f"(first: {absent[:3]}); the index and the shards disagree, re-save the checkpoint."
            )
        for name, shard in weight_map.items():
            entries[name] = headers[str(shard)][name]
        return Checkpoint(folder, entries)
    files = [folder / SINGLE] if (folder / SINGLE).is_file() else sorted(folder.glob("*.safetensors"))
    if not files:
        raise HFError(
            f"{folder} has no safetensors weights ({SINGLE} or {INDEX} with shards); the streamed "
            "export reads safetensors only (re-save with model.save_pretrained(folder))."
        )
    entries = {}
    for path in files:
        for name, entry in _header(path).items():
            if name in entries:
                raise HFError(
                    f"Tensor {name!r} is in both {entries[name].file.name} and {path.name}; "
                    f"add an {INDEX} or remove the extra file."
                )
            entries[name] = entry
    return Checkpoint(folder, entries)


# transformers' conversion ops that only stack and concatenate (fused MoE experts), or reorder one
# tensor's elements (Inkling 2's experts' ``w13_weight``: ``Interleave``): applied lazily
MERGING_OPS = ("MergeModulelist", "Concatenate", "Interleave")


def _lazy(op: Any) -> bool:
    """Whether transformers' conversion ``op`` can be applied when its tensor is written:
    :data:`MERGING_OPS`, and a ``Transpose`` that does not ask the model for the target's shape
    (``check_dims``)."""
    name = type(op).__name__
    return name in MERGING_OPS or (name == "Transpose" and not getattr(op, "check_dims", True))


@dataclasses.dataclass
class Merge:
    """A model tensor transformers builds on load from several checkpoint tensors with a
    ``WeightConverter`` whose operations only stack and concatenate (``MERGING_OPS``), e.g. the
    fused ``experts.gate_up_proj`` (E, 2I, H) from every expert's ``gate_proj``/``up_proj`` weights;
    or from one checkpoint tensor whose elements it reorders (``Interleave``, ``Transpose``:
    :func:`_lazy`); or one of the pieces a ``Chunk`` converter splits a fused checkpoint tensor into.

    Attributes:
        converter: transformers' ``WeightConverter`` (its ``source_patterns`` and ``operations``).
        sources: Source pattern → (index the pattern's ``*`` matched, checkpoint name), in
            checkpoint order; :meth:`build` sorts them by index as transformers' loader does.
        piece: For a converter that chunks one fused tensor (``Chunk``): the target pattern of
            this model tensor among the chunks; ``None`` for stacking/concatenation.
    """

    converter: Any
    sources: dict[str, list[tuple[int, str]]] = dataclasses.field(default_factory=dict)
    piece: str | None = None

    @property
    def names(self) -> list[str]:
        return [name for items in self.sources.values() for _, name in items]

    def build(self, load: Any) -> torch.Tensor:
        """The merged tensor from ``load(name)`` of each source (real or meta tensors), by
        transformers' own operations (``transformers.core_model_loading``)."""
        patterns = list(self.converter.source_patterns)
        values: dict[str, Any] = {p: [load(n) for _, n in sorted(self.sources[p])] for p in patterns if p in self.sources}
        for op in self.converter.operations:
            values = op.convert(values, source_patterns=patterns, target_patterns=list(self.converter.target_patterns))
        if self.piece is not None:  # one of the tensors a Chunk splits the source into
            return values[self.piece]
        (merged,) = values.values()
        return merged


def _index(name: str, pattern: str) -> int | None:
    """The integer the ``*`` of ``pattern`` matches in checkpoint key ``name`` (its tail after
    the ``*``, e.g. ``.3.w1.weight`` for ``.experts.*.w1.weight``); 0 for a pattern without ``*``,
    which matches one tensor per model key (Bailing-hybrid's ``q_conv1d``/``k_conv1d``/``v_conv1d``
    concatenated into one ``conv1d``)."""
    if "*" not in pattern:
        return 0
    tail = pattern.split("*", 1)[1]
    match = re.search(r"\.(\d+)" + re.escape(tail) + "$", name)
    return None if match is None else int(match.group(1))


def _scan(model: Any, checkpoint: Checkpoint) -> tuple[dict[str, str], dict[str, Merge], list[str]]:
    """``(direct, merges, unsupported)``: model key → checkpoint name for one-to-one tensors,
    model key → :class:`Merge` for stacked/concatenated/reordered ones, and the checkpoint keys whose
    conversion does anything else."""
    # optional heavy dependency (the hf extra), loaded only for checkpoints that need key renames
    from transformers.conversion_mapping import get_model_conversion_mapping
    from transformers.core_model_loading import (  # optional heavy dependency (hf extra)
        WeightConverter,
        rename_source_key,
    )

    try:
        transforms = get_model_conversion_mapping(model)
    except Exception as e:  # an architecture whose mapping cannot be built
        raise HFError(
            f"transformers could not list the checkpoint renames of {type(model).__name__}: {e}"
        ) from e
    converters = [t for t in transforms if isinstance(t, WeightConverter)]
    renamings: list[Any] = [t for t in transforms if not isinstance(t, WeightConverter)]
    own = dict.fromkeys(model.state_dict(keep_vars=True))
    mapping: dict[str, str] = {}
    merges: dict[str, Merge] = {}
    unsupported = []
    for name in checkpoint.entries:
        target, pattern = rename_source_key(name, renamings, converters, model.base_model_prefix, own)
        if target not in own and name in own:
            # a key the renames should have left alone (DeepSeek-V4's ``\.norm\.`` → ``.kv_norm.`` also
            # matches ``model.norm.weight``): kept as it is, as transformers' loader does
            # (``core_model_loading.convert_and_load_state_dict_in_model``)
            target, pattern = name, None
        if pattern is None:
            mapping.setdefault(target, name)
            continue
        converter = next(c for c in converters if pattern in c.source_patterns)
        pieces = _chunk_targets(converter, target, own)
        if pieces:  # one fused checkpoint tensor, split into several model tensors
            for key, piece in pieces.items():
                merges[key] = Merge(converter, {pattern: [(0, name)]}, piece)
            continue
        index = _index(name, pattern)
        if index is None or not all(map(_lazy, converter.operations)):
            unsupported.append(name)
            continue
        merges.setdefault(target, Merge(converter)).sources.setdefault(pattern, []).append((index, name))
    return mapping, merges, unsupported


def _chunk_targets(converter: Any, target: str, own: dict[str, Any]) -> dict[str, str]:
    """Model key → target pattern for a converter that only chunks one checkpoint tensor into its
    target patterns (GTE's, Nomic-BERT's and Jina-v3's fused ``qkv`` → ``q_proj``/``k_proj``/
    ``v_proj``: ``Chunk(dim=0)``), ``target`` being the key renamed with the first pattern; empty
    for any other converter or a key the model lacks."""
    operations = list(converter.operations)
    targets = list(converter.target_patterns)
    if len(operations) != 1 or type(operations[0]).__name__ != "Chunk" or getattr(operations[0], "num_shards_attribute", None):
        return {}
    if len(converter.source_patterns) != 1 or targets[0] not in target:
        return {}
    keys = {target.replace(targets[0], pattern, 1): pattern for pattern in targets}
    return keys if all(key in own for key in keys) else {}


def merged_keys(model: Any, checkpoint: Checkpoint) -> dict[str, Merge]:
    """Model state_dict key → :class:`Merge` for the tensors transformers stacks/concatenates on load."""
    return _scan(model, checkpoint)[1]


class CheckpointSource(Source):
    """One checkpoint tensor, memory-mapped only while it is read: each :meth:`tensor` maps its
    shard anew (:meth:`Checkpoint.tensor`) and the mapping goes with the tensor once it is
    written. Held as mapped torch tensors, the checkpoint's pages stayed in the process as the
    export streamed them, until it returned (a 0.85B Llama: +3.4 GB of RSS, session 38)."""

    def __init__(self, checkpoint: Checkpoint, name: str) -> None:
        self.checkpoint, self.name = checkpoint, name
        entry = checkpoint.entries[name]
        self.dtype = ir.tensor_adapters.from_torch_dtype(entry.dtype)
        self.shape = tuple(int(d) for d in entry.shape)

    def tensor(self) -> ir.TensorProtocol:
        return ir.tensor_adapters.TorchTensor(self.checkpoint.tensor(self.name))

    def describe(self) -> str:
        return f"{self.name} of {self.checkpoint.entries[self.name].file.name}"


class MergedSource(Source):
    """A :class:`Merge` of memory-mapped checkpoint tensors, built when it is written (one model
    tensor at a time: the experts of one layer, not the model)."""

    def __init__(self, checkpoint: Checkpoint, merge: Merge) -> None:
        self.checkpoint, self.merge = checkpoint, merge
        meta = merge.build(lambda n: torch.empty(checkpoint.entries[n].shape, dtype=checkpoint.entries[n].dtype, device="meta"))
        self.dtype = ir.tensor_adapters.from_torch_dtype(meta.dtype)
        self.shape = tuple(int(d) for d in meta.shape)

    def tensor(self) -> ir.TensorProtocol:
        return ir.tensor_adapters.TorchTensor(self.merge.build(self.checkpoint.tensor).contiguous())

    def describe(self) -> str:
        return f"{len(self.merge.names)} checkpoint tensors merged as transformers loads them"


def model_keys(model: Any, checkpoint: Checkpoint) -> dict[str, str]:
    """Model state_dict key → checkpoint name, with the renames transformers applies on load.

    transformers 5 renames checkpoint keys while loading (``transformers.conversion_mapping``:
    legacy ``LayerNorm.gamma``/``beta``, per-architecture ``WeightRenaming`` rules, adding or
    stripping ``base_model_prefix`` to load a ``*ForX`` model from a base checkpoint and back;
    ``transformers.core_model_loading.rename_source_key``). onnxport asks transformers for the same
    renames. Keys merged by stacking/concatenation (fused MoE experts) are in
    :func:`merged_keys` instead; any other tensor-merging or splitting conversion raises.

    Raises:
        HFError: A checkpoint key needs a conversion other than stacking/concatenation.
    """
    mapping, _, unsupported = _scan(model, checkpoint)
    if unsupported:
        raise HFError(
            f"{len(unsupported)} checkpoint tensors of {type(model).__name__} are converted by "
            f"transformers on load beyond stacking, concatenation, chunking, interleaving and transposing (first: {unsupported[:3]}); "
            "they cannot be streamed one by one. Load the model with transformers and export it "
            "with onnxport.hf.export(model)."
        )
    return mapping
