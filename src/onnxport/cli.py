"""The ``onnxport`` command line: ``onnxport export SPEC -o OUT.onnx [options]``.

The command loads a SPEC (see :mod:`onnxport.cli_spec`), exports it with :func:`onnxport.export`,
verifies it in onnxruntime when asked, saves it, and prints a summary. Progress and errors go to
stderr, the summary to stdout. Exit codes: 0 success, 1 export failed (an
:class:`~onnxport.errors.OnnxportError`, printed without traceback), 2 bad command line or SPEC.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, NoReturn

import onnx_ir as ir
import typer
from rich.console import Console
from rich.text import Text

from onnxport.cli_spec import LoadedSpec, SpecError

EXIT_EXPORT_FAILED = 1
EXIT_USAGE = 2

app = typer.Typer(
    name="onnxport",
    help=(
        "Export PyTorch models to ONNX: torch.export capture, onnxport's own ATen-to-ONNX "
        "translation, verified in onnxruntime.\n\n"
        "Run `onnxport export --help` for the SPEC forms, `--dynamic` syntax and exit codes."
    ),
    rich_markup_mode="markdown",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _version_callback(value: bool) -> None:
    if value:
        from onnxport import __version__

        typer.echo(f"onnxport {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print onnxport's version and exit.",
            callback=_version_callback,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Export PyTorch models to ONNX with onnxport.

    Commands:

    * `export SPEC -o OUT.onnx`: export a model given by a factory file (`file.py:factory`) or a
      local Hugging Face model folder; see `onnxport export --help`.

    * `verify MODEL.onnx SPEC`: check an ONNX file and compare it with the PyTorch model
      (`--localize` names the first diverging node).

    * `inspect MODEL.onnx`: inputs/outputs, opsets, op histogram, weights, metadata.

    * `report SPEC`: export and write a markdown report of every step.

    Exit codes: 0 success, 1 the export failed (message in red, no traceback), 2 bad command line
    or SPEC.
    """


# -- progress --------------------------------------------------------------------------------
@dataclasses.dataclass
class Progress:
    """Shows which step runs: a spinner on a terminal, one plain line per step otherwise (CI)."""

    console: Console

    @contextlib.contextmanager
    def phase(self, text: str) -> Iterator[None]:
        """Show ``text`` while the block runs (on a terminal, then a check mark and the seconds)."""
        if not self.console.is_terminal:
            self.console.print(f"{text}...", markup=False, highlight=False)
            yield
            return
        start = time.perf_counter()
        with self.console.status(f"{text}…"):
            yield
        self.console.print(
            Text.assemble(("✓ ", "green"), f"{text} ({time.perf_counter() - start:.1f} s)")
        )


# -- export ----------------------------------------------------------------------------------
@dataclasses.dataclass
class ExportOptions:
    """The ``export`` command's options, as given."""

    output: Path
    opset: int | None
    dynamic: dict[str, dict[int, str]]
    verify: bool
    optimize: bool
    external_data: bool | None
    report: Path | None


@app.command("export")
def export_command(
    output: Annotated[
        Path,
        typer.Option(
            "--output",
            "-o",
            metavar="OUT.onnx",
            help="The ONNX file to write (its folder must exist).",
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
            help="Write the weights to OUT.onnx.data beside the "
            "model (default: only when they exceed the 2 GB protobuf limit).",
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
            help="Export a local Hugging Face model folder for a task (onnxport.hf, docs/hf.md): "
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
) -> None:
    """Export a PyTorch model to ONNX.

    **SPEC** is one of:

    * `path/to/file.py:factory`: a Python file and a function in it, called with no arguments.
      It returns `(model, args)`, `(model, args, kwargs)` or `(model, args, kwargs, dynamic_shapes)`:
      an `nn.Module`, a tuple of example inputs, a dict of keyword example inputs and the
      `dynamic_shapes` as for `onnxport.export` (e.g. `{"x": {0: "batch"}}`).

    * a local Hugging Face model folder (`config.json` and `*.safetensors`), loaded offline with
      `transformers.AutoModel.from_pretrained`. Text models get `input_ids` (batch 2, sequence 16),
      `attention_mask` (ones) and, if the config has `type_vocab_size`, `token_type_ids` (zeros),
      each with dynamic axes `0=batch,1=sequence`. Vision models (config has `image_size` and
      `num_channels`) get `pixel_values` (2, C, H, W) with `0=batch`.

    **--dynamic** `NAME:AXIS=DIM[,AXIS=DIM...]` makes axes of input NAME symbolic, named DIM in the
    ONNX graph: `--dynamic input_ids:0=batch,1=sequence`.

    On success a summary lists the graph inputs and outputs with their shapes, the node count, the
    weight size, the export time and the files written (with `--verify`, the max abs diff of every
    output). A failed export leaves no output file.

    **Exit codes**: 0 success; 1 the export failed (error in red, no traceback); 2 bad command
    line, SPEC or `--dynamic`.

    **Examples**:

    * `onnxport export model.py:make -o model.onnx --dynamic x:0=batch --verify`

    * `onnxport export ./all-MiniLM-L6-v2 -o minilm.onnx --opset 18 --report report.md`

    * `onnxport export --hf ./llama -o llama-onnx/ --target onnxruntime --quantize int4`
    """
    from onnxport.cli_spec import parse_dynamic_options

    if hf is not None or spec is None:
        from onnxport.cli_hf import hf_command

        quantization = {
            "bits": {"int4": 4, "int8": 8}.get(quantize or "", 0) or quantize,
            "block_size": block_size,
            "symmetric": not asymmetric,
            "accuracy_level": accuracy_level,
            "lm_head": quantize_lm_head,
        }
        return hf_command(
            spec, hf, task, output, opset, optimize, verify,
            target=target, quantization=quantization if quantize is not None else None,
        )  # fmt: skip
    try:
        parsed_dynamic = parse_dynamic_options(dynamic or [])
    except SpecError as e:
        raise typer.BadParameter(str(e), param_hint="'--dynamic'") from e
    if report is not None and not report.parent.is_dir():
        raise typer.BadParameter(f"folder {report.parent} does not exist.", param_hint="'--report'")
    options = ExportOptions(output, opset, parsed_dynamic, verify, optimize, external_data, report)
    out = Console(soft_wrap=True, highlight=False)
    err = Console(stderr=True, soft_wrap=True, highlight=False)
    run_export(spec, options, out, err)


def run_export(spec: str, options: ExportOptions, out: Console, err: Console) -> None:
    """Load ``spec``, export, verify, save and print the summary; exit 1/2 on failure.

    Args:
        spec: The SPEC argument.
        options: The command's options.
        out: Where the summary goes.
        err: Where progress and errors go.

    Raises:
        typer.Exit: With code 1 (export failed) or 2 (bad SPEC or ``--dynamic`` input name).
    """
    from onnxport.cli_spec import apply_dynamic, load_spec
    from onnxport.errors import OnnxportError

    progress = Progress(err)
    try:
        _check_destination(options.output)
        with progress.phase(f"loading {spec}"):
            loaded = load_spec(spec)
        dynamic_shapes = apply_dynamic(loaded, options.dynamic)
    except SpecError as e:
        _fail(err, str(e), EXIT_USAGE)
    except OnnxportError as e:
        _fail(err, str(e), EXIT_EXPORT_FAILED)
    try:
        program, data_file = _export_and_save(loaded, dynamic_shapes, options, progress)
    except OnnxportError as e:
        hint = (
            "" if options.report else "\nRun again with --report PATH for a report of every step."
        )
        _fail(err, f"{e}{hint}", EXIT_EXPORT_FAILED)
    print_summary(out, program, loaded, options, data_file)


def _check_destination(path: Path) -> None:
    """Fail before the (possibly long) export when the output cannot be written."""
    from onnxport.errors import SaveError

    if path.is_dir():
        raise SaveError(
            f"Cannot save the ONNX model to {path}: it is a directory; give a file path such as {path / 'model.onnx'}."
        )
    folder = path.parent
    if not folder.is_dir():
        raise SaveError(
            f"Cannot save the ONNX model to {path}: folder {folder} does not exist. Create it first."
        )


def _export_and_save(
    loaded: LoadedSpec, dynamic_shapes: Any, options: ExportOptions, progress: Progress
) -> tuple[Any, Path | None]:
    """Export, verify and save; the report (if asked) is rewritten with every step, even on failure.

    Returns:
        The ONNXProgram and the external data file (``None`` when the weights are inline).
    """
    import onnxport
    from onnxport.program import PROTOBUF_LIMIT, initializer_bytes

    with progress.phase("capturing and translating"):
        program = onnxport.export(
            loaded.model,
            loaded.args,
            loaded.kwargs,
            dynamic_shapes=dynamic_shapes,
            opset_version=options.opset,
            optimize=options.optimize,
            report=options.report or False,
        )
    external = options.external_data
    if external is None:
        external = initializer_bytes(program.model) > PROTOBUF_LIMIT
    try:
        if options.verify:
            with progress.phase("verifying"):
                _verify(program, loaded)
        with progress.phase("saving"), program.status.step("save"):
            program.save(options.output, external_data=external)
    finally:
        if options.report:
            from onnxport.report.markdown import write_report

            write_report(options.report, loaded.model, program.status, program)
    data_file = options.output.with_name(f"{options.output.name}.data") if external else None
    return program, data_file


def _verify(program: Any, loaded: LoadedSpec) -> None:
    """Check and compare with eager as ``onnxport.export(verify=True)`` does, recording the
    checker, onnxruntime load and accuracy steps.

    Raises:
        ModelCheckError: onnx.checker or onnxruntime refused the model.
        VerificationError: An output differs beyond tolerance (the first diverging node named).
    """
    from onnxport.verify.api import verify_export

    verify_export(program, loaded.model, loaded.args, loaded.kwargs, program.status)


def _fail(err: Console, message: str, code: int) -> NoReturn:
    err.print(Text(f"Error: {message}", style="bold red"))
    raise typer.Exit(code)


# -- summary ---------------------------------------------------------------------------------
def format_dtype(dtype: ir.DataType | None) -> str:
    """``int64``, ``float32``, ... (numpy names)."""
    if dtype is None:
        return "?"
    try:
        return str(dtype.numpy().name)
    except (TypeError, ValueError):
        return dtype.name.lower()


def format_shape(shape: ir.Shape | None) -> str:
    """``[batch, sequence, 384]``: symbolic dims by name, ``?`` when unknown."""
    if shape is None:
        return "?"
    dims = [str(d) if isinstance(d, int) else (d.value or "?") for d in shape]
    return "[" + ", ".join(dims) + "]"


def format_bytes(size: int) -> str:
    """Decimal units, as Hugging Face shows model sizes: ``90.9 MB``."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def _value_rows(values: Sequence[ir.Value]) -> list[tuple[str, str, str]]:
    return [(v.name or "?", format_dtype(v.dtype), format_shape(v.shape)) for v in values]


def _table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Rows as aligned, space-separated columns (plain text, stable in logs and tests)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip()
        for row in rows
    ]


def summary_lines(
    program: Any, loaded: LoadedSpec, options: ExportOptions, data_file: Path | None
) -> list[str]:
    """The summary printed after a successful export, one string per line."""
    from onnxport.program import initializer_bytes

    model = program.model
    status = program.status
    nodes = sum(1 for _ in ir.traversal.RecursiveGraphIterator(model.graph))
    steps = ", ".join(f"{s.name} {s.seconds:.2f} s" for s in status.steps)
    lines = [f"Exported {loaded.description}", "Inputs:"]
    lines += _table(_value_rows(model.graph.inputs))
    lines += ["Outputs:", *_table(_value_rows(model.graph.outputs))]
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
    if data_file is not None:
        facts.append(("External data:", str(data_file)))
    if options.report is not None:
        facts.append(("Report:", str(options.report)))
    lines += _table(facts, indent="")
    if status.verification is not None:
        lines += ["Verification (onnxruntime vs eager PyTorch):"]
        lines += _table(
            [
                (o.name, f"max abs diff {o.max_abs_diff:.3g}", "pass" if o.passed else "FAIL")
                for o in status.verification.outputs
            ]
        )
    return lines


def print_summary(
    out: Console, program: Any, loaded: LoadedSpec, options: ExportOptions, data_file: Path | None
) -> None:
    """Print :func:`summary_lines`, the first line in green."""
    lines = summary_lines(program, loaded, options, data_file)
    out.print(Text(lines[0], style="bold green"))
    for line in lines[1:]:
        out.print(Text(line))


def _register_commands() -> None:
    """The commands that live in their own modules (imported here, after ``app`` exists)."""
    from onnxport.cli_inspect import inspect_command
    from onnxport.cli_verify import report_command, verify_command

    app.command("verify")(verify_command)
    app.command("inspect")(inspect_command)
    app.command("report")(report_command)


_register_commands()


def main() -> None:
    """Entry point of the ``onnxport`` script and ``python -m onnxport``."""
    app()


__all__ = ["app", "main"]
