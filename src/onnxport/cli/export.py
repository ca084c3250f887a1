"""``onnxport export SPEC -o OUT.onnx [options]`` and ``onnxport export --hf FOLDER -o OUT/``.

A SPEC (:mod:`onnxport.cli.spec`) goes through :func:`onnxport.export`, which captures, translates,
verifies (``--verify``), saves and writes the report (``--report``) in one run; this module only
parses the options, shows the orchestrator's steps as progress and prints the summary. A Hugging
Face folder (given with ``--hf`` or as the SPEC) goes through :func:`onnxport.hf.export`.
"""

from __future__ import annotations

import collections
import dataclasses
import math
from pathlib import Path
from typing import Annotated, Any

import onnx_ir as ir
import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.text import Text

from onnxport import hf
from onnxport._export import export
from onnxport.cli._common import (
    EXIT_EXPORT_FAILED,
    EXIT_USAGE,
    Progress,
    consoles,
    fail,
    format_bytes,
    text_table,
    value_rows,
)
from onnxport.cli.spec import LoadedSpec, SpecError, apply_dynamic, load_spec, parse_dynamic_options
from onnxport.errors import HFError, InputError, OnnxportError, SaveError
from onnxport.hf import hub
from onnxport.hf.layout import DEFAULT_LAYOUT, model_path, usage_lines
from onnxport.hf.streamed import DEFAULT_MEMORY_FRACTION
from onnxport.passes.ort import QuantizeOptions
from onnxport.passes.ort.kernels import MICROSOFT
from onnxport.runtime import initializer_bytes


@dataclasses.dataclass(frozen=True)
class CommandOptions:
    """The ``export`` command's options, as given (``dynamic`` parsed)."""

    output: Path
    opset: int | None
    dynamic: dict[str, dict[int, str]]
    verify: bool
    optimize: bool
    external_data: bool | None
    report: Path | None
    check_runtime: bool = True


def export_command(
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            metavar="OUT.onnx",
            help="The ONNX file to write (its folder must exist); for a Hugging Face folder, the output folder.",
            show_default=False,
        ),
    ],
    spec: Annotated[
        str | None,
        typer.Argument(
            metavar="SPEC",
            help="`path/to/file.py:factory` or a local Hugging Face model folder (see above).",
            show_default=False,
        ),
    ] = None,
    opset: Annotated[
        int | None,
        typer.Option(
            "--opset",
            metavar="N",
            help="Target ONNX opset (default 23; below 18 through the ONNX version converter).",
            show_default=False,
        ),
    ] = None,
    dynamic: Annotated[
        list[str] | None,
        typer.Option(
            "--dynamic",
            metavar="NAME:AXES",
            help="Dynamic axes of one input as NAME:AXIS=DIM[,AXIS=DIM...] (NAME a forward() parameter), "
            "e.g. `x:0=batch`. Repeatable; replaces the SPEC's dynamic shapes for that input.",
            show_default=False,
        ),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Run the model in onnxruntime on the example inputs and compare "
            "with eager PyTorch; a mismatch fails the export (no file is written).",
        ),
    ] = False,
    check_runtime: Annotated[
        bool,
        typer.Option(
            "--check-runtime/--no-check-runtime",
            help="Run the model in onnxruntime on the example inputs and on inputs of other sizes "
            "before saving; a refused node fails the export (no file is written).",
        ),
    ] = True,
    optimize: Annotated[
        bool,
        typer.Option(
            "--optimize/--no-optimize",
            help="Run onnxport's graph passes (folding, cleanup, fusions).",
        ),
    ] = True,
    external_data: Annotated[
        bool | None,
        typer.Option(
            "--external-data/--no-external-data",
            help="Write the weights to OUT.onnx.data beside the model (the default, as "
            "torch.onnx.export); --no-external-data keeps one file of at most 2 GB.",
            show_default=False,
        ),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            metavar="PATH",
            help="Write a markdown report of every step (also on failure).",
            show_default=False,
        ),
    ] = None,
    hf: Annotated[
        Path | None,
        typer.Option(
            "--hf",
            metavar="FOLDER",
            help="Export a local Hugging Face model folder, or a Hub id owner/name[@revision] (its snapshot in "
            "the Hugging Face cache, downloaded unless HF_HUB_OFFLINE=1), for a task (onnxport.hf, docs/hf.md): "
            "-o is then an output folder, written with the ONNX model(s), config and tokenizer files.",
            show_default=False,
        ),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option(
            "--task",
            metavar="TASK",
            help="With --hf: feature-extraction, fill-mask, text-classification, token-classification, "
            "question-answering, image-classification, text-generation, text2text-generation, "
            "automatic-speech-recognition (default: from the architecture).",
            show_default=False,
        ),
    ] = None,
    layout: Annotated[
        str,
        typer.Option(
            "--layout",
            metavar="LAYOUT",
            help="With --hf: hub (config and tokenizer at the root, graphs under onnx/, as "
            "transformers.js and Optimum expect) or flat (one folder).",
        ),
    ] = "hub",
    target: Annotated[
        str,
        typer.Option(
            "--target",
            metavar="TARGET",
            help="With --hf: `onnx` (standard ONNX) or `onnxruntime` (adds onnxruntime contrib-op "
            "fusions: GroupQueryAttention, SkipSimplifiedLayerNormalization).",
        ),
    ] = "onnx",
    quantize: Annotated[
        str | None,
        typer.Option(
            "--quantize",
            metavar="int4|int8",
            help="With --hf: weight-only quantization of the MatMul weights to onnxruntime's "
            "MatMulNBits while they are written; writes quantization_report.json.",
            show_default=False,
        ),
    ] = None,
    block_size: Annotated[
        int,
        typer.Option("--block-size", help="--quantize block size along K: 16, 32, 64, 128 or 256."),
    ] = 32,
    asymmetric: Annotated[
        bool,
        typer.Option(
            "--asymmetric", help="--quantize with stored zero points (default symmetric)."
        ),
    ] = False,
    accuracy_level: Annotated[
        int,
        typer.Option(
            "--accuracy-level",
            help="MatMulNBits accuracy_level: 0 unset, 1 fp32, 2 fp16, 3 bf16, 4 int8 activations.",
        ),
    ] = 4,
    quantize_lm_head: Annotated[
        bool,
        typer.Option(
            "--quantize-lm-head/--no-quantize-lm-head", help="--quantize the LM head too."
        ),
    ] = True,
    quantize_embeddings: Annotated[
        str,
        typer.Option(
            "--quantize-embeddings",
            metavar="tied|all|none",
            help="--quantize the embedding lookups (GatherBlockQuantized): `tied` (default) when "
            "the table is the LM head's and shares its quantized bytes, `all` every table, `none`.",
        ),
    ] = "tied",
    kv_cache: Annotated[
        str,
        typer.Option(
            "--kv-cache",
            metavar="concat|shared",
            help="With --hf --target onnxruntime: `shared` writes the in-place KV cache graph "
            "onnxruntime-genai runs with past_present_share_buffer (rotary fused, positions "
            "from attention_mask; no left padding); `concat` (default) grows the cache.",
        ),
    ] = "concat",
    memory_fraction: Annotated[
        float,
        typer.Option(
            "--memory-fraction",
            min=0.0,
            help="With --hf (safetensors folders): validate the whole model when the checkpoint "
            "takes at most this fraction of the available memory, else a 2-layer slice with its "
            "real weights (0 always validates a slice).",
            show_default="1/3",
        ),
    ] = DEFAULT_MEMORY_FRACTION,
    prune_lm_head: Annotated[
        bool,
        typer.Option(
            "--prune-lm-head",
            help="With --hf, text generation: logits of each row's last real token only ([batch_size, "
            "1, vocab_size]; the row from attention_mask, right padding included), the LM head run on "
            "one row at prefill, as the model builder's prune_lm_head=true; onnxruntime-genai reads "
            "them, scoring every position cannot.",
        ),
    ] = False,
    no_past: Annotated[
        bool,
        typer.Option(
            "--no-past",
            help="With --hf, text generation: the decoder without its KV cache (the whole sequence → "
            "logits), Optimum's text-generation task without -with-past.",
        ),
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="With --hf: replace a non-empty output folder, once the new export is complete and "
            "validated (a failed export leaves it as it was). A SPEC's output file is always replaced.",
        ),
    ] = False,
    validate: Annotated[
        bool | None,
        typer.Option(
            "--validate/--no-validate",
            help="With --hf: compare every output with eager PyTorch on fresh inputs before the "
            "folder is written (default). --no-validate skips it (as onnxruntime-genai's model "
            "builder does): faster, and nothing checks the graph. A SPEC uses --verify.",
            show_default=False,
        ),
    ] = None,
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            metavar="float16|bfloat16|float32",
            help="With --hf (safetensors folders): export the graph in this dtype, the weights "
            "cast as they stream (default: the checkpoint's; float32 for a bf16/fp16 checkpoint "
            "with --quantize or --target onnxruntime, whose MatMulNBits and fusions are float32); "
            "validated against eager float32 with that dtype's tolerances.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Export a PyTorch model to ONNX.

    **SPEC** is one of:

    * `path/to/file.py:factory`: a Python file and a function in it, called with no arguments.
      It returns `(model, args)`, `(model, args, kwargs)` or `(model, args, kwargs, dynamic_shapes)`:
      an `nn.Module`, a tuple of example inputs, a dict of keyword example inputs and the
      `dynamic_shapes` as for `onnxport.export` (e.g. `{"x": {0: "batch"}}`).

    * a local Hugging Face model folder (`config.json` and `*.safetensors`): the same as
      `--hf FOLDER` (see docs/hf.md): -o is then an output folder, written with the ONNX model(s),
      config and tokenizer files; every output is validated on fresh inputs.

    **--dynamic** `NAME:AXIS=DIM[,AXIS=DIM...]` makes axes of input NAME symbolic, named DIM in the
    ONNX graph: `--dynamic input_ids:0=batch,1=sequence`.

    On success a summary lists the graph inputs and outputs with their shapes, the node count, the
    weight size, the export time and the files written (with `--verify`, the max abs diff of every
    output). A failed export leaves no output file.

    **Exit codes**: 0 success; 1 the export failed (error in red, no traceback); 2 bad command
    line, SPEC or `--dynamic`.

    **Examples**:

    * `onnxport export model.py:make -o model.onnx --dynamic x:0=batch --verify`

    * `onnxport export model.py:make -o model.onnx --opset 18 --report report.md`

    * `onnxport export ./all-MiniLM-L6-v2 -o minilm/` (the same as `--hf ./all-MiniLM-L6-v2`)

    * `onnxport export --hf ./llama -o llama-ort/ --target onnxruntime --quantize int4`

    * `onnxport export --hf ./llama -o llama-genai/ --target onnxruntime --kv-cache shared`
    """
    folder = (
        hf if hf is not None else (Path(spec) if spec is not None and Path(spec).is_dir() else None)
    )
    if folder is not None:
        _check_hf_options(spec if hf is not None else None, dynamic, report, external_data)
        quantization = None
        if quantize is not None:
            quantization = {
                "bits": {"int4": 4, "int8": 8}.get(quantize, quantize),
                "block_size": block_size,
                "symmetric": not asymmetric,
                "accuracy_level": accuracy_level,
                "lm_head": quantize_lm_head,
                "embeddings": quantize_embeddings,
            }
        return run_hf_export(
            folder, task, output, opset, optimize, layout=layout, target=target,
            quantization=quantization, kv_cache=kv_cache, dtype=dtype, validate=validate is not False,
            overwrite=overwrite, prune_lm_head=prune_lm_head, memory_fraction=memory_fraction, with_past=not no_past,
        )  # fmt: skip
    if spec is None:
        raise typer.BadParameter("give a SPEC or --hf FOLDER.", param_hint="'SPEC'")
    if validate is not None:
        raise typer.BadParameter(
            "--validate/--no-validate is for a Hugging Face folder; a SPEC export is checked "
            "with --verify.", param_hint="'--no-validate'",
        )  # fmt: skip
    if prune_lm_head or no_past:
        flag = "--prune-lm-head" if prune_lm_head else "--no-past"
        raise typer.BadParameter(
            f"{flag} is for a Hugging Face text-generation folder (--hf); a SPEC's graph returns "
            "what its model returns.", param_hint=f"'{flag}'",
        )  # fmt: skip
    if memory_fraction != DEFAULT_MEMORY_FRACTION:
        raise typer.BadParameter(
            "--memory-fraction is for a Hugging Face safetensors folder (--hf): it chooses what the "
            "streamed export validates.", param_hint="'--memory-fraction'",
        )  # fmt: skip
    try:
        parsed_dynamic = parse_dynamic_options(dynamic or [])
    except SpecError as e:
        raise typer.BadParameter(str(e), param_hint="'--dynamic'") from e
    if report is not None and not report.parent.is_dir():
        raise typer.BadParameter(f"folder {report.parent} does not exist.", param_hint="'--report'")
    options = CommandOptions(output, opset, parsed_dynamic, verify, optimize, external_data, report, check_runtime)
    out, err = consoles()
    run_export(spec, options, out, err)


def _check_hf_options(spec: str | None, dynamic: Any, report: Any, external_data: Any) -> None:
    """Usage errors of the Hugging Face spelling (the hf exporter fixes inputs and files itself)."""
    if spec is not None:
        raise typer.BadParameter(
            "give either a SPEC or --hf FOLDER, not both.", param_hint="'--hf'"
        )
    given = [
        name
        for name, value in (
            ("--dynamic", dynamic),
            ("--report", report),
            ("--external-data", external_data),
        )
        if value is not None
    ]
    if given:
        raise typer.BadParameter(
            f"{', '.join(given)} cannot be used with a Hugging Face folder: its inputs, dynamic axes "
            "and files are set by the task (docs/hf.md).",
            param_hint=f"'{given[0]}'",
        )


def run_export(spec: str, options: CommandOptions, out: Console, err: Console) -> None:
    """Load ``spec``, run the export (verify, save and report included) and print the summary.

    Args:
        spec: The SPEC argument.
        options: The command's options.
        out: Where the summary goes.
        err: Where progress and errors go.

    Raises:
        typer.Exit: With code 1 (export failed) or 2 (bad SPEC or ``--dynamic`` input name).
    """
    progress = Progress(err)
    try:
        _check_destination(options.output)
        with progress.phase(f"loading {spec}"):
            loaded = load_spec(spec)
        dynamic_shapes = apply_dynamic(loaded, options.dynamic)
    except SpecError as e:
        fail(err, str(e), EXIT_USAGE)
    except OnnxportError as e:
        fail(err, str(e), EXIT_EXPORT_FAILED)
    try:
        program = export(
            loaded.model,
            loaded.args,
            loaded.kwargs,
            f=options.output,
            dynamic_shapes=dynamic_shapes,
            input_names=loaded.input_names,
            output_names=loaded.output_names,
            opset_version=options.opset,
            optimize=options.optimize,
            verify=options.verify,
            check_runtime=options.check_runtime,
            external_data=options.external_data,
            report=options.report or False,
            progress=progress,
        )
    except OnnxportError as e:
        progress.close()
        hint = (
            "" if options.report else "\nRun again with --report PATH for a report of every step."
        )
        fail(err, f"{e}{hint}", EXIT_EXPORT_FAILED)
    progress.close()
    print_summary(out, program, loaded, options)


def _check_destination(path: Path) -> None:
    """Fail before the (possibly long) export when the output cannot be written."""
    if path.is_dir():
        raise SaveError(
            f"Cannot save the ONNX model to {path}: it is a directory; give a file path such as {path / 'model.onnx'}."
        )
    folder = path.parent
    if not folder.is_dir():
        raise SaveError(
            f"Cannot save the ONNX model to {path}: folder {folder} does not exist. Create it first."
        )


# -- summary ---------------------------------------------------------------------------------
def summary_lines(program: Any, loaded: LoadedSpec, options: CommandOptions) -> list[str]:
    """The summary printed after a successful export, one string per line."""
    model = program.model
    status = program.status
    nodes = sum(1 for _ in ir.traversal.RecursiveGraphIterator(model.graph))
    steps = ", ".join(f"{s.name} {s.seconds:.2f} s" for s in status.steps)
    lines = [f"Exported {loaded.description}", "Inputs:"]
    lines += text_table(value_rows(model.graph.inputs))
    lines += ["Outputs:", *text_table(value_rows(model.graph.outputs))]
    facts = [
        ("Opset:", str(model.opset_imports.get("", "?"))),
        ("Nodes:", str(nodes)),
        (
            "Weights:",
            f"{format_bytes(initializer_bytes(model))} in {len(model.graph.initializers)} initializers",
        ),
        ("Export time:", f"{status.total_seconds:.2f} s ({steps})"),
        ("Output:", str(options.output)),
    ]
    for data_file in status.files[1:]:
        facts.append(("External data:", str(data_file)))
    if options.report is not None:
        facts.append(("Report:", str(options.report)))
    lines += text_table(facts, indent="")
    if status.verification is not None:
        lines += ["Verification (onnxruntime vs eager PyTorch):"]
        lines += text_table(
            [
                (o.name, f"max abs diff {o.max_abs_diff:.3g}", "pass" if o.passed else "FAIL")
                for o in status.verification.outputs
            ]
        )
    return lines


def print_summary(out: Console, program: Any, loaded: LoadedSpec, options: CommandOptions) -> None:
    """Print :func:`summary_lines`, the first line in green."""
    lines = summary_lines(program, loaded, options)
    out.print(Text(lines[0], style="bold green"))
    for line in lines[1:]:
        out.print(Text(line))


# -- Hugging Face folder ------------------------------------------------------------------------
HALF = (ir.DataType.FLOAT16, ir.DataType.BFLOAT16)


def target_line(graph: ir.Graph) -> str:
    """What ``--target onnxruntime`` left in ``graph``: its ``com.microsoft`` ops and their counts,
    or that no fusion applied, and why when the graph computes in half precision (the fusions
    match float32 graphs only: ``docs/hf.md``)."""
    counts = collections.Counter(node.op_type for node in graph.all_nodes() if node.domain == MICROSOFT)
    if counts:
        return "  onnxruntime target: " + ", ".join(f"{op} {n}" for op, n in sorted(counts.items()))
    half = {v.dtype.name.lower() for v in (*graph.inputs, *graph.outputs) if v.dtype in HALF}
    why = (f"the fusions match float32 graphs only and this one is {', '.join(sorted(half))}"
           if half else "no decoder block, attention or quantized weight matched the fusions")  # fmt: skip
    return f"  onnxruntime target: no contrib op, standard ONNX only ({why})"


def run_hf_export(
    folder: Path,
    task: str | None,
    output_dir: Path,
    opset: int | None,
    optimize: bool,
    *,
    layout: str = DEFAULT_LAYOUT,
    target: str = "onnx",
    quantization: dict[str, Any] | None = None,
    kv_cache: str = "concat",
    dtype: str | None = None,
    validate: bool = True,
    overwrite: bool = False,
    prune_lm_head: bool = False,
    memory_fraction: float = DEFAULT_MEMORY_FRACTION,
    with_past: bool = True,
) -> None:
    """Export ``folder`` for ``task`` into ``output_dir`` with :func:`onnxport.hf.export` (which
    validates every output on fresh inputs unless ``validate`` is false, and replaces a non-empty
    ``output_dir`` only with ``overwrite``) and print the summary.

    ``memory_fraction`` (streamed path) sets when the whole model is validated rather than a
    2-layer slice. ``quantization`` holds :class:`onnxport.passes.ort.QuantizeOptions` fields (``bits`` may be an
    unknown string, reported as a usage error). A folder with safetensors weights takes the
    streamed path (meta-device model, weights streamed, cast and quantized as they are written)
    whatever the target, quantization and dtype; others are loaded by transformers.

    Raises:
        typer.Exit: 2 for a bad folder/task/output folder/target/quantization/dtype (``HFError``,
            ``InputError``), 1 when the export or the validation failed.
    """
    out, err = consoles()
    progress = Progress(err)
    label = f"exporting {folder} ({task or 'task from the architecture'})"
    try:
        quantize = None
        if quantization is not None:
            if quantization["bits"] not in (4, 8):
                raise InputError(f"--quantize must be int4 or int8, not {quantization['bits']!r}.")
            quantize = QuantizeOptions(**quantization)
        folder = hub.resolve(folder)
        if streams(folder):
            with WeightBar(err, label) as bar:
                result = hf.export(
                    folder, task, opset_version=opset, output_dir=output_dir, optimize=optimize,
                    stream=True, progress=bar, layout=layout, target=target, quantize=quantize,
                    dtype=dtype, kv_cache=kv_cache, validate=validate, overwrite=overwrite,
                    prune_lm_head=prune_lm_head, memory_fraction=memory_fraction, with_past=with_past,
                )
        else:
            with progress.phase(label):
                result = hf.export(
                    folder, task, opset_version=opset, output_dir=output_dir, optimize=optimize,
                    layout=layout, target=target, quantize=quantize, kv_cache=kv_cache, dtype=dtype,
                    validate=validate, overwrite=overwrite, prune_lm_head=prune_lm_head, with_past=with_past,
                )
    except (HFError, InputError) as e:
        fail(err, str(e), EXIT_USAGE)
    except OnnxportError as e:
        fail(err, str(e), EXIT_EXPORT_FAILED)
    for line in hf_summary_lines(result, target):
        out.print(line, markup=False, highlight=False)


def streams(folder: Path) -> bool:
    """True when the CLI takes :func:`onnxport.hf.export`'s streamed path (safetensors weights)."""
    return folder.is_dir() and any(folder.glob("*.safetensors"))


class WeightBar:
    """A rich progress display for the streamed export: a spinner while the graph is exported,
    then a bar over the tensors and bytes written, then the validation (implements
    :class:`onnxport.hf.streamed.WeightProgress`). Off a terminal, one line per phase."""

    def __init__(self, console: Console, label: str) -> None:
        self.console = console
        self.display = RichProgress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(binary_units=True),
            TextColumn("{task.fields[tensors]}"),
            TimeElapsedColumn(),
            console=console,
        )
        self.task = self.display.add_task(label, total=None, tensors="")
        self.label = label
        self.count = self.done = 0

    def __enter__(self) -> WeightBar:
        if self.console.is_terminal:
            self.display.start()
        else:
            self.console.print(f"{self.label}...", markup=False, highlight=False)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.console.is_terminal:
            self.display.stop()

    def begin(self, count: int, nbytes: int) -> None:
        self.count, self.done = count, 0
        self.display.update(
            self.task, description="streaming weights", total=nbytes, completed=0, tensors=f"0/{count} tensors"
        )
        if not self.console.is_terminal:
            self.console.print(
                f"streaming {count} tensors ({format_bytes(nbytes)}) into external data...",
                markup=False, highlight=False,
            )

    def advance(self, name: str, nbytes: int) -> None:
        self.done += 1
        self.display.update(self.task, advance=nbytes, tensors=f"{self.done}/{self.count} tensors")

    def finish(self) -> None:
        self.display.update(self.task, description="validating against eager")
        if not self.console.is_terminal:
            self.console.print("validating against eager...", markup=False, highlight=False)


def hf_summary_lines(result: Any, target: str = "onnx") -> list[str]:
    """The summary of an :class:`onnxport.hf.HFExport`, one string per line (``target``: the
    ``--target`` it was exported for; ``onnxruntime`` adds the contrib ops each graph holds,
    :func:`target_line`)."""
    what = type(result.model).__name__ if result.model is not None else "the diffusers pipeline's models"
    lines = [f"Exported {what} for {result.task}"]
    for name, program in result.programs.items():
        graph = program.model.graph
        lines += [
            f"{model_path(name, result.layout)} ({result.seconds.get(name, 0.0):.1f} s, opset "
            f"{program.model.opset_imports.get('', '?')}, {len(graph)} nodes)",
            *([target_line(graph)] if target == "onnxruntime" else []),
            "  Inputs:",
            *text_table(value_rows(graph.inputs), indent="    "),
            "  Outputs:",
            *text_table(value_rows(graph.outputs), indent="    "),
        ]
    judged = [c for c in result.checks if math.isfinite(c.atol)]
    runs = [c for c in result.checks if not math.isfinite(c.atol)]  # quantized files: shapes, dtypes
    if judged:
        worst = max(c.max_abs_diff for c in judged)
        verdict = "pass" if all(c.passed for c in judged) else "FAIL"
        first = judged[0]
        rule = (
            f"rtol {first.comparison.rtol:g}, atol {first.atol:g}"
            if first.comparison
            else f"atol {first.atol:g}"
        )
        lines.append(
            f"Validation (onnxruntime vs eager on fresh inputs, {rule}): "
            f"{verdict}, {len(judged)} outputs, max abs diff {worst:.3g}"
        )
    if not result.checks and result.streamed is None:
        lines.append("Validation: off (--no-validate): nothing compared the graph with eager")
    if runs:
        lines.append(
            f"Quantized model run in onnxruntime (eager's shapes and dtypes, finite values; values "
            f"not judged): {'pass' if all(c.passed for c in runs) else 'FAIL'}, {len(runs)} outputs, "
            f"max abs diff {max(c.max_abs_diff for c in runs):.3g} vs eager float"
        )
    if result.checks:
        lines += text_table(
            [
                (
                    f"{c.component}/{c.output}",
                    c.inputs,
                    f"max abs diff {c.max_abs_diff:.3g}",
                    "pass" if c.passed else "FAIL",
                )
                for c in result.checks
            ]
        )
    streamed = result.streamed
    if streamed is not None:
        dtype = str(streamed.dtype).removeprefix("torch.")
        source = str(streamed.checkpoint_dtype).removeprefix("torch.")
        lines.append(
            f"Weights: streamed from the checkpoint ({format_bytes(streamed.weight_bytes)} written, graph in {dtype}, "
            f"checkpoint {format_bytes(streamed.checkpoint_bytes)}"
            + (f" in {source}" if streamed.checkpoint_dtype not in (None, streamed.dtype) else "")
            + f"); validation: {streamed.validation}"
            + (
                " (the graph before quantization: a copy of those first layers with their real weights"
                " was exported the same way, unquantized, and compared with eager)"
                if streamed.validation.startswith("slice") and "quantization" in streamed.validation
                else " (the model is too large to run in memory: a copy of those first layers with their real"
                " weights was exported the same way and compared with eager)"
                if streamed.validation.startswith("slice")
                else ""
            )
        )
    if result.output_dir is not None:
        lines.append(f"Output: {result.output_dir} ({', '.join(str(f) for f in result.files)})")
        genai = any(f.name == "genai_config.json" for f in result.files)
        lines += usage_lines(result.output_dir, result.task, result.layout, genai)
    return lines


__all__ = ["CommandOptions", "export_command", "hf_summary_lines", "run_export", "summary_lines", "target_line"]
