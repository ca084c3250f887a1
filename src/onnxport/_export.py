"""The orchestrator: ``export()`` validates its arguments into one frozen :class:`ExportOptions`
and runs the stages in order, each taking the previous stage's product, filling an
:class:`ExportStatus` as it goes:

    inputs → capture (ExportedProgram + InputSpec) → decompose → pre-flight → translate (ir.Model)
    → passes → ONNXProgram → verify → save;  the report is written last, on success and on failure.

The CLI (``cli/``) and the Hugging Face exporter (``hf/``) call :func:`export`; nothing else runs
these stages. The step checklist follows torch.onnx's ``torch/onnx/_internal/exporter/_core.py``
(capture → decompose → translate → optimize → verify).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import onnx.helper
import onnx_ir as ir
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from onnxport import runtime, weights
from onnxport.capture import decomp
from onnxport.capture import dynamic_shapes as dyn
from onnxport.capture.specialization import check_specialized, warn_narrowed
from onnxport.capture.strategies import capture, capture_sizes_above_one, source_line
from onnxport.capture.torchscript import from_torchscript, is_torchscript
from onnxport.errors import CaptureError, DynamicShapesError, InputError, OnnxportError
from onnxport.metadata import (
    KEY_GRAPH_SIGNATURE,
    KEY_INPUT_KIND,
    KEY_INPUT_PERSISTENT,
    KEY_RANGE_CONSTRAINTS,
    stamp_complex_outputs,
)
from onnxport.ops import registry_for_export
from onnxport.options import ExportOptions
from onnxport.passes import optimize as run_passes
from onnxport.passes.half_compute import HalfComputePass
from onnxport.passes.module_functions import ModuleFunctionsPass
from onnxport.passes.opset_conversion import convert_opset
from onnxport.passes.pad_max_pool import PadMaxPoolPass
from onnxport.report.markdown import write_report
from onnxport.status import ExportStatus, ProgressCallback, Step
from onnxport.torch_onnx_args import torch_onnx_arguments
from onnxport.translate import graph as graph_mod
from onnxport.translate import preflight
from onnxport.translate.onnxscript_table import translations_from_table
from onnxport.translate.opset_check import check_opset as check_graph_opset
from onnxport.translate.registry import Registry
from onnxport.verify.api import ONNXProgram, verify_export
from onnxport.verify.runtime_check import check_runtime
from onnxport.version import __version__
from onnxport.weights.save import check_weights_present


def _normalize_inputs(args: Any, kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if isinstance(args, torch.Tensor):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    elif not isinstance(args, tuple):
        raise InputError(f"args must be a tuple of example inputs (or one tensor), got {type(args).__name__}.")
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, Mapping):
        raise InputError(f"kwargs must be a dict of keyword example inputs, got {type(kwargs).__name__}.")
    return args, dict(kwargs)


def _output_names(ep: ExportedProgram, n_user: int) -> list[str] | None:
    """Names from the output pytree when it is keyed (dicts, ModelOutput): ``last_hidden_state``."""
    spec = ep.call_spec.out_spec
    if spec is None:
        return None
    try:
        dummy = torch.utils._pytree.tree_unflatten(list(range(spec.num_leaves)), spec)
        paths, _ = torch.utils._pytree.tree_flatten_with_path(dummy)
    except Exception:  # an output container pytree cannot rebuild: keep FX names
        return None
    names = []
    for path, _ in paths:
        keys = [getattr(k, "key", getattr(k, "name", None)) for k in path]
        str_keys = [k for k in keys if isinstance(k, str)]
        if not keys or len(str_keys) != len(keys):
            return None
        names.append(".".join(str_keys))
    return names if len(names) == n_user else None


def export(
    model: torch.nn.Module | ExportedProgram,
    args: Any = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    f: str | os.PathLike[str] | BinaryIO | None = None,
    dynamic_shapes: Any = None,
    dynamic_axes: Mapping[str, Any] | None = None,
    dynamic: bool = False,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    opset_version: int | None = None,
    optimize: bool = True,
    verify: bool = False,
    check_runtime: bool = True,
    report: bool | str | os.PathLike[str] = False,
    export_params: bool = True,
    external_data: bool | None = None,
    registry: Registry | None = None,
    custom_translations: Any = None,
    modules_as_functions: Any = None,
    half_precision_compute: str | None = "float32",
    verbose: bool | None = None,
    progress: ProgressCallback | None = None,
    dynamo: bool = True,
    keep_initializers_as_inputs: bool = False,
    custom_translation_table: Any = None,
    profile: bool = False,
    dump_exported_program: bool = False,
    artifacts_dir: str | os.PathLike[str] = ".",
    export_modules_as_functions: Any = False,
    training: Any = None,
    operator_export_type: Any = None,
    do_constant_folding: bool = True,
    custom_opsets: Mapping[str, int] | None = None,
    autograd_inlining: bool = True,
) -> ONNXProgram:
    """Export a PyTorch model to ONNX; parameters mean what they mean in ``torch.onnx.export``.

    Args:
        model: An ``nn.Module`` or a ``torch.export.ExportedProgram``.
        args: Positional example inputs (a tuple, or one tensor). Nested tuples/lists/dicts are
            flattened as torch.export does.
        kwargs: Keyword example inputs.
        f: If given, the ONNX file to write (as ``ONNXProgram.save(f)``): a path, or a binary
            file object such as ``io.BytesIO`` (one protobuf, at most 2 GB).
        dynamic_shapes: As for ``torch.export.export`` (``Dim``, ``Dim.AUTO``/``Dim.DYNAMIC``), or
            strings naming the dims: ``{"x": {0: "batch"}}``. Named dims keep their names in ONNX.
            A dict may be keyed by forward-parameter names or by ``input_names``.
        dynamic_axes: The TorchScript exporter's form, ``{"input_ids": {0: "batch", 1: "seq"}}``
            or ``{"input_ids": [0, 1]}``, converted for you.
        dynamic: Make every axis of every input dynamic (``Dim.AUTO``) except those the model fixes.
        input_names: Graph input names, one per tensor input (default: forward-signature names
            with pytree paths, ``input_dict.tensor_x``).
        output_names: Graph output names (default: output keys, or the FX node names).
        opset_version: ONNX opset, 18..26 (default 23; 21 for a program that draws random numbers,
            the newest opset whose random ops onnxruntime 1.31 runs: ``options.RANDOM_OPSET``).
            Below 18 the model is translated at 18 and converted with ``onnx.version_converter``;
            if that fails, :class:`OpsetError`.
        optimize: Run onnxport's graph passes (cleanup, constant folding, fusions).
        verify: Run the model in onnxruntime on the example inputs and compare with eager.
        check_runtime: Before returning or saving, run the model in onnxruntime on the example
            inputs and, for a dynamic model, on inputs of other sizes after checking the guards
            torch.export recorded (``verify/runtime_check.py``); skipped with a notice in the
            status when onnxruntime is missing or the weights are absent or too big for RAM.
        report: Write a markdown report (``True``: ``onnxport_report_<Model>.md`` in the working
            folder, or a path). A report that cannot be written only warns (``UserWarning``): the
            export's own result or error is kept.
        export_params: With ``f``: include the weights in the saved file.
        external_data: With ``f``: ``True`` writes the weights to ``<f>.data`` beside the model
            (streamed, and the runtime check runs on the written files), ``False`` keeps one
            protobuf (at most 2 GB). Default ``None``: ``True`` for a path, as
            ``torch.onnx.export``'s default ``external_data=True``; one protobuf for a file object.
        registry: Translations to use instead of :func:`onnxport.default_registry`.
        custom_translations: ``{torch.ops.ns.op.overload: fn}`` or a :class:`Registry`, used for
            this export only and preferred over onnxport's own translations.
        modules_as_functions: Module types (classes, or class names such as
            ``"LlamaDecoderLayer"``) whose instances become calls to ONNX local functions, one
            function per distinct body, shared by identical blocks.
        half_precision_compute: ``"float32"`` (default): every bfloat16/float16 node that
            onnxruntime's CPU provider has no kernel for in that dtype (most bfloat16 compute ops:
            Add, MatMul, Softmax, ReduceSum, Where, ...; a few float16 ones) runs in float32 between
            Casts, rounding its result once as eager does; nodes with a kernel stay as they are.
            ``None``: leave every node in its dtype, for runtimes with native half kernels.
        verbose: Accepted for torch.onnx compatibility; see ``progress``.
        progress: Called with each step's name as it starts (``capture``, ``translate``, ...;
            the CLI shows them).
        dynamo, keep_initializers_as_inputs, custom_translation_table, profile,
            dump_exported_program, artifacts_dir, export_modules_as_functions, training,
            operator_export_type, do_constant_folding, custom_opsets, autograd_inlining:
            ``torch.onnx.export``'s, so that a call written for it runs unchanged; how each maps
            (or is ignored, with a warning when it asks for something else) is in
            :mod:`onnxport.torch_onnx_args`.

    Returns:
        The :class:`ONNXProgram`.

    Raises:
        InputError: ``model``/``args``/``kwargs``/names are invalid.
        CaptureError: torch.export failed with every strategy, or the re-trace that decomposes
            the captured program failed.
        UnsupportedOpError: Ops without translation (all of them listed).
        TranslationError: A translation failed (op, FX node and source line named).
        OpsetError: The opset cannot be honoured.
        ModelCheckError: ``verify=True`` and onnx.checker or onnxruntime refused the model.
        RuntimeCheckError: ``check_runtime=True`` and onnxruntime refused to run a node (the ONNX
            node, its FX node and source line named; nothing is saved).
        DynamicShapesError: ``check_runtime=True`` and a guard torch.export recorded fails at
            other sizes (the model would only hold for the example's branch).
        SaveError: ``f`` cannot be written.
        VerificationError: ``verify=True`` and outputs differ beyond tolerance.
    """
    del verbose
    if isinstance(kwargs, (str, os.PathLike)):  # torch.onnx.export(model, args, f) call style
        f, kwargs = kwargs, None
    compat = torch_onnx_arguments(
        type(model).__name__, report=report, modules_as_functions=modules_as_functions, dynamo=dynamo,
        keep_initializers_as_inputs=keep_initializers_as_inputs, profile=profile, dump_exported_program=dump_exported_program, artifacts_dir=artifacts_dir,
        export_modules_as_functions=export_modules_as_functions,
        deprecated={"training": training, "operator_export_type": operator_export_type,
                    "do_constant_folding": do_constant_folding, "custom_opsets": custom_opsets,
                    "autograd_inlining": autograd_inlining},
    )
    report = compat.report
    status = ExportStatus(progress=progress)
    program: ONNXProgram | None = None
    try:
        translations = registry_for_export(registry, custom_translations)
        if custom_translation_table:
            translations = registry_for_export(translations, translations_from_table(custom_translation_table))
        options = ExportOptions.create(
            opset_version, registry=translations,
            dynamic_shapes=dynamic_shapes, dynamic_axes=dynamic_axes, dynamic=dynamic,
            input_names=input_names, output_names=output_names, optimize=optimize, verify=verify,
            check_runtime=check_runtime, f=f,
            export_params=export_params, external_data=external_data, report=report,
            modules_as_functions=compat.modules_as_functions, half_precision_compute=half_precision_compute,
            keep_initializers_as_inputs=compat.keep_initializers_as_inputs,
            dump_exported_program=compat.dump_exported_program,
        )
        program = run(model, args, kwargs, options, status)
        return program
    finally:
        if report:
            _write_report_safely(report, model, status, program)


def _write_report_safely(report: Any, model: Any, status: ExportStatus, program: ONNXProgram | None) -> None:
    """Write the report without letting its failure hide or replace the export's own outcome: a
    failing report (missing folder, unwritable path, a formatting bug) is a ``UserWarning``."""
    try:
        write_report(report, model, status, program)
    except Exception as e:  # any failure of the report only warns; the export's result or error stands
        warnings.warn(
            f"onnxport could not write the report {report!r}: {type(e).__name__}: {e}. "
            "The export's result is unaffected; give report= a path in an existing, writable folder.",
            UserWarning,
            stacklevel=3,
        )


def run(model: Any, args: Any, kwargs: Any, options: ExportOptions, status: ExportStatus) -> ONNXProgram:
    """Run every stage for ``options``; each stage reads the previous product (see module doc).

    Raises:
        OnnxportError: The first stage that failed (recorded in ``status``).
    """
    args, kwargs = _normalize_inputs(args, kwargs)
    if isinstance(model, torch.nn.Module) and not is_torchscript(model) and model.training and _mode_matters(model):
        warnings.warn(  # as torch.onnx.export does (torch/onnx/_internal/exporter/_compat.py)
            "The model is in training mode (model.training is True): the graph runs dropout and batch "
            "norm as in training (random masks, the batch's statistics). Call model.eval() before "
            "export for inference.",
            UserWarning,
            stacklevel=3,
        )
    ep, spec = capture_stage(model, args, kwargs, options, status)
    if options.dump_exported_program is not None:
        _dump_exported_program(ep, options.dump_exported_program)
    ep = decompose_stage(ep, options, status)
    if status.decomposed and isinstance(model, torch.nn.Module):  # torch's re-trace may specialize too
        check_specialized(ep, spec.leaves, dyn.tensor_leaves(dyn.bind_inputs(model.forward, args, kwargs)))
    options = options.for_random_ops(decomp.draws_random(ep))
    model_ir = translate_stage(ep, spec, options, status)
    table = weights_stage(model_ir, model)
    model_ir = passes_stage(model_ir, options, status)
    program = ONNXProgram(model_ir, ep, status, weights=table)
    status.program = program
    checks_saved = options.check_runtime and checks_saved_files(program, options)
    if options.check_runtime and not checks_saved:
        runtime_stage(program, model, (args, kwargs), options, status)
    if options.verify:
        check_weights_present(model_ir, "verify the model against eager PyTorch")
        verify_stage(program, model, (args, kwargs), status)
    if options.f is not None:
        save_stage(program, options, status, check=(model, (args, kwargs)) if checks_saved else None)
    return program


def _mode_matters(model: torch.nn.Module) -> bool:
    """A submodule computes differently in training mode: dropout with p > 0, a norm with running
    statistics, or a transformers/diffusers module (their attention and dropout read
    ``self.training``)."""
    for module in model.modules():
        if isinstance(module, torch.nn.modules.dropout._DropoutNd) and module.p > 0:
            return True
        if isinstance(module, (torch.nn.modules.batchnorm._BatchNorm, torch.nn.modules.instancenorm._InstanceNorm)) \
                and module.track_running_stats:
            return True
        if type(module).__module__.startswith(("transformers.", "diffusers.")):
            return True
    return False


def _declares_dynamic(options: ExportOptions) -> bool:
    """Whether the export asks for any dynamic dim."""
    leaves = torch.utils._pytree.tree_leaves(options.dynamic_shapes)
    return bool(options.dynamic or options.dynamic_axes or any(leaf is not None for leaf in leaves))


def capture_stage(
    model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], options: ExportOptions, status: ExportStatus
) -> tuple[ExportedProgram, dyn.InputSpec]:
    """torch.export with fallbacks (``capture/strategies.py``); an ExportedProgram passes through; a
    TorchScript module or function is converted at the example's shapes (``capture/torchscript.py``).

    Raises:
        InputError: ``model`` is neither an ``nn.Module`` nor an ExportedProgram, or bad names.
        CaptureError: Every strategy failed (constraint violations explained per input and axis), or
            PyTorch's TorchScript converter did.
        DynamicShapesError: An axis named dynamic was specialized by the model (input, axis and
            source line named), or the model is TorchScript and dims are declared dynamic.
    """
    if is_torchscript(model):
        with status.step("capture"):
            model = from_torchscript(model, args, kwargs, _declares_dynamic(options))
    if not isinstance(model, (torch.nn.Module, ExportedProgram)):
        raise InputError(
            f"model must be a torch.nn.Module or a torch.export.ExportedProgram, got {type(model).__name__}. "
            "Wrap a function in an nn.Module whose forward calls it."
        )
    args, kwargs = _inputs_to_meta(model, args, kwargs)
    spec = dyn.input_spec(model, args, kwargs, options)
    if isinstance(model, ExportedProgram):
        ep = model
    else:
        with status.step("capture"):
            try:
                ep = capture(model, args, kwargs, spec.export_shapes, status.capture_attempts)
            except CaptureError as e:
                explained = dyn.explain_violation(e, spec.leaves, status.capture_attempts)
                ep = _capture_relaxed(model, args, kwargs, spec, status, explained)
            examples = dyn.tensor_leaves(dyn.bind_inputs(model.forward, args, kwargs))
            check_specialized(ep, spec.leaves, examples)
            warn_narrowed(ep, spec.leaves, spec.export_shapes)
    status.captured_program = ep
    return ep, spec


def _capture_relaxed(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], spec: dyn.InputSpec,
                     status: ExportStatus, error: Exception) -> ExportedProgram:
    """After a constraint violation on ``Dim`` objects (``error``, explained per input and axis),
    capture again with ``Dim.DYNAMIC`` hints over the same ranges (:func:`dyn.as_hints`), which
    take the range the code allows, and warn with the violation; the runtime check then runs the
    graph where the code's guards are false. Raises ``error`` when that does not apply or fails."""
    relaxed = dyn.as_hints(spec.export_shapes) if isinstance(error, DynamicShapesError) else None
    if relaxed is None:
        above_one = None
        if isinstance(error, DynamicShapesError):  # derived dims: torch.export's rule for sizes of 1
            above_one = capture_sizes_above_one(model, args, kwargs, spec.export_shapes, status.capture_attempts)
        if above_one is None:
            raise error
        return above_one
    try:
        ep = capture(model, args, kwargs, relaxed, status.capture_attempts)
    except CaptureError:
        raise error from None
    warnings.warn(
        f"onnxport captured the model with Dim.DYNAMIC in place of the Dim objects of dynamic_shapes, "
        f"whose ranges the code narrows ({str(error).splitlines()[1].strip(' -')} ...). The ONNX "
        "dims stay symbolic; the runtime check runs the graph where the code's guards are false.",
        UserWarning,
        stacklevel=5,  # the user's onnxport.export call
    )
    return ep


def weights_stage(model_ir: ir.Model, model: Any) -> weights.WeightTable:
    """Initializers → :class:`onnxport.weights.WeightTensor` over one slot per module weight (the
    torch tensor, no copy; missing for meta/fake tensors); tied weights merged into one."""
    table = weights.adopt(model_ir, _required_weight)
    if isinstance(model, torch.nn.Module):
        weights.tie(model_ir, table, _tied_groups(model))
    return table


def decompose_stage(ep: ExportedProgram, options: ExportOptions, status: ExportStatus) -> ExportedProgram:
    """``run_decompositions`` minus the translated ops, or the fast path (``capture/decomp.py``).

    Raises:
        CaptureError: torch's re-trace failed (its exception is the cause; source line named).
    """
    translated = options.registry.targets() | graph_mod.STRUCTURAL_TARGETS
    with status.step("decompose"):
        try:
            ep, status.decomposed = decomp.decompose(ep, translated)
        except OnnxportError:
            raise
        except Exception as e:  # torch's re-trace of the captured program; never a raw torch error
            line = source_line(e)
            where = f"\nSource:\n  {line}" if line else ""
            first = (str(e).strip().splitlines() or [""])[0][:300]
            raise CaptureError(
                f"torch.export captured the model, but re-tracing the program to decompose its ops "
                f"(ExportedProgram.run_decompositions) failed: {type(e).__name__}: {first}{where}\n"
                "This happens when the capture specialized on the example (draft export, "
                "data-dependent shapes): make the dims involved static in dynamic_shapes, or rewrite "
                "the data-dependent code with torch._check / torch.cond.",
                source_line=line,
            ) from e
    status.decomposed_program = ep
    return ep


def translate_stage(
    ep: ExportedProgram, spec: dyn.InputSpec, options: ExportOptions, status: ExportStatus
) -> ir.Model:
    """Pre-flight (every op has a translation), then one walk over the FX graph → ``ir.Model``.

    Raises:
        InputError: No output, or an output that is not a tensor or number.
        UnsupportedOpsError: Ops without translation (all listed, with source lines).
        TranslationError: A translation failed.
        OpsetError: An emitted op does not exist at the target opset.
    """
    registry: Registry = options.registry
    target_opset = options.target_opset
    with status.step("pre-flight"):
        preflight.check_outputs(ep)
        status.unsupported = preflight.find_unsupported(ep, registry, target_opset)
        if status.unsupported:
            raise preflight.unsupported_ops_error(status.unsupported, registry)
    with status.step("translate"):
        tensor_inputs = [n for n in _user_input_nodes(ep) if isinstance(n.meta.get("val"), torch.Tensor)]
        input_map, dim_names = spec.graph_names(tensor_inputs)
        translator = graph_mod.GraphTranslator(ep, registry, target_opset, graph_mod.DimNamer(dim_names))
        n_user_out = sum(1 for s in ep.graph_signature.output_specs if s.kind.name == "USER_OUTPUT")
        graph = translator.translate(input_map, spec.output_names or _output_names(ep, n_user_out))
        check_graph_opset(graph, target_opset)
        graph.metadata_props[KEY_GRAPH_SIGNATURE] = str(ep.graph_signature)
        graph.metadata_props[KEY_RANGE_CONSTRAINTS] = str(ep.range_constraints)
        return ir.Model(graph, ir_version=_ir_version(target_opset), producer_name="onnxport",
                        producer_version=__version__)


def passes_stage(model_ir: ir.Model, options: ExportOptions, status: ExportStatus) -> ir.Model:
    """Half-precision compute, the optimizing passes (or only modules-as-functions), the guard of
    zero Pads before MaxPool (``passes/pad_max_pool.py``, whatever ``optimize`` says) and the
    conversion to an opset below 18 (``passes/``)."""
    if options.half_precision_compute is not None:
        with status.step("half-precision compute"):
            HalfComputePass()(model_ir)
    if options.optimize:
        with status.step("optimize"):
            run_passes(model_ir, options.modules_as_functions)
            # identity elimination may merge a complex output with its real view: restamp per output
            stamp_complex_outputs(model_ir.graph)
    elif options.modules_as_functions:
        with status.step("modules as functions"):
            ModuleFunctionsPass(options.modules_as_functions)(model_ir)
    if options.opset >= 18:  # Pad's axes input is Pad-18's
        PadMaxPoolPass()(model_ir)
    if options.opset != options.target_opset:
        with status.step(f"convert to opset {options.opset}"):
            model_ir = convert_opset(model_ir, options.opset)
    return model_ir


# The runtime check's session is kept for later calls to the program unless the weights reach this
# size, from which onnxruntime memory-maps them from a file (runtime.SESSION_FILE_MIN_BYTES): a
# kept session holds the weights' mapped pages and its pre-packed copy of the MatMul weights, +0.8x
# to +1.0x the weights after the export of bert-base and GPT-2 (bench/api_memory.py, session 38).
# Such a model's check opens its session without pre-packing, transient (its mapped pages leave the
# resident set as it runs: onnxport.mapped_pages) and released after; the program's first call
# opens its own, as torch.onnx's ONNXProgram does.
KEEP_SESSION_MAX_BYTES = runtime.SESSION_FILE_MIN_BYTES


def verify_stage(program: ONNXProgram, model: Any, inputs: tuple[tuple[Any, ...], dict[str, Any]],
                 status: ExportStatus) -> None:
    """Checks, onnxruntime load and accuracy on the example inputs (``verify/api.py``); the
    checks and accuracy are recorded as steps. When the weights reach
    :data:`KEEP_SESSION_MAX_BYTES`, the verification's session opens without pre-packing and is
    released afterwards, as the runtime check's.

    Raises:
        ModelCheckError: onnx.checker or onnxruntime refused the model.
        VerificationError: An output differs beyond tolerance (first diverging node named).
    """
    if status.progress is not None:
        status.progress("verify")
    args, kwargs = inputs
    released = runtime.initializer_bytes(program.model) >= KEEP_SESSION_MAX_BYTES
    try:
        verify_export(program, model, args, kwargs, status, prepack=not released)
    finally:
        if released:
            program.release()  # a later call opens a session that pre-packs


def checks_saved_files(program: ONNXProgram, options: ExportOptions) -> bool:
    """Whether the runtime check runs on the files ``save_stage`` writes, before they replace the
    destination, instead of on a temporary copy of the weights: a path ``f`` saved with external
    data (which onnxruntime memory-maps), the weights stored as initializers only, and no
    verification (which runs before the save)."""
    return (isinstance(options.f, (str, os.PathLike)) and options.export_params and not options.verify
            and not options.keep_initializers_as_inputs and options.half_precision_compute is not None
            and weights.save.uses_external_data(program.model, saved_external_data(options)))


def saved_external_data(options: ExportOptions) -> bool | None:
    """``export(external_data=...)`` for the save: ``None`` (the default) is ``True`` for a path,
    as ``torch.onnx.export``'s default ``external_data=True`` (torch 2.13), and the 2 GB rule of
    ``ONNXProgram.save`` for a file object, which holds one protobuf."""
    if options.external_data is None and isinstance(options.f, (str, os.PathLike)):
        return True
    return options.external_data


def runtime_stage(program: ONNXProgram, model: Any, inputs: tuple[tuple[Any, ...], dict[str, Any]],
                  options: ExportOptions, status: ExportStatus, *, saved: Path | None = None) -> None:
    """"Never a model onnxruntime cannot run": ``verify/runtime_check.check_runtime`` on the
    example inputs and on inputs of other sizes, in the program's own session (reused when the
    program is called later, unless the weights reach :data:`KEEP_SESSION_MAX_BYTES`: then the
    session opens without pre-packing the weights and is released after the check). ``saved``: the
    complete model :func:`save_stage` wrote under its temporary name, checked in a session of its
    own (no pre-packing, released after). A skip is recorded as a passed step with the reason; the check is
    skipped for ``half_precision_compute=None``, which targets runtimes with native half kernels
    (onnxruntime's CPU provider has none for many bfloat16/float16 ops).

    Raises:
        RuntimeCheckError: onnxruntime refused to run a node.
        DynamicShapesError: A recorded guard fails at other sizes.
    """
    args, kwargs = inputs
    with status.step("onnxruntime run") as step:
        if options.half_precision_compute is None:
            step.detail = "skipped: half_precision_compute=None targets runtimes with native half kernels"
            return
        released = saved is not None or runtime.initializer_bytes(program.model) >= KEEP_SESSION_MAX_BYTES

        def open_session() -> None:  # the weights' mapped pages leave the resident set as it runs
            if saved is None:
                program.initialize_inference_session(transient=True)
                return
            program.release()
            program._session = runtime.open_saved(saved, transient=True)

        try:
            result = check_runtime(program, args, kwargs, model, open_session=open_session if released else None)
        finally:
            if saved is not None:
                program.release()  # the session maps the files being saved: a later call opens its own
        step.detail = f"skipped: {result.skipped}" if result.skipped else "; ".join(result.ran)
        if saved is not None:
            step.detail += " (on the files being saved, before they replaced the destination)"
        elif result.skipped is None and released:
            program.release()  # a later call opens a session that pre-packs
            step.detail += f" (session released: weights of {KEEP_SESSION_MAX_BYTES >> 20} MiB or more)"


def save_stage(program: ONNXProgram, options: ExportOptions, status: ExportStatus,
               check: tuple[Any, tuple[tuple[Any, ...], dict[str, Any]]] | None = None) -> None:
    """``ONNXProgram.save`` (streamed, atomic; external data when graph + weights near 2 GiB unless
    forced); the files written go to ``status.files``. ``check`` (model, inputs): the runtime check
    runs on the written files before they replace the destination (:func:`checks_saved_files`): the
    weights are written once, and a refused model never reaches the destination. Its step is
    recorded before the save's, whose seconds exclude it.

    Raises:
        SaveError: The destination cannot be written.
        RuntimeCheckError, DynamicShapesError, ModelCheckError: ``check`` and the check failed
            (nothing saved, the previous model intact).
    """
    assert options.f is not None
    refused: list[BaseException] = []

    def before_commit(path: Path) -> None:
        assert check is not None
        try:
            runtime_stage(program, check[0], check[1], options, status, saved=path)
        except BaseException as e:
            refused.append(e)
            raise

    try:
        with status.step("save") as step:
            status.files = program.save(options.f, include_initializers=options.export_params,
                                        keep_initializers_as_inputs=options.keep_initializers_as_inputs,
                                        external_data=saved_external_data(options),
                                        before_commit=before_commit if check is not None else None)
    except BaseException as e:
        if refused and e is refused[0]:  # the check refused the model, the save itself did not fail
            step.ok, step.detail = True, "not committed: the runtime check refused the model"
        raise
    finally:
        if check is not None and status.steps[-1] is not step:  # the check's step, nested in the save
            run = status.steps.pop()
            step.seconds = max(0.0, step.seconds - run.seconds)
            status.steps.insert(status.steps.index(step), run)


def _dump_exported_program(ep: ExportedProgram, path: os.PathLike[str]) -> None:
    """``dump_exported_program=True``: ``torch.export.save`` of the captured program, a debugging
    artefact whose failure only warns (``UserWarning``), as a report's does."""
    try:
        torch.export.save(ep, path)
    except Exception as e:  # any failure of the dump only warns; the export goes on
        warnings.warn(
            f"onnxport could not save the ExportedProgram to {os.fspath(path)!r}: {type(e).__name__}: {e}. "
            "The export goes on; give artifacts_dir= an existing, writable folder.",
            UserWarning,
            stacklevel=2,
        )


def _required_weight(value: ir.Value) -> bool:
    """Whether ``apply_weights`` must supply this initializer: a parameter or persistent buffer
    (what ``module.state_dict()`` holds)."""
    kind = value.metadata_props.get(KEY_INPUT_KIND)
    persistent = value.metadata_props.get(KEY_INPUT_PERSISTENT, "True") == "True"
    return kind == InputKind.PARAMETER.name or (kind == InputKind.BUFFER.name and persistent)


def _tied_groups(module: torch.nn.Module) -> list[list[str]]:
    """The names of each parameter/buffer known under several names (tied weights)."""
    groups: dict[int, list[str]] = {}
    named = [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]
    for name, tensor in named:
        groups.setdefault(id(tensor), []).append(name)
    return [names for names in groups.values() if len(names) > 1]


def _inputs_to_meta(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Real example inputs of a model on the meta device, moved to the meta device (shapes and
    dtypes are all torch.export needs; eager would fail on mixed devices)."""
    if not isinstance(model, torch.nn.Module):
        return args, kwargs
    tensors = [*model.parameters(), *model.buffers()]
    if not tensors or not any(t.is_meta for t in tensors):
        return args, kwargs

    def to_meta(x: Any) -> Any:
        return x.to("meta") if isinstance(x, torch.Tensor) and not x.is_meta else x

    return torch.utils._pytree.tree_map(to_meta, args), torch.utils._pytree.tree_map(to_meta, kwargs)


def _user_input_nodes(ep: ExportedProgram) -> list[torch.fx.Node]:
    user = {s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT}
    return [n for n in ep.graph.nodes if n.op == "placeholder" and n.name in user]


def _ir_version(opset: int) -> int:
    """The lowest IR version that supports ``opset`` (onnx.helper.VERSION_TABLE)."""
    return int(onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", opset)]))


__all__ = ["ExportOptions", "ExportStatus", "OnnxportError", "Step", "export", "run"]
