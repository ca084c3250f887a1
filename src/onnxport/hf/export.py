"""``onnxport.hf.export``: a local transformers folder (or model) → validated ONNX model(s) in a folder."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any

import torch

from onnxport.errors import HFError, InputError, VerificationError
from onnxport.hf import cache as wrappers
from onnxport.hf import diffusion, hub, mla
from onnxport.hf import inputs as hf_inputs
from onnxport.hf import layout as hf_layout
from onnxport.hf.component import export_component
from onnxport.hf.dims import name_total_sequence
from onnxport.hf.genai_config import config_dict, genai_config, genai_runs, write_genai_config
from onnxport.hf.key_value import separate_key_values
from onnxport.hf.loading import LoadedModel, check_with_past, from_model, load
from onnxport.hf.output import check_output_dir, staged
from onnxport.hf.shared_cache import KV_CACHE_MODES, check_full_attention, validate_shared
from onnxport.hf.streamed import (
    DEFAULT_MEMORY_FRACTION,
    QUANTIZATION_REPORT,
    Streamed,
    WeightProgress,
    export_streamed,
    float32_graph,
    quantization_report,
)
from onnxport.hf.validate import (
    DEFAULT_ATOL,
    OutputCheck,
    Tolerance,
    compare_outputs,
    describe,
    eager,
    eager_rerun,
    tolerance_for,
)
from onnxport.passes.float32_io import float32_boundary
from onnxport.passes.ort import QuantizeOptions, optimize_for_onnxruntime
from onnxport.verify.runtime_check import run_at_mean


@dataclasses.dataclass
class HFExport:
    """What :func:`export` produced.

    Attributes:
        task: The task name.
        model: The transformers model that was exported.
        programs: Component name (``model``, ``encoder_model``, ``decoder_model``) → ONNXProgram.
        checks: Every output of every component on every fresh input set.
        output_dir: Where the files were written (``None`` when not saved).
        files: The files written, relative to ``output_dir``.
        seconds: Component name → export seconds.
        streamed: For the large-model path (weights streamed from the checkpoint), its
            :class:`onnxport.hf.streamed.Streamed` (checkpoint bytes, dtype, validation kind).
        layout: ``hub`` (graphs under ``onnx/``) or ``flat`` (:mod:`onnxport.hf.layout`).
        quantization: Quantized weight name → ``{"rel_l2", "max_abs"}`` error of the dequantized
            weight (filled when the weights are written).
    """

    task: str
    model: Any
    programs: dict[str, Any]
    checks: list[OutputCheck]
    output_dir: Path | None = None
    files: list[Path] = dataclasses.field(default_factory=list)
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    streamed: Streamed | None = None
    layout: str = hf_layout.DEFAULT_LAYOUT
    quantization: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


def export(
    model_or_folder: Any,
    task: str | None = None,
    *,
    opset_version: int | None = None,
    with_past: bool | None = None,
    output_dir: str | Path | None = None,
    validate: bool = True,
    atol: float | None = DEFAULT_ATOL,
    optimize: bool = True,
    stream: bool | None = None,
    memory_fraction: float = DEFAULT_MEMORY_FRACTION,
    progress: WeightProgress | None = None,
    layout: str = hf_layout.DEFAULT_LAYOUT,
    target: str | None = None,
    quantize: str | QuantizeOptions | None = None,
    kv_cache: str = "concat",
    dtype: str | torch.dtype | None = None,
    overwrite: bool = False,
    prune_lm_head: bool = False,
) -> HFExport:
    """Export a Hugging Face model for a task, validate it and write it with its files.

    Args:
        model_or_folder: A local model folder (``config.json`` + safetensors), a Hugging Face Hub
            id (``owner/name[@revision]``, resolved to its snapshot in the Hugging Face cache and
            downloaded unless ``HF_HUB_OFFLINE=1``: :mod:`onnxport.hf.hub`) or a loaded
            transformers ``PreTrainedModel``.
        task: One of :data:`onnxport.hf.tasks.TASKS` (inferred from the architecture when ``None``).
        opset_version: The ONNX opset (onnxport's default when ``None``).
        with_past: For text-generation and encoder-decoders, export the KV-cache inputs/outputs
            (default). ``False`` (text-generation only): ``model.onnx`` maps the whole
            sequence (``input_ids``, ``attention_mask``, ``position_ids`` when the model takes
            them) to ``logits``, Optimum's ``text-generation`` task without ``-with-past``.
            Only ``True`` (the default) is supported: one cache model serves the first step
            (empty past) and the later ones.
        output_dir: Folder to write ``*.onnx`` plus config and tokenizer files into. It must not
            exist or be empty (unless ``overwrite``); it is created only when everything succeeded.
        validate: Compare every output with eager PyTorch on fresh inputs (another batch, sequence
            and past length); a failure raises ``VerificationError`` and writes nothing.
        atol: ``None``: onnxport's tolerance table per dtype (``verify/compare.py``), except
            ``HALF_TOLERANCE`` (atol 0.1, rtol 0.02) for bfloat16/float16 weights exported in their
            dtype (eager CPU rounds every half op, onnxruntime computes most of them in float32,
            ``hf/validate.py``); a number:
            Optimum's rule, max abs difference ≤ ``atol``.
        optimize: Run onnxport's graph passes.
        stream: Build the model on the meta device and stream the checkpoint's tensors into the
            output (:mod:`onnxport.hf.streamed`): memory does not grow with the model; needs a
            folder with safetensors weights and an ``output_dir``. ``HFExport.model`` is then the
            meta-device model. ``None`` (the default) is ``False``; ``onnxport export --hf``
            streams whenever the folder has safetensors weights.
        memory_fraction: Streamed path: validate the whole model when the checkpoint takes at most
            this fraction of the available memory, else a 2-layer slice with its real weights.
        progress: Streamed path: receives the tensors/bytes written (``begin``/``advance``).
        layout: ``"hub"`` (default): config, tokenizer and ``genai_config.json`` at the root, the
            graphs under ``onnx/`` (``model.onnx``; ``encoder_model.onnx`` +
            ``decoder_model_merged.onnx``), as transformers.js and Optimum expect; ``"flat"``:
            all in one folder. See :mod:`onnxport.hf.layout`.
        target: ``None``/``"onnx"`` for standard ONNX, ``"onnxruntime"`` to add the contrib-op
            fusions of :mod:`onnxport.passes.ort` (validated like the standard graph); its decoders
            compute multi-head latent attention absorbed over the cached latent
            (:mod:`onnxport.hf.mla`: DeepSeek-V2/V3 and alike) and keep a multi-query GPT-BigCode's
            keys and values apart (:mod:`onnxport.hf.key_value`), so their caches differ from the
            standard export's.
        quantize: ``"int4"``, ``"int8"`` or a :class:`~onnxport.passes.ort.QuantizeOptions`:
            weight-only quantization of the MatMul weights to ``MatMulNBits`` (onnxruntime only),
            applied after validation; each weight's quantization error is computed when it is
            written, into ``HFExport.quantization`` and ``quantization_report.json``. On the
            streamed path the graph before quantization is validated the same way (on a 2-layer
            slice) and the quantized files are run (:mod:`onnxport.hf.streamed`).
        dtype: ``"float16"``, ``"bfloat16"``, ``"float32"`` or the torch dtype (streamed path
            only): export the graph in this dtype, the checkpoint's tensors cast as they stream;
            validated against eager in float32 with that dtype's tolerances
            (``verify/compare.py: TOLERANCES``). ``None``: the checkpoint's dtype, or float32
            for a half-precision checkpoint with ``quantize`` or ``target="onnxruntime"`` (their
            MatMulNBits and fusions take float32 graphs).
        kv_cache: ``"concat"`` (default): ``present.* = Concat(past, new)``, positions from
            ``position_ids`` (left padding works; onnxruntime, transformers.js). ``"shared"``
            (``target="onnxruntime"``, text-generation only): the in-place cache onnxruntime-genai
            runs with ``past_present_share_buffer: true``: fixed ``max_length`` past buffers that
            ``present.*`` aliases, rotary fused into GroupQueryAttention (caches of
            ``max_position_embeddings`` rows), positions and lengths from ``attention_mask``
            (rows must not be left-padded: the kernel reads the first ``sum(mask)`` buffer
            rows); validated on unpadded inputs
            (:mod:`onnxport.hf.shared_cache`), ``genai_config.json`` says
            ``past_present_share_buffer: true``.
        overwrite: Replace a non-empty ``output_dir`` whole, once the new export is complete and
            validated (:mod:`onnxport.hf.output`); a failed export leaves it as it was.
        prune_lm_head: Text generation (and a VLM's decoder): ``logits`` are each row's last
            real token's only, ``[batch_size, 1, vocab_size]`` (the row from ``attention_mask``, so
            right padding as onnxruntime-genai pads a batch is right:
            :mod:`onnxport.hf.right_padding`), as the model builder's ``prune_lm_head=true`` (which
            takes the last position): the LM head runs on one row at prefill. onnxruntime-genai
            reads such logits
            (``Model::IsPruned``); runtimes that need every position's logits (scoring,
            n-gram or speculative decoding) cannot use the graph. Default ``False``.

    Returns:
        An :class:`HFExport` with the programs, the validation rows and the files written.

    Raises:
        HFError: The folder has no usable config or weights, the architecture or task is unknown,
            or ``target``/``quantize``/``kv_cache``/``dtype`` is not one of the values above,
            ``kv_cache="shared"`` on a model whose attention does not fuse,
            ``dtype`` given without ``stream=True``, ``prune_lm_head`` for a model with no
            decoder step, or ``with_past=False`` for another task than text-generation or with
            ``prune_lm_head`` or ``kv_cache="shared"``.
        VerificationError: An output differs from eager beyond ``atol``.
        OnnxportError: The export itself failed.
    """
    if isinstance(model_or_folder, (str, Path)):
        model_or_folder = hub.resolve(model_or_folder)
    # latent attention is computed absorbed (onnxport.hf.mla: over transformers' cache for the standard
    # target, over one [latent, k_rot] buffer for onnxruntime's kernel); the onnxruntime target keeps
    # a multi-query cache's keys and values apart (onnxport.hf.key_value), as its kernels take them
    absorbed = mla.model_types_of(model_or_folder)
    with mla.absorbed_latent_attention(absorbed, transformers_cache=target != "onnxruntime"), \
            separate_key_values(target == "onnxruntime"):
        if diffusion.is_pipeline(model_or_folder):
            if stream or quantize is not None or dtype is not None or kv_cache != "concat" or prune_lm_head:
                raise HFError(
                    "A diffusers pipeline exports in memory, in float32: stream, quantize, dtype, kv_cache and "
                    "prune_lm_head do not apply."
                )
            if target not in (None, "onnx", "onnxruntime"):
                raise HFError(f"target must be 'onnx' or 'onnxruntime', not {target!r}.")
            destination = check_output_dir(output_dir, overwrite) if output_dir is not None else None
            return _export_pipeline(Path(model_or_folder), destination, opset_version, optimize, target, (validate, atol))
        hf_layout.check_layout(layout)
        destination = check_output_dir(output_dir, overwrite) if output_dir is not None else None
        quantization = quantize_options(quantize)
        if target not in (None, "onnx", "onnxruntime"):
            raise HFError(f"target must be 'onnx' or 'onnxruntime', not {target!r}.")
        if kv_cache not in KV_CACHE_MODES:
            raise HFError(f"kv_cache must be 'concat' or 'shared', not {kv_cache!r}.")
        shared = kv_cache == "shared"
        if shared and target != "onnxruntime":
            raise HFError(
                "kv_cache='shared' is the in-place cache of onnxruntime's GroupQueryAttention; "
                "add target='onnxruntime' (CLI: --target onnxruntime)."
            )
        export_dtype = dtype_option(dtype)
        if export_dtype is not None and not stream:
            raise HFError(
                f"dtype={dtype!r} casts the weights as they stream: pass stream=True with a safetensors "
                "folder (or convert a loaded model with model.to(dtype) and leave dtype=None)."
            )
        if stream:
            if not isinstance(model_or_folder, (str, Path)) or destination is None:
                raise HFError("stream=True needs a model folder and an output_dir to stream into.")
            done = export_streamed(
                Path(model_or_folder),
                task,
                destination,
                opset_version=opset_version,
                validate=validate,
                atol=atol,
                memory_fraction=memory_fraction,
                progress=progress,
                optimize=optimize,
                layout=layout,
                target=None if target == "onnx" else target,
                quantize=quantization,
                dtype=export_dtype,
                shared_buffer=shared,
                prune_lm_head=prune_lm_head,
                with_past=with_past is not False,
            )
            return HFExport(
                done.task.name, done.model, done.programs, done.checks, destination, done.files,
                done.seconds, done, layout, done.quantization,
            )
        if isinstance(model_or_folder, (str, Path)):
            upcast = float32_graph(quantization, target)  # as the streamed path builds it
            loaded = load(Path(model_or_folder), task, dtype=torch.float32 if upcast else None)
        elif isinstance(model_or_folder, torch.nn.Module):
            loaded = from_model(model_or_folder, task)
        else:
            raise HFError(
                f"model_or_folder must be a folder path or a transformers model, not {type(model_or_folder).__name__}."
            )
        check_with_past(with_past is not False, loaded.task, prune_lm_head or shared)
        loaded = dataclasses.replace(loaded, prune_lm_head=prune_lm_head, with_past=with_past is not False)
        floating = {p.dtype for p in loaded.model.parameters() if p.is_floating_point()}
        if quantization is not None and floating - {torch.float32}:
            raise HFError(
                f"quantize= rewrites float32 MatMuls; the model's weights are {', '.join(sorted(map(str, floating)))}: "
                "convert it with model.float() first, or export its safetensors folder (stream=True / "
                "onnxport export --hf), which casts the weights to float32 as they stream."
            )
        if shared and loaded.task.kind != "causal-lm":
            raise HFError(
                f"kv_cache='shared' is for text-generation decoders, not task {loaded.task.name!r}."
            )
        tolerance = tolerance_for(atol, floating)
        if shared:
            check_full_attention(loaded.model.config)
        result = HFExport(loaded.task.name, loaded.model, {}, [], layout=layout)
        parts = hf_inputs.components(loaded)
        for part in parts:
            start = time.perf_counter()
            program = export_component(part, opset_version, optimize, target)
            if target == "onnxruntime":
                try:
                    optimize_for_onnxruntime(
                        program.model,
                        windows=wrappers.past_key_windows(part.module, loaded.model.config),
                        # positions from the lengths: exact for the shared graph's unpadded rows only
                        rotary_positions=wrappers.max_positions(loaded.model.config) if shared else None,
                        rotary_embedding=wrappers.max_positions(loaded.model.config),
                        shared_kv_buffer=shared,
                    )
                except InputError as e:
                    raise HFError(str(e)) from e
                program.release()  # the export's verification session ran the standard graph
            result.programs[part.name] = program
            name_total_sequence(program.model)
            result.seconds[part.name] = time.perf_counter() - start
            if validate and shared:
                result.checks += validate_shared(part, program, tolerance)
            elif validate:
                result.checks += validate_component(part, program, tolerance)
            if quantization is not None:
                optimize_for_onnxruntime(
                    program.model, fuse=False, quantize=quantization, report=result.quantization
                )
                program.release()  # a session opened before ran the float graph
            if float32_boundary(program.model):  # after the validation, which fed eager's dtypes: lossless
                program.release()  # a session of the program ran the bfloat16 boundary
        _raise_failed(result, validate)
        if destination is not None:
            result.files = _write(destination, result.programs, loaded, layout, shared)
            result.output_dir = destination
            if quantization is not None:
                report = destination / QUANTIZATION_REPORT
                report.write_text(
                    json.dumps(quantization_report(quantization, result.quantization), indent=1)
                )
                result.files.append(report.relative_to(destination))
        return result


QUANTIZE_PRESETS = {"int4": QuantizeOptions(bits=4), "int8": QuantizeOptions(bits=8)}


def quantize_options(quantize: str | QuantizeOptions | None) -> QuantizeOptions | None:
    """``"int4"``/``"int8"``/options/``None`` → options (``HFError`` for anything else)."""
    if quantize is None or isinstance(quantize, QuantizeOptions):
        return quantize
    if quantize not in QUANTIZE_PRESETS:
        raise HFError(f"quantize must be 'int4' or 'int8', not {quantize!r}.")
    return QUANTIZE_PRESETS[quantize]


DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def dtype_option(dtype: str | torch.dtype | None) -> torch.dtype | None:
    """``"float16"``/``"bfloat16"``/``"float32"``/a torch dtype/``None`` → a torch dtype or ``None``
    (``HFError`` for anything else)."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        dtype = DTYPES.get(dtype.removeprefix("torch."), dtype)
    if dtype not in DTYPES.values():
        raise HFError(f"dtype must be float16, bfloat16 or float32, not {dtype!r}.")
    return dtype  # type: ignore[return-value]


def validate_component(
    part: hf_inputs.Component, program: Any, atol: float | Tolerance | None
) -> list[OutputCheck]:
    """Every output of ``program`` vs eager on :data:`onnxport.hf.inputs.CHECK_SIZES`, in a
    transient session released afterwards (``ONNXProgram.initialize_inference_session``)."""
    checks = []
    program.initialize_inference_session(transient=True)
    try:
        for sizes in hf_inputs.CHECK_SIZES:
            feeds = part.make_inputs(sizes)
            actual = run_at_mean(program, (), feeds)  # draws at their mean, as in eager (onnxport.draws)
            expected = eager(part.module, feeds)
            checks += compare_outputs(
                (part.name, describe(feeds)), part.output_names, actual, expected, atol,
                eager_rerun(part.module, feeds),
            )
    finally:
        program.release()  # a kept session would hold a copy of the weights until the export returns
    return checks


def _export_pipeline(
    folder: Path, destination: Path | None, opset_version: int | None, optimize: bool, target: str | None,
    validation: tuple[bool, float | None],
) -> HFExport:
    """Every model component of a diffusers pipeline (:mod:`onnxport.hf.diffusion`), validated
    like the transformers tasks and written with the pipeline's configs."""
    validate, atol = validation
    parts = diffusion.pipeline_components(folder)
    result = HFExport(diffusion.TASK, None, {}, [], layout=hf_layout.PIPELINE)
    for part in parts:
        start = time.perf_counter()
        program = export_component(part, opset_version, optimize, target)
        if target == "onnxruntime":
            optimize_for_onnxruntime(program.model)
            program.release()
        result.programs[part.name] = program
        result.seconds[part.name] = time.perf_counter() - start
        if validate:
            result.checks += validate_component(part, program, atol)
    _raise_failed(result, validate)
    if destination is not None:

        def fill(staging: Path) -> list[Path]:
            files = []
            for name, program in result.programs.items():
                path = staging / hf_layout.model_path(name, hf_layout.PIPELINE)
                path.parent.mkdir(parents=True, exist_ok=True)
                program.save(path)
                files += sorted(p.relative_to(staging) for p in path.parent.glob(f"{path.name}*"))
            for source, target_path in diffusion.pipeline_files(folder, parts):
                (staging / target_path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(folder / source, staging / target_path)
                files.append(target_path)
            return files

        with staged(destination) as staging:  # a failure leaves nothing
            result.files = fill(staging)
        result.output_dir = destination
    return result


def _raise_failed(result: HFExport, validate: bool) -> None:
    """``VerificationError`` listing every failed check, when validation ran and one failed."""
    if not validate or result.passed:
        return
    failed = [c for c in result.checks if not c.passed]
    rows = "\n".join(
        f"  {c.component}/{c.output} ({c.inputs}): "
        + (c.comparison.summary() if c.comparison is not None else f"max abs diff {c.max_abs_diff:.3g}")
        for c in failed
    )
    raise VerificationError(f"ONNX outputs differ from eager PyTorch on fresh inputs:\n{rows}")


def _write(
    destination: Path,
    programs: dict[str, Any],
    loaded: LoadedModel,
    layout: str,
    shared_buffer: bool = False,
) -> list[Path]:
    """Write into a temporary sibling folder, then move it into place: a failure leaves nothing."""

    def fill(staging: Path) -> list[Path]:
        files = []
        for name, program in programs.items():
            path = staging / hf_layout.model_path(name, layout)
            path.parent.mkdir(parents=True, exist_ok=True)
            program.save(path)
            files += sorted(p.relative_to(staging) for p in path.parent.glob(f"{path.name}*"))
        if loaded.folder is not None:
            for rel in hf_inputs.folder_files(loaded.folder):
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(loaded.folder / rel, staging / rel)
                files.append(rel)
        else:
            loaded.model.config.save_pretrained(staging)
            files.append(Path("config.json"))
            generation = getattr(loaded.model, "generation_config", None)
            if generation is not None:
                generation.save_pretrained(staging)
                files.append(Path("generation_config.json"))
        if (staging / "config.json").is_file():
            hf_layout.flatten_text_config(staging / "config.json")
        if loaded.task.kind == "causal-lm" and genai_runs(programs["model"].model):
            files.append(
                _write_genai_config(staging, programs["model"], loaded, layout, shared_buffer)
            )
        return files

    with staged(destination) as staging:
        return fill(staging)


def _write_genai_config(
    folder: Path, program: Any, loaded: LoadedModel, layout: str, shared_buffer: bool
) -> Path:
    """``genai_config.json`` at the root of the export folder, naming the decoder by its path
    relative to it (``onnx/model.onnx`` in the hub layout)."""
    generation = getattr(loaded.model, "generation_config", None)
    content = genai_config(
        program.model,
        config_dict(loaded.model.config),
        generation.to_dict() if generation is not None else None,
        hf_layout.model_path("model", layout).as_posix(),
        past_present_share_buffer=shared_buffer,
    )
    return write_genai_config(folder, content).relative_to(folder)
