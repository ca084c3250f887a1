"""``onnxport.hf.export``: a local transformers folder (or model) → validated ONNX model(s) in a folder."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from onnxport._export import export as export_program
from onnxport.errors import HFError, VerificationError
from onnxport.hf import inputs as hf_inputs
from onnxport.hf.loading import LoadedModel, from_model, load
from onnxport.hf.validate import DEFAULT_ATOL, OutputCheck, compare_outputs, eager


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
    """

    task: str
    model: Any
    programs: dict[str, Any]
    checks: list[OutputCheck]
    output_dir: Path | None = None
    files: list[Path] = dataclasses.field(default_factory=list)
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)

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
) -> HFExport:
    """Export a Hugging Face model for a task, validate it and write it with its files.

    Args:
        model_or_folder: A local model folder (``config.json`` + safetensors) or a loaded
            transformers ``PreTrainedModel``.
        task: One of :data:`onnxport.hf.tasks.TASKS` (inferred from the architecture when ``None``).
        opset_version: The ONNX opset (onnxport's default when ``None``).
        with_past: For text-generation and encoder-decoders, export the KV-cache inputs/outputs.
            Only ``True`` (the default) is supported: one cache model serves the first step
            (empty past) and the later ones.
        output_dir: Folder to write ``*.onnx`` plus config and tokenizer files into. It must not
            exist or be empty; it is created only when everything succeeded.
        validate: Compare every output with eager PyTorch on fresh inputs (another batch, sequence
            and past length); a failure raises ``VerificationError`` and writes nothing.
        atol: ``None``: onnxport's tolerance table per dtype (``verify/compare.py``); a number:
            Optimum's rule, max abs difference ≤ ``atol``.
        optimize: Run onnxport's graph passes.

    Returns:
        An :class:`HFExport` with the programs, the validation rows and the files written.

    Raises:
        HFError: The folder has no usable config or weights, the architecture or task is unknown.
        VerificationError: An output differs from eager beyond ``atol``.
        OnnxportError: The export itself failed.
    """
    if with_past is False:
        raise HFError(
            "with_past=False is not supported: the cache model also runs the first step (empty past)."
        )
    destination = _check_output_dir(output_dir) if output_dir is not None else None
    if isinstance(model_or_folder, (str, Path)):
        loaded = load(Path(model_or_folder), task)
    elif isinstance(model_or_folder, torch.nn.Module):
        loaded = from_model(model_or_folder, task)
    else:
        raise HFError(
            f"model_or_folder must be a folder path or a transformers model, not {type(model_or_folder).__name__}."
        )
    result = HFExport(loaded.task.name, loaded.model, {}, [])
    parts = hf_inputs.components(loaded)
    for part in parts:
        start = time.perf_counter()
        result.programs[part.name] = _export_component(part, opset_version, optimize)
        result.seconds[part.name] = time.perf_counter() - start
        if validate:
            result.checks += validate_component(part, result.programs[part.name], atol)
    if validate and not result.passed:
        failed = [c for c in result.checks if not c.passed]
        rows = "\n".join(
            f"  {c.component}/{c.output} ({c.inputs}): "
            + (c.comparison.summary() if c.comparison is not None else f"max abs diff {c.max_abs_diff:.3g}")
            for c in failed
        )
        raise VerificationError(f"ONNX outputs differ from eager PyTorch on fresh inputs:\n{rows}")
    if destination is not None:
        result.files = _write(destination, result.programs, loaded)
        result.output_dir = destination
    return result


def _export_component(part: hf_inputs.Component, opset_version: int | None, optimize: bool) -> Any:
    return export_program(
        part.module,
        (),
        part.make_inputs(hf_inputs.EXPORT_SIZES),
        dynamic_shapes=part.dynamic_shapes,
        input_names=part.input_names,
        output_names=part.output_names,
        opset_version=opset_version,
        optimize=optimize,
    )


def validate_component(part: hf_inputs.Component, program: Any, atol: float | None) -> list[OutputCheck]:
    """Every output of ``program`` vs eager on :data:`onnxport.hf.inputs.CHECK_SIZES`."""
    checks = []
    for sizes in hf_inputs.CHECK_SIZES:
        feeds = part.make_inputs(sizes)
        actual = program(**feeds)
        expected = eager(part.module, feeds)
        checks += compare_outputs((part.name, describe(feeds)), part.output_names, actual, expected, atol)
    return checks


def describe(feeds: dict[str, Any]) -> str:
    """``input_ids 3x5, past 0``: the first input's shape and the past length (cache models)."""
    name, first = next(iter(feeds.items()))
    text = f"{name} {'x'.join(str(d) for d in first.shape)}"
    past = feeds.get("past_key_values")
    if past:
        text += f", past {past[0][0].shape[2]}"
    return text


def _check_output_dir(output_dir: str | Path) -> Path:
    path = Path(output_dir)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise HFError(f"Output folder {path} exists and is not empty; remove it or choose another.")
    if not path.parent.is_dir():
        raise HFError(f"Cannot write to {path}: folder {path.parent} does not exist.")
    return path


def _write(destination: Path, programs: dict[str, Any], loaded: LoadedModel) -> list[Path]:
    """Write into a temporary sibling folder, then move it into place: a failure leaves nothing."""
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    try:
        files = []
        for name, program in programs.items():
            program.save(staging / f"{name}.onnx")
            files += sorted(p.relative_to(staging) for p in staging.glob(f"{name}.onnx*"))
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
        if destination.exists():
            destination.rmdir()  # checked empty before the export
        staging.rename(destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return files
