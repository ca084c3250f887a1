"""The large-model path of ``onnxport.hf.export``: a folder's model exported without its weights in RAM.

1. The model is built from ``config.json`` with its parameters on the ``meta`` device
   (:func:`onnxport.hf.meta.build`), in the checkpoint's floating dtype (bf16/fp16 stay so) or in
   ``dtype=`` (the checkpoint's tensors are then cast as they stream).
2. Each component is exported with meta example inputs; initializers are renamed to the model's own
   state_dict keys, matched with the checkpoint's tensors (renames transformers applies on load,
   tied weights) and bound to them lazily. ``target="onnxruntime"`` adds the contrib-op fusions
   (:mod:`onnxport.passes.ort`), ``quantize=`` the MatMulNBits rewrite, whose packed weights are
   transforms of the checkpoint tensors: nothing is read yet.
3. Saving streams the tensors one at a time from the checkpoint's memory map (through their
   transforms: transpose, cast, quantization) into external data, in a staging folder beside the
   destination (never ``/tmp``), renamed into place at the end.
4. Validation runs onnxruntime on the staged files (memory-mapped external data, no prepacking)
   against eager PyTorch on the same checkpoint, memory-mapped too. When the checkpoint is larger
   than ``memory_fraction`` of the available memory, a *slice* is validated instead: the same
   config cut to 2 layers, exported the same way, with those layers' real weights. A quantized
   export is validated as the in-memory path validates one (:func:`onnxport.hf.export`): the
   graph *before* quantization (same target and dtype) against eager with the tolerance table
   (here on the slice, or on the whole model when it has at most 2 layers, written unquantized to
   a temporary subfolder); the quantized files themselves are run in onnxruntime on the first
   fresh input set when the model fits in memory, where only eager's shapes and dtypes and finite
   values are required (int4/int8 weights change the values: each weight's quantization error is
   in ``quantization_report.json``). A slice reads nothing of the full export, so it is exported
   and checked in a second thread while the full model is written (its CPU work overlaps the
   writes' disk time).

Any failure removes the staging folder: nothing is left behind.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import math
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import onnx
import onnx_ir as ir
import torch

from onnxport import draws, mapped_pages
from onnxport.errors import HFError, InputError, OnnxportError, VerificationError, WeightsError
from onnxport.hf import cache as wrappers
from onnxport.hf import inputs as hf_inputs
from onnxport.hf import layout as hf_layout
from onnxport.hf import meta, moe, repeat, shared_cache
from onnxport.hf.checkpoint import Checkpoint, read_checkpoint, sliced
from onnxport.hf.component import export_component
from onnxport.hf.dims import name_total_sequence
from onnxport.hf.genai_config import config_dict, genai_config, genai_runs, write_genai_config
from onnxport.hf.loading import LoadedModel, check_with_past, read_config, read_pooling
from onnxport.hf.output import staged
from onnxport.hf.tasks import Task, get_task, infer_task
from onnxport.hf.validate import (
    OutputCheck,
    Tolerance,
    compare_outputs,
    describe,
    eager,
    eager_rerun,
    refusal,
    tolerance_for,
)
from onnxport.passes.float32_io import float32_boundary
from onnxport.passes.half_tables import half_lookup_tables
from onnxport.passes.ort import QuantizeOptions, optimize_for_onnxruntime
from onnxport.runtime import available_memory, run_session, to_numpy

SLICE_LAYERS = 2
# a slice holding one layer of each type (slice_config's every_type), at most: Qwen3.5's 3 + 1; Gemma 3's
# 5 + 1 keep 2 (sliding) layers, whose float32 copies the validation holds twice (eager and onnxruntime)
MAX_SLICE_LAYERS = 4
SLICE_FOLDER = ".onnxport-slice"


QUANTIZATION_REPORT = "quantization_report.json"


def quantization_report(options: QuantizeOptions, errors: dict[str, dict[str, float]]) -> dict:
    """The JSON written beside a quantized model: settings and each weight's error."""
    return {"options": dataclasses.asdict(options), "weights": errors}


class WeightProgress(Protocol):
    """Receives the progress of the weight streaming (the CLI draws a bar with it)."""

    def begin(self, count: int, nbytes: int) -> None:
        """``count`` tensors of ``nbytes`` bytes in total are about to be written."""

    def advance(self, name: str, nbytes: int) -> None:
        """Tensor ``name`` (``nbytes`` bytes) was written."""

    def finish(self) -> None:
        """Every tensor was written; the validation starts."""


@dataclasses.dataclass
class Streamed:
    """What the streamed path produced (:func:`onnxport.hf.export` wraps it in an ``HFExport``).

    Attributes:
        task: The task exported.
        model: The transformers model, its parameters on ``meta``.
        checkpoint_bytes: Bytes of the checkpoint's tensors.
        dtype: The floating dtype the model was exported in (the checkpoint's, or ``dtype=``).
        checkpoint_dtype: The checkpoint's floating dtype (``None``: no floating tensor).
        programs: Component name → ONNXProgram (initializers bound to the checkpoint).
        seconds: Component name → export seconds (weights excluded).
        checks: The validation rows.
        files: Files written, relative to the destination.
        weight_bytes: Bytes of external data written (tied tensors once).
        validation: ``"full"``, ``"slice (2 of N layers)"`` or ``"off"``; quantized exports add
            ``", before quantization"`` (module docstring).
        quantization: Quantized weight name → ``{"rel_l2", "max_abs"}``, filled as written.
    """

    task: Task
    model: Any
    checkpoint_bytes: int
    dtype: torch.dtype | None
    programs: dict[str, Any] = dataclasses.field(default_factory=dict)
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    checks: list[OutputCheck] = dataclasses.field(default_factory=list)
    files: list[Path] = dataclasses.field(default_factory=list)
    weight_bytes: int = 0
    validation: str = "off"
    quantization: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    checkpoint_dtype: torch.dtype | None = None


@dataclasses.dataclass(frozen=True)
class _Build:
    """How each component is exported: the onnxport options and the onnxruntime target
    (``shared_buffer``: ``kv_cache="shared"``, :mod:`onnxport.hf.shared_cache`)."""

    opset: int | None = None
    optimize: bool = True
    target: str | None = None
    quantize: QuantizeOptions | None = None
    cast: bool = False
    shared_buffer: bool = False


def _capture(part: hf_inputs.Component, model: torch.nn.Module, build: _Build) -> Any:
    """Export one component of a meta model and name its weights by the model's own keys (for
    the onnxruntime target, mixture-of-experts layers as ``com.microsoft.MoE``: :mod:`onnxport.hf.moe`)."""
    with meta.all_on_meta(model):
        program = export_component(part, build.opset, build.optimize, build.target)
    meta.rename_weights(program, meta.own_names(part.module, model))
    return program


@dataclasses.dataclass
class _Repeating:
    """A decoder whose layers repeat (:func:`onnxport.hf.repeat.repeatable`): the names to grow
    its graph by, its depth, its meta copy cut to :data:`~onnxport.hf.repeat.CAPTURED_LAYERS`
    layers, and what the copy's layers cache (``None`` when its probe failed: the whole model's
    reports it)."""

    names: Any
    total: int
    small: LoadedModel
    layers: list[hf_inputs.LayerCache] | None

    def whole(self) -> list[hf_inputs.LayerCache] | None:
        """What each of the ``total`` layers caches: the copy's, when its layers cache the same."""
        if not self.layers or any(layer != self.layers[0] for layer in self.layers):
            return None
        return [self.layers[0]] * self.total


def _repeating(loaded: LoadedModel) -> _Repeating | None:
    """``loaded`` as a :class:`_Repeating` decoder, or ``None`` when it does not qualify. Its copy
    is probed here once: a probe of the whole model runs every layer eagerly on meta (about 1 s
    of a 7 s export of SmolLM2-135M's 30 layers), and equal layers cache the same."""
    model = loaded.model
    names = repeat.repeatable(model, model.config, loaded.task.kind)
    cut = slice_config(model.config, repeat.CAPTURED_LAYERS)
    if names is None or cut is None:
        return None
    small = dataclasses.replace(loaded, model=meta.build(cut, loaded.task.auto_class, model.dtype))
    try:
        layers: list[hf_inputs.LayerCache] | None = hf_inputs.cache_layers_of(small.model)
    except HFError:
        layers = None
    return _Repeating(names, model.config.num_hidden_layers, small, layers)


def _meta_components(loaded: LoadedModel) -> tuple[list[hf_inputs.Component], _Repeating | None]:
    """The components of a meta model, and the model as a :class:`_Repeating` decoder (``None``
    when it is not one), whose copy's cache probe then stands for the whole model's."""
    repeating = _repeating(loaded)
    return hf_inputs.components(loaded, None if repeating is None else repeating.whole()), repeating


def _grown(part: hf_inputs.Component, repeating: _Repeating, build: _Build) -> Any | None:
    """The component's program captured with the two-layer copy and grown to the whole depth
    (:mod:`onnxport.hf.repeat`), or ``None`` when the pass refuses the graph."""
    copy_parts = hf_inputs.components(repeating.small, repeating.layers)
    program = _capture(next(p for p in copy_parts if p.name == part.name), repeating.small.model, build)
    return program if repeat.grow(program, repeating.names, repeating.total) else None


def _export_part(
    part: hf_inputs.Component,
    loaded: LoadedModel,
    checkpoint: Checkpoint,
    build: _Build,
    report: dict[str, dict[str, float]] | None = None,
    repeating: _Repeating | None = None,
) -> Any:
    """Export one component of a meta model (from two layers when they repeat: ``repeating``,
    :func:`_grown`), name its weights by the model's own keys, apply the checkpoint's tensors to
    them (lazily: nothing is read until the save) and run the onnxruntime target's passes (which
    record transforms of those tensors; ``report`` receives each quantized weight's error when it
    is written)."""
    model = loaded.model
    grown = _grown(part, repeating, build) if repeating is not None else None
    program = grown or _capture(part, model, build)
    program.apply_weights(meta.checkpoint_weights(program, model, checkpoint))
    if build.target == "onnxruntime":
        try:
            optimize_for_onnxruntime(
                program.model,
                windows=wrappers.past_key_windows(part.module, model.config),
                rotary_positions=wrappers.max_positions(model.config) if build.shared_buffer else None,
                rotary_embedding=wrappers.max_positions(model.config),
                shared_kv_buffer=build.shared_buffer,
            )
        except InputError as e:  # kv_cache='shared' on a graph whose attention does not fuse
            raise HFError(str(e)) from e
    if build.quantize is not None:
        optimize_for_onnxruntime(program.model, fuse=False, quantize=build.quantize, report=report)
    name_total_sequence(program.model)
    half_lookup_tables(program.model)  # a half checkpoint's embedding tables stay half in a float32 graph
    float32_boundary(program.model)
    return program


def _save_parts(
    programs: dict[str, Any], folder: Path, progress: WeightProgress | None, layout: str
) -> tuple[list[Path], int]:
    """Save every program into ``folder`` (at its :func:`onnxport.hf.layout.model_path`) with
    external data, streaming the checkpoint tensors; the files written and the bytes of external data."""
    tensors = [
        v.const_value
        for p in programs.values()
        for v in p.model.graph.initializers.values()
        if v.const_value is not None
    ]
    total = sum(t.nbytes for t in tensors)
    if progress is not None:
        progress.begin(len(tensors), total)

    def on_tensor(tensor: Any, info: Any) -> None:
        if progress is not None:
            progress.advance(str(tensor.name), int(tensor.nbytes))

    files: list[Path] = []
    for name, program in programs.items():
        path = folder / hf_layout.model_path(name, layout)
        path.parent.mkdir(parents=True, exist_ok=True)
        written = program.save(path, external_data=True, callback=on_tensor)
        files += [Path(p).resolve().relative_to(folder.resolve()) for p in written]
    data = sum((folder / f).stat().st_size for f in files if f.suffix != ".onnx")
    if progress is not None:
        progress.finish()
    return files, data


def slice_config(config: Any, layers: int = SLICE_LAYERS, every_type: bool = False) -> Any | None:
    """``config`` with every stack of more than ``layers`` hidden layers cut to ``layers``
    (per-layer lists cut too): its own ``num_hidden_layers`` and those of its sub-configs (a
    vision-language model's ``text_config`` and ``vision_config``, an encoder-decoder's
    ``encoder`` and ``decoder``: :func:`layer_counts`). With ``every_type`` a stack with
    ``layer_types`` keeps the first layers up to one of each type when that is more than
    ``layers``, at most :data:`MAX_SLICE_LAYERS` and fewer than the stack (Qwen3.5's three
    linear-attention layers and a full-attention one: a slice of linear layers alone has no
    attention, and its cache no length). ``None`` when no stack has more than ``layers``, or a count refuses to be set
    (ProphetNet's ``num_hidden_layers`` raises ``NotImplementedError``: its encoder and decoder
    counts are set apart)."""
    if not layer_counts(config, layers):
        return None
    cut = config.__class__.from_dict(config.to_dict())
    try:
        for sub in _stacks(cut).values():
            _cut_stack(sub, _covering(sub, layers) if every_type else layers)
    except (NotImplementedError, AttributeError):
        return None
    return cut


def layer_counts(config: Any, above: int = 0) -> dict[str, int]:
    """The hidden-layer count of each stack of ``config`` with more than ``above`` layers, by
    sub-config (``""``: the config itself, ``"text_config"``, ``"vision_config"``, ...; a
    sub-config is an attribute holding a ``PretrainedConfig``)."""
    counts = {}
    for name, sub in _stacks(config).items():
        count = getattr(sub, "num_hidden_layers", None)
        if isinstance(count, int) and count > above:
            counts[name] = count
    return counts


def _stacks(config: Any) -> dict[str, Any]:
    """``config`` (named ``""``) and its sub-configs by attribute name (an attribute with
    ``to_dict`` and ``model_type`` is a config: transformers stays an optional import here)."""
    subs = {name: value for name, value in vars(config).items() if hasattr(value, "to_dict") and hasattr(value, "model_type")}
    return {"": config, **subs}


def _covering(config: Any, layers: int) -> int:
    """The number of first layers of ``config`` that hold each of its ``layer_types`` at least
    once: ``layers`` or more, or ``layers`` when that takes more than :data:`MAX_SLICE_LAYERS` or
    the whole stack (no smaller slice has them all)."""
    per_layer = getattr(config, "layer_types", None)
    if not isinstance(per_layer, list) or len(per_layer) != getattr(config, "num_hidden_layers", None):
        return layers
    needed = 1 + max(per_layer.index(kind) for kind in set(map(str, per_layer)))
    return layers if needed > MAX_SLICE_LAYERS or needed >= len(per_layer) else max(layers, needed)


def _cut_stack(config: Any, layers: int) -> None:
    """Cut one config's ``num_hidden_layers`` (and ``encoder_layers`` / ``decoder_layers``,
    ``layer_types``) to ``layers`` in place, when it has more."""
    count = getattr(config, "num_hidden_layers", None)
    if not isinstance(count, int) or count <= layers:
        return
    config.num_hidden_layers = layers
    shared = getattr(config, "num_kv_shared_layers", None)
    if isinstance(shared, int):  # Gemma 3n / 4: the last `shared` layers reuse earlier layers' key/values
        config.num_kv_shared_layers = max(0, shared - (count - layers))
    for attr in ("encoder_layers", "decoder_layers"):
        if isinstance(getattr(config, attr, None), int):
            setattr(config, attr, min(getattr(config, attr), layers))
    per_layer = getattr(config, "layer_types", None)
    if isinstance(per_layer, list) and len(per_layer) == count:
        config.layer_types = per_layer[:layers]


def _draws_at_mean(path: Path) -> bytes | None:
    """The saved model's bytes with its normal / uniform draws at their mean
    (:func:`onnxport.draws.onnx_draws_at_mean`, as the eager reference draws), or ``None`` when
    its graph draws nothing. The weights are read into memory: only models that draw noise at
    inference (VITS) take this path."""
    header = ir.serde.deserialize_model(onnx.load(str(path), load_external_data=False))
    if not draws.has_draws(header):  # the one rule of what is a draw taken at its mean
        return None
    model = ir.load(path)
    ir.external_data.load_to_model(model)
    with draws.onnx_draws_at_mean(model):
        return ir.serde.serialize_model(model).SerializeToString()


def session(path: Path) -> Any:
    """An onnxruntime CPU session on a saved model whose external data stays memory-mapped:
    no graph optimization and no prepacking, either of which copies weights into anonymous
    memory (onnxruntime maps aligned external data from the file), and no CPU memory arena, so
    the intermediate tensors of a run (a half-precision graph's float32 casts of its weights) are
    freed as soon as they are used instead of kept at their peak by the arena, and the mapped
    weights leave the process's resident set as each run goes (:mod:`onnxport.mapped_pages`). A
    model that draws noise is loaded with its draws at their mean (:func:`_draws_at_mean`)."""
    import onnxruntime as ort  # heavy: imported only when the validation runs

    options = ort.SessionOptions()
    options.log_severity_level = 4  # failures reach the user as onnxport errors, not as onnxruntime log lines
    options.enable_cpu_mem_arena = False
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.add_session_config_entry("session.disable_prepacking", "1")
    mapped = mapped_pages.file_mappings(path.parent)
    try:
        at_mean = _draws_at_mean(path)
        sess = ort.InferenceSession(str(path) if at_mean is None else at_mean, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime's own exception types
        raise HFError(f"onnxruntime could not load {path}: {type(e).__name__}: {e}") from e
    mapped_pages.track(sess, path.parent, mapped)  # its pages leave as it runs
    return sess


def _check_part(
    part: hf_inputs.Component, path: Path, rule: _Rule, label: str, sizes: Any = None
) -> list[OutputCheck]:
    """Run the saved component and eager on fresh inputs (``sizes``, default
    :data:`onnxport.hf.inputs.CHECK_SIZES`) and compare every output by ``rule``."""
    sess = session(path)
    names = [i.name for i in sess.get_inputs()]
    types = {i.name: i.type for i in sess.get_inputs()}
    checks = []
    graph_dtype = rule.dtype
    for size in sizes or hf_inputs.CHECK_SIZES:
        feeds = graph = part.make_inputs(size)
        total = 0
        if rule.shared_buffer:  # unpadded rows, past in fixed buffers (hf.shared_cache)
            feeds, graph, total = shared_cache.graph_feeds(feeds, names)
        if graph_dtype is not None:  # float inputs rounded to the graph's dtype, eager gets the same values
            feeds, graph = (torch.utils._pytree.tree_map(lambda t: _round(t, graph_dtype), f) for f in (feeds, graph))
        leaves = [t for t in torch.utils._pytree.tree_leaves(graph) if isinstance(t, torch.Tensor)]
        arrays = {n: to_numpy(_boundary(_cast(t, rule.dtype), types[n])) for n, t in zip(names, leaves, strict=True)}
        try:
            actual = run_session(sess, arrays)
        except Exception as e:  # onnxruntime's own exception types
            raise refusal(path, e, label, describe(feeds)) from e
        if rule.shared_buffer:
            actual = shared_cache.trim_presents(part.output_names, actual, total)
        expected = [_cast(t, rule.dtype) for t in eager(part.module, feeds)]
        actual = [a.to(e.dtype) if e.dtype == torch.bfloat16 and a.dtype == torch.float32 else a
                  for a, e in zip(actual, expected)]  # the float32 boundary (lossless) back to eager's dtype
        where = describe(feeds) + (f", buffer {total + shared_cache.SPARE_ROWS}" if rule.shared_buffer else "")
        checks += compare_outputs((label, where), part.output_names, actual, expected, rule.atol,
                                  eager_rerun(part.module, feeds))
    return checks


def _boundary(t: Any, onnx_type: str) -> Any:
    """A bfloat16 feed as float32 where the graph takes float32 (:mod:`onnxport.passes.float32_io`)."""
    return t.float() if isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16 and onnx_type == "tensor(float)" else t


def _cast(t: Any, dtype: torch.dtype | None) -> Any:
    is_float = isinstance(t, torch.Tensor) and t.is_floating_point()
    return t.to(dtype) if dtype is not None and is_float else t


def _round(t: Any, dtype: torch.dtype) -> Any:
    return _cast(_cast(t, dtype), t.dtype) if isinstance(t, torch.Tensor) else t


@dataclasses.dataclass(frozen=True)
class _Rule:
    """How outputs are compared: ``atol`` (``None``: the tolerance table) and, when the graph's
    dtype was chosen with ``dtype=``, that dtype (eager runs in float32, its outputs are cast to
    it and compared with its tolerances; float inputs are rounded to it for both);
    ``shared_buffer``: the graph's past inputs are fixed buffers, fed and compared as
    :func:`onnxport.hf.shared_cache.graph_feeds` says."""

    atol: float | Tolerance | None
    dtype: torch.dtype | None = None
    shared_buffer: bool = False


def _reference(spec: _Spec, config: Any) -> torch.nn.Module:
    """The eager model of ``config`` with the checkpoint's tensors memory-mapped; in float32
    when the export chose its dtype (``dtype=``), which copies half-precision checkpoints. That
    model is built in float32, so buffers computed at construction are too, as in
    ``from_pretrained(dtype=torch.float32)`` (Gemma's embedding scale √hidden: built in bfloat16,
    39.25 instead of 39.19 at width 1536, every embedding 0.15% off)."""
    build_dtype = torch.float32 if spec.rule.dtype is not None else spec.source_dtype
    mapped = mapped_pages.file_mappings(spec.checkpoint.folder)
    model = meta.materialize(meta.build(config, spec.task.auto_class, build_dtype), spec.checkpoint)
    if spec.rule.dtype is not None and spec.source_dtype != torch.float32:
        model = model.float()
    mapped_pages.track(model, spec.checkpoint.folder, mapped, model.state_dict().values())  # what its parameters read
    return model


def _check_folder(spec: _Spec, config: Any, folder: Path, build: _Build, label: str) -> list[OutputCheck]:
    """Export ``config`` (the slice, or the whole model) with ``build`` into ``folder`` (flat) and
    compare it with eager."""
    model = meta.build(config, spec.task.auto_class, spec.dtype)
    if config is not spec.config:  # a slice: per-layer tables cut to its layers
        kept = layer_counts(config)
        ratios = [(kept[name], count) for name, count in layer_counts(spec.config, SLICE_LAYERS).items()]
        spec = dataclasses.replace(spec, checkpoint=sliced(spec.checkpoint, model, ratios))
    loaded = spec.loaded(model)
    parts, repeating = _meta_components(loaded)
    programs = {p.name: _export_part(p, loaded, spec.checkpoint, build, {}, repeating) for p in parts}
    _save_parts(programs, folder, None, "flat")
    del programs
    return _against_eager(spec, config, lambda name: folder / hf_layout.model_path(name, "flat"), spec.rule,
                          lambda name: f"{name} ({label})")


def _against_eager(spec: _Spec, config: Any, where: Callable[[str], Path], rule: _Rule,
                   label: Callable[[str], str], sizes: Any = None) -> list[OutputCheck]:
    """:func:`_check_part` for every component of the eager model of ``config``
    (:func:`_reference`) against its saved file ``where(name)``, labelled ``label(name)``; the
    model's memory-mapped checkpoint pages leave the resident set while it runs
    (:mod:`onnxport.mapped_pages`: +3.2 GB of RSS for a 0.85B Llama's full validation before)."""
    real = _reference(spec, config)
    checks = []
    with mapped_pages.released(real):
        for part in hf_inputs.components(spec.loaded(real)):
            checks += _check_part(part, where(part.name), rule, label(part.name), sizes)
    return checks


def _validate(spec: _Spec, staging: Path, fits: bool) -> tuple[list[OutputCheck], str]:
    """Validate the staged export in full (``fits``: the weights fit in memory) or through a slice
    (see the module docstring). Without ``fits`` nothing of the full export is read, so it may run
    while the full export is still being written."""
    cut = slice_config(spec.config, every_type=True)
    if spec.build.quantize is None and fits:
        checks = _against_eager(spec, spec.config, lambda name: staging / hf_layout.model_path(name, spec.layout),
                                spec.rule, lambda name: name)
        return checks, "full"
    if cut is None and spec.build.quantize is None:
        raise HFError(
            f"The checkpoint ({spec.checkpoint.nbytes / 2**30:.1f} GiB) is too large to validate in "
            f"memory and its config has no stack of more than {SLICE_LAYERS} layers (num_hidden_layers) to validate a slice; pass validate=False."
        )
    folder = staging / SLICE_FOLDER
    folder.mkdir()
    float_build = dataclasses.replace(spec.build, quantize=None)
    before = "" if spec.build.quantize is None else ", before quantization"
    checks, cut = _check_slice(spec, cut, folder, float_build, before, fits)
    label = (_slice_label(spec.config, cut) if cut is not None else "full") + before
    if spec.build.quantize is not None:
        if fits:  # the quantized files run: eager's shapes, dtypes, finite values (module docstring)
            bits = f"int{spec.build.quantize.bits}"
            checks += _against_eager(spec, spec.config, lambda name: staging / hf_layout.model_path(name, spec.layout),
                                     _Rule(math.inf, spec.rule.dtype), lambda name: f"{name} ({bits}, runs)",
                                     hf_inputs.CHECK_SIZES[:1])
            label += f"; the {bits} model ran"
    shutil.rmtree(folder)
    return checks, label


def _slice_label(config: Any, cut: Any) -> str:
    """``slice (2 of 32 layers)``; per stack for a config with sub-configs:
    ``slice (2 of 32 text_config layers, 2 of 24 vision_config layers)``."""
    kept = layer_counts(cut)
    stacks = [f"{kept[name]} of {count}{' ' + name if name else ''} layers" for name, count in layer_counts(config, SLICE_LAYERS).items()]
    return f"slice ({', '.join(stacks)})"


def _check_slice(spec: _Spec, cut: Any, folder: Path, build: _Build, before: str, fits: bool) -> tuple[list[OutputCheck], Any]:
    """The float checks of ``cut`` (a slice config) exported into ``folder``, or of the whole model
    when there is no slice or, for a model that fits in memory, when the slice cannot be built or
    its weights do not fit the checkpoint (a tensor sized by the layer count that
    :func:`onnxport.hf.checkpoint.sliced` does not recognise): a genuine failure repeats on the
    whole model.
    Returns the checks and the config checked (``None``: the whole model).

    Raises:
        HFError: The slice's weights do not fit and the model does not fit in memory.
    """
    if cut is not None:
        try:
            return _check_folder(spec, cut, folder, build, f"slice{before}"), cut
        except (WeightsError, HFError) as e:
            if not fits:
                raise HFError(
                    f"A slice of the first layers cannot be validated ({str(e).splitlines()[0]}), and the model "
                    "is too large to validate whole in memory. Pass validate=False (--no-validate)."
                ) from e
            shutil.rmtree(folder)
            folder.mkdir()
    return _check_folder(spec, spec.config, folder, build, f"whole{before}"), None


@dataclasses.dataclass
class _Spec:
    folder: Path
    config: Any
    task: Task
    checkpoint: Checkpoint
    dtype: torch.dtype | None
    pooling: dict[str, Any] | None
    build: _Build
    rule: _Rule
    source_dtype: torch.dtype | None = None
    layout: str = hf_layout.DEFAULT_LAYOUT
    prune_lm_head: bool = False
    with_past: bool = True

    def loaded(self, model: torch.nn.Module) -> LoadedModel:
        """``model`` (the meta model, a slice or the eager reference) as the components take it."""
        return LoadedModel(model, self.task, self.folder, self.pooling, self.prune_lm_head, self.with_past)


# the share of the available memory up to which a streamed export validates the whole model
DEFAULT_MEMORY_FRACTION = 1 / 3


def float32_graph(quantize: Any, target: str | None) -> bool:
    """Whether a half-precision checkpoint exports in float32 when no ``dtype`` is given: with
    ``quantize`` (MatMulNBits is made from float32 MatMuls) or ``target="onnxruntime"`` (its
    fusions and GroupQueryAttention's shared buffer match float32 graphs), as the model builder's
    CPU ``-p fp32`` / ``int4``. Both paths ask it: the streamed one casts as it streams, the
    in-memory one loads the folder in float32."""
    return quantize is not None or target == "onnxruntime"


@moe.grouped_mm_fallback()  # float32 meta-device MoE models (hf.moe)
def export_streamed(
    folder: Path,
    task: str | None,
    destination: Path,
    *,
    opset_version: int | None = None,
    validate: bool = True,
    atol: float | None = None,
    memory_fraction: float = DEFAULT_MEMORY_FRACTION,
    progress: WeightProgress | None = None,
    optimize: bool = True,
    layout: str = hf_layout.DEFAULT_LAYOUT,
    target: str | None = None,
    quantize: QuantizeOptions | None = None,
    dtype: torch.dtype | None = None,
    shared_buffer: bool = False,
    prune_lm_head: bool = False,
    with_past: bool = True,
) -> Streamed:
    """Export ``folder`` into ``destination`` without loading its weights (module docstring).

    Args:
        folder: A model folder with ``config.json`` and a safetensors checkpoint.
        task: The task (inferred from the architecture when ``None``).
        destination: Output folder (must not exist or be empty; checked by the caller).
        opset_version: The ONNX opset (onnxport's default when ``None``).
        validate: Compare with eager PyTorch on fresh inputs.
        atol: Validation tolerance: ``None``, onnxport's per-dtype table
            (``verify/compare.py``), except :data:`~onnxport.hf.validate.HALF_TOLERANCE` for bfloat16/float16 checkpoints
            exported in their dtype (eager CPU rounds every half op, onnxruntime computes them in
            float32); a number, Optimum's max-abs-difference rule.
        memory_fraction: Validate the whole model when the checkpoint's bytes are at most this
            fraction of the available memory (``/proc/meminfo`` MemAvailable), else a 2-layer slice.
        progress: Receives the streaming progress (tensors and bytes).
        optimize: Run onnxport's graph passes (they record weight transforms, read no values).
        layout: ``"hub"`` (graphs under ``onnx/``) or ``"flat"`` (:mod:`onnxport.hf.layout`).
        target: ``None``/``"onnx"`` or ``"onnxruntime"`` (the contrib-op fusions of
            :mod:`onnxport.passes.ort`, validated like the standard graph).
        quantize: MatMulNBits weight-only quantization, computed as each weight is written;
            writes ``quantization_report.json`` (validation: module docstring).
        dtype: ``torch.float16``/``torch.bfloat16``/``torch.float32``: build the graph in this
            floating dtype and cast the checkpoint's tensors to it as they stream (``None``: the
            checkpoint's, or float32 for a half-precision checkpoint when :func:`float32_graph`).
            Validation then runs eager in float32 and compares its outputs, cast to ``dtype``,
            with the tolerance table's ``dtype`` row (float16 rtol/atol 1e-2, bfloat16 2e-2),
            float inputs rounded to ``dtype`` for both.
        shared_buffer: ``kv_cache="shared"`` (``target="onnxruntime"``, text generation): the
            in-place KV cache graph, validated on unpadded inputs with the past in fixed buffers
            (:mod:`onnxport.hf.shared_cache`); ``genai_config.json`` says
            ``past_present_share_buffer: true``.
        prune_lm_head: Text generation: logits of each row's last real token only (``[batch_size, 1,
            vocab_size]``, :class:`onnxport.hf.cache.CausalLMWithCache`).
        with_past: Text generation: ``False`` writes the decoder without its cache (the whole
            sequence → ``logits``; no ``genai_config.json``).

    Returns:
        A :class:`Streamed` with the meta model, the programs, the checks and the files written.

    Raises:
        HFError: Bad folder, config, index or shards; names, shapes or dtypes that do not match;
            ``shared_buffer`` for a model that is not a decoder or whose attention is limited
            (sliding window, chunks) or does not fuse.
        VerificationError: An output differs from eager beyond ``atol``.
        OnnxportError: The export failed.
    """
    config = read_config(folder)
    checkpoint = read_checkpoint(folder)
    resolved = get_task(task, config) if task else infer_task(config)
    source_dtype = checkpoint.float_dtype()
    if dtype is None and source_dtype in (torch.bfloat16, torch.float16) and float32_graph(quantize, target):
        dtype = torch.float32
    graph_dtype = dtype if dtype is not None else source_dtype
    if quantize is not None and graph_dtype not in (None, torch.float32):
        raise HFError(
            f"quantize= rewrites float32 MatMuls; this export's graph is {graph_dtype} "
            f"({'dtype=' if dtype is not None else 'the checkpoint'}): pass dtype='float32' "
            "(float16 MatMulNBits is not done yet)."
        )
    pooling = read_pooling(folder) if resolved.name == "feature-extraction" else None
    tolerance = tolerance_for(atol, {source_dtype} if dtype is None and source_dtype is not None else set())
    if shared_buffer and resolved.kind != "causal-lm":
        raise HFError(f"kv_cache='shared' is for text-generation decoders, not task {resolved.name!r}.")
    if shared_buffer:
        shared_cache.check_full_attention(config)
    build = _Build(opset_version, optimize, target, quantize, cast=dtype is not None, shared_buffer=shared_buffer)
    rule = _Rule(tolerance, dtype, shared_buffer)
    check_with_past(with_past, resolved, prune_lm_head or shared_buffer)
    spec = _Spec(folder, config, resolved, checkpoint, graph_dtype, pooling, build, rule, source_dtype, layout,
                 prune_lm_head, with_past)
    model = meta.build(config, resolved.auto_class, graph_dtype)
    meta.check(model, checkpoint, cast=build.cast)
    result = Streamed(resolved, model, checkpoint.nbytes, graph_dtype, checkpoint_dtype=source_dtype)
    programs: dict[str, Any] = {}
    loaded = spec.loaded(model)
    parts, repeating = _meta_components(loaded)
    for part in parts:
        start = time.perf_counter()
        programs[part.name] = _export_part(part, loaded, checkpoint, build, result.quantization, repeating)
        result.programs[part.name] = programs[part.name]
        result.seconds[part.name] = time.perf_counter() - start
    fits = checkpoint.nbytes <= memory_fraction * available_memory()
    try:
        with staged(destination) as staging:  # moved into place at the end (checked by the caller)
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                # a slice is exported and checked beside the save (CPU while the save waits on the disk)
                early = pool.submit(_validate, spec, staging, fits) if validate and not fits else None
                result.files, result.weight_bytes = _save_parts(programs, staging, progress, layout)
                if early is not None:
                    result.checks, result.validation = early.result()
            for rel in hf_inputs.folder_files(folder):
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(folder / rel, staging / rel)
                result.files.append(rel)
            if (staging / "config.json").is_file():
                hf_layout.flatten_text_config(staging / "config.json")
            if resolved.kind == "causal-lm" and genai_runs(programs["model"].model):
                generation_file = folder / "generation_config.json"
                generation = json.loads(generation_file.read_text()) if generation_file.is_file() else None
                content = genai_config(
                    programs["model"].model, config_dict(config), generation, hf_layout.model_path("model", layout).as_posix(),
                    past_present_share_buffer=shared_buffer,
                )
                result.files.append(write_genai_config(staging, content).relative_to(staging))
            if quantize is not None:
                report = staging / QUANTIZATION_REPORT
                report.write_text(json.dumps(quantization_report(quantize, result.quantization), indent=1))
                result.files.append(report.relative_to(staging))
            if validate:
                if early is None:
                    result.checks, result.validation = _validate(spec, staging, fits)
                failed = [c for c in result.checks if not c.passed]
                if failed:
                    rows = "\n".join(
                        f"  {c.component}/{c.output} ({c.inputs}): "
                        + (c.comparison.summary() if c.comparison is not None else f"max abs diff {c.max_abs_diff:.3g}")
                        for c in failed
                    )
                    raise VerificationError(
                        f"ONNX outputs differ from eager PyTorch on fresh inputs ({result.validation}):\n{rows}"
                    )
    except OnnxportError:
        raise
    except BaseException as e:
        if isinstance(e, (KeyboardInterrupt, SystemExit, MemoryError)):
            raise
        raise HFError(f"Exporting {folder} failed: {type(e).__name__}: {e}") from e
    return result


__all__ = [
    "QUANTIZATION_REPORT",
    "Streamed",
    "WeightProgress",
    "export_streamed",
    "float32_graph",
    "quantization_report",
    "slice_config",
]
