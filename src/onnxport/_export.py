"""The export pipeline: capture → decompose → translate → optimize → (verify) → ONNXProgram."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import onnx_ir as ir
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from onnxport import weights
from onnxport.capture import decomp
from onnxport.capture import dynamic_shapes as dyn
from onnxport.capture.strategies import Attempt, capture
from onnxport.errors import CaptureError, InputError, OnnxportError
from onnxport.program import ONNXProgram
from onnxport.translate import graph as graph_mod
from onnxport.translate import preflight
from onnxport.translate.opset_check import check_opset as check_graph_opset
from onnxport.translate.registry import MIN_OPSET, Registry, check_opset, registry_for_export
from onnxport.weights.save import check_weights_present


@dataclasses.dataclass
class Step:
    """One pipeline step: its name, seconds taken, and what went wrong if it failed."""

    name: str
    seconds: float = 0.0
    ok: bool = True
    detail: str = ""


@dataclasses.dataclass
class ExportStatus:
    """What happened during one export, step by step (read by the report and the CLI)."""

    steps: list[Step] = dataclasses.field(default_factory=list)
    capture_attempts: list[Attempt] = dataclasses.field(default_factory=list)
    decomposed: bool = False
    error: BaseException | None = None
    verification: Any = None
    # For the report: the programs before/after decomposition and the pre-flight findings.
    captured_program: ExportedProgram | None = None
    decomposed_program: ExportedProgram | None = None
    unsupported: list[Any] = dataclasses.field(default_factory=list)
    program: Any = None  # the ONNXProgram once built (the report reads it when verification fails)

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[Step]:
        step = Step(name)
        self.steps.append(step)
        start = time.perf_counter()
        try:
            yield step
        except BaseException as e:
            step.ok = False
            step.detail = f"{type(e).__name__}: {e}"
            self.error = e
            raise
        finally:
            step.seconds = time.perf_counter() - start

    @property
    def total_seconds(self) -> float:
        return sum(s.seconds for s in self.steps)


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
    f: str | os.PathLike[str] | None = None,
    dynamic_shapes: Any = None,
    dynamic_axes: Mapping[str, Any] | None = None,
    dynamic: bool = False,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    opset_version: int | None = None,
    optimize: bool = True,
    verify: bool = False,
    report: bool | str | os.PathLike[str] = False,
    export_params: bool = True,
    external_data: bool | None = None,
    registry: Registry | None = None,
    custom_translations: Any = None,
    modules_as_functions: Any = None,
    half_precision_compute: str | None = "float32",
    verbose: bool | None = None,
) -> ONNXProgram:
    """Export a PyTorch model to ONNX; parameters mean what they mean in ``torch.onnx.export``.

    Args:
        model: An ``nn.Module`` or a ``torch.export.ExportedProgram``.
        args: Positional example inputs (a tuple, or one tensor). Nested tuples/lists/dicts are
            flattened as torch.export does.
        kwargs: Keyword example inputs.
        f: If given, the ONNX file to write (as ``ONNXProgram.save(f)``).
        dynamic_shapes: As for ``torch.export.export`` (``Dim``, ``Dim.AUTO``/``Dim.DYNAMIC``), or
            strings naming the dims: ``{"x": {0: "batch"}}``. Named dims keep their names in ONNX.
            A dict may be keyed by forward-parameter names or by ``input_names``.
        dynamic_axes: The TorchScript exporter's form, ``{"input_ids": {0: "batch", 1: "seq"}}``
            or ``{"input_ids": [0, 1]}``, converted for you.
        dynamic: Make every axis of every input dynamic (``Dim.AUTO``) except those the model fixes.
        input_names: Graph input names, one per tensor input (default: forward-signature names
            with pytree paths, ``input_dict.tensor_x``).
        output_names: Graph output names (default: output keys, or the FX node names).
        opset_version: ONNX opset, 18..26 (default 23). Below 18 the model is translated at 18 and
            converted with ``onnx.version_converter``; if that fails, :class:`OpsetError`.
        optimize: Run onnxport's graph passes (cleanup, constant folding, fusions).
        verify: Run the model in onnxruntime on the example inputs and compare with eager.
        report: Write a markdown report (``True``: ``onnxport_report_<Model>.md`` in the working
            folder, or a path).
        export_params: With ``f``: include the weights in the saved file.
        external_data: With ``f``: force (True) or forbid (False) external data; default past 2 GB.
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
        verbose: Accepted for torch.onnx compatibility; progress goes to the CLI instead.

    Returns:
        The :class:`ONNXProgram`.

    Raises:
        InputError: ``model``/``args``/``kwargs``/names are invalid.
        CaptureError: torch.export failed with every strategy.
        UnsupportedOpError: Ops without translation (all of them listed).
        TranslationError: A translation failed (op, FX node and source line named).
        OpsetError: The opset cannot be honoured.
        VerificationError: ``verify=True`` and outputs differ beyond tolerance.
    """
    del verbose
    if isinstance(kwargs, (str, os.PathLike)):  # torch.onnx.export(model, args, f) call style
        f, kwargs = kwargs, None
    status = ExportStatus()
    program: ONNXProgram | None = None
    try:
        program = _export(model, args, kwargs, status, (dynamic_shapes, dynamic_axes, dynamic), input_names,
                          output_names, opset_version, optimize, verify,
                          registry_for_export(registry, custom_translations), modules_as_functions,
                          half_precision_compute)
        if f is not None:
            with status.step("save"):
                program.save(f, include_initializers=export_params, external_data=external_data)
        return program
    finally:
        if report:
            from onnxport.report.markdown import write_report

            write_report(report, model, status, program)


def _export(
    model: Any,
    args: Any,
    kwargs: Any,
    status: ExportStatus,
    dynamic_spec: tuple[Any, Any, bool],
    input_names: Sequence[str] | None,
    output_names: Sequence[str] | None,
    opset_version: int | None,
    optimize: bool,
    verify: bool,
    registry: Registry,
    modules_as_functions: Any = None,
    half_precision_compute: str | None = "float32",
) -> ONNXProgram:
    if half_precision_compute not in ("float32", None):
        raise InputError(
            f"half_precision_compute must be 'float32' or None, got {half_precision_compute!r}."
        )
    opset = check_opset(opset_version)
    target_opset = max(opset, MIN_OPSET)
    dynamic_shapes, dynamic_axes, dynamic = dynamic_spec
    args, kwargs = _normalize_inputs(args, kwargs)

    if isinstance(model, ExportedProgram):
        ep = model
        leaves: list[tuple[str, dict[int, str]]] = []
    elif isinstance(model, torch.nn.Module):
        combined = dyn.bind_inputs(model.forward, args, kwargs)
        export_shapes, leaves = dyn.resolve(
            model.forward, combined, dynamic_shapes=dynamic_shapes, dynamic_axes=dynamic_axes,
            dynamic=dynamic, input_names=input_names, output_names=output_names,
        )
        args, kwargs = _inputs_to_meta(model, args, kwargs)
        with status.step("capture"):
            try:
                ep = capture(model, args, kwargs, export_shapes, status.capture_attempts)
            except CaptureError as e:
                raise dyn.explain_violation(e, leaves) from e.__cause__
    else:
        raise InputError(
            f"model must be a torch.nn.Module or a torch.export.ExportedProgram, got {type(model).__name__}. "
            "Wrap a function in an nn.Module whose forward calls it."
        )

    status.captured_program = ep
    translated = registry.targets() | graph_mod.STRUCTURAL_TARGETS
    with status.step("decompose"):
        ep, status.decomposed = decomp.decompose(ep, translated)
    status.decomposed_program = ep

    with status.step("pre-flight"):
        status.unsupported = preflight.find_unsupported(ep, registry, target_opset)
        if status.unsupported:
            raise preflight.unsupported_ops_error(status.unsupported, registry)
    with status.step("translate"):
        tensor_inputs = [n for n in _user_input_nodes(ep) if isinstance(n.meta.get("val"), torch.Tensor)]
        if len(leaves) != len(tensor_inputs):
            leaves = [(n.name, {}) for n in tensor_inputs]
        names = dyn.symbol_names(tensor_inputs, leaves)
        final_names = [path for path, _ in leaves]
        if input_names is not None:
            if len(input_names) > len(tensor_inputs):
                raise InputError(
                    f"input_names has {len(input_names)} names but the model has {len(tensor_inputs)} "
                    f"tensor inputs ({', '.join(final_names)})."
                )
            final_names[: len(input_names)] = list(input_names)
        input_map = {n.name: name for n, name in zip(tensor_inputs, final_names)}
        translator = graph_mod.GraphTranslator(ep, registry, target_opset, graph_mod.DimNamer(names))
        n_user_out = sum(1 for s in ep.graph_signature.output_specs if s.kind.name == "USER_OUTPUT")
        graph = translator.translate(input_map, output_names or _output_names(ep, n_user_out))
        check_graph_opset(graph, target_opset)
        graph.metadata_props[graph_mod.KEY_GRAPH_SIGNATURE] = str(ep.graph_signature)
        graph.metadata_props[graph_mod.KEY_RANGE_CONSTRAINTS] = str(ep.range_constraints)
        model_ir = ir.Model(graph, ir_version=_ir_version(target_opset), producer_name="onnxport",
                            producer_version=_version())
        table = weights.adopt(model_ir, _required_weight)
        if isinstance(model, torch.nn.Module):
            weights.tie(model_ir, table, _tied_groups(model))

    if half_precision_compute is not None:
        from onnxport.passes.half_compute import HalfComputePass

        with status.step("half-precision compute"):
            HalfComputePass()(model_ir)
    if optimize:
        from onnxport.passes import optimize as run_passes

        with status.step("optimize"):
            run_passes(model_ir, modules_as_functions)
            # identity elimination may merge a complex output with its real view: restamp per output
            graph_mod.stamp_complex_outputs(model_ir.graph)
    elif modules_as_functions:
        from onnxport.passes.module_functions import ModuleFunctionsPass

        with status.step("modules as functions"):
            ModuleFunctionsPass(modules_as_functions)(model_ir)
    if opset != target_opset:
        from onnxport.passes.opset_conversion import convert_opset

        with status.step(f"convert to opset {opset}"):
            model_ir = convert_opset(model_ir, opset)
    program = ONNXProgram(model_ir, ep, status, weights=table)
    status.program = program
    if verify:
        check_weights_present(model_ir, "verify the model against eager PyTorch")
        from onnxport.verify.api import verify_export

        verify_export(program, model, args, kwargs, status)  # steps: checks, onnxruntime load, accuracy
    return program


def _required_weight(value: ir.Value) -> bool:
    """Whether ``apply_weights`` must supply this initializer: a parameter or persistent buffer
    (what ``module.state_dict()`` holds)."""
    kind = value.metadata_props.get(graph_mod.KEY_INPUT_KIND)
    persistent = value.metadata_props.get(graph_mod.KEY_INPUT_PERSISTENT, "True") == "True"
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
    import onnx.helper

    return int(onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", opset)]))


def _version() -> str:
    from onnxport import __version__

    return __version__


__all__ = ["ExportStatus", "OnnxportError", "export"]
