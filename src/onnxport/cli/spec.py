"""What the CLI exports: a SPEC (factory file or Hugging Face folder) → model, inputs, dynamic shapes.

A SPEC is one of:

- ``path/to/file.py:factory``: a Python file and the name of a function in it. The function takes
  no arguments and returns ``(model, args)``, ``(model, args, kwargs)`` or
  ``(model, args, kwargs, dynamic_shapes)``, with the meaning of :func:`onnxport.export`'s arguments.
- A local Hugging Face model folder (``config.json`` and ``*.safetensors``): loaded by
  :mod:`onnxport.hf` for the task its architecture implies, with that task's example inputs.

``--dynamic NAME:AXIS=DIM[,AXIS=DIM...]`` options are parsed and merged here as well.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.export import ExportedProgram

from onnxport.errors import HFError
from onnxport.hf import inputs as hf_inputs
from onnxport.hf import loading as hf_loading

AxisNames = dict[int, str]

DYNAMIC_FORMAT = "NAME:AXIS=DIM[,AXIS=DIM...], e.g. input_ids:0=batch,1=sequence"
FACTORY_RETURNS = "(model, args), (model, args, kwargs) or (model, args, kwargs, dynamic_shapes)"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class SpecError(ValueError):
    """The SPEC (or a ``--dynamic`` option) cannot be used; the CLI exits with code 2."""


@dataclasses.dataclass
class LoadedSpec:
    """A model with its example inputs, ready for :func:`onnxport.export`.

    Attributes:
        model: The ``nn.Module`` (or ``ExportedProgram``) to export.
        args: Positional example inputs.
        kwargs: Keyword example inputs.
        dynamic_shapes: The spec's default ``dynamic_shapes`` (``None``, a dict or a tuple/list).
        description: What was loaded, for messages (``BertModel from /path``).
        input_names, output_names: Graph input/output names (``None``: onnxport's defaults).
    """

    model: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    dynamic_shapes: Any
    description: str
    input_names: list[str] | None = None
    output_names: list[str] | None = None


# -- SPEC ------------------------------------------------------------------------------------
def load_spec(spec: str) -> LoadedSpec:
    """Load a SPEC: a Hugging Face folder, or ``file.py:factory``.

    Args:
        spec: The SPEC argument as given on the command line.

    Returns:
        The model, its example inputs and default dynamic shapes.

    Raises:
        SpecError: The path does not exist, the factory is missing, not callable, raised, or
            returned something else than the documented tuple; or the folder is not a model.
    """
    if Path(spec).is_dir():
        return load_hf_spec(Path(spec))
    path_text, sep, factory = spec.rpartition(":")
    if not sep or not path_text or "/" in factory or "\\" in factory:
        if spec.endswith(".py") and Path(spec).is_file():
            raise SpecError(
                f"SPEC {spec!r} names a Python file but no factory: write {spec}:FUNCTION."
            )
        raise SpecError(
            f"SPEC {spec!r} not found: give an existing Hugging Face model folder or path/to/file.py:factory."
        )
    return load_factory(Path(path_text), factory)


def load_factory(path: Path, name: str) -> LoadedSpec:
    """Import ``path`` as a module and call its function ``name``.

    Raises:
        SpecError: See :func:`load_spec`.
    """
    if not path.is_file():
        raise SpecError(f"SPEC file {path} not found (SPEC is path/to/file.py:factory).")
    if not _IDENTIFIER.match(name):
        raise SpecError(
            f"SPEC factory {name!r} is not a Python function name (SPEC is path/to/file.py:factory)."
        )
    with _importable_from(path.resolve().parent):
        module = _import_file(path)
        factory = getattr(module, name, None)
        if factory is None:
            defined = sorted(
                k
                for k, v in vars(module).items()
                if inspect.isfunction(v) and v.__module__ == module.__name__
            )
            raise SpecError(
                f"{path} has no function {name!r}. Functions defined there: {', '.join(defined) or 'none'}."
            )
        if not callable(factory):
            raise SpecError(
                f"{path}:{name} is a {type(factory).__name__}, not a function returning {FACTORY_RETURNS}."
            )
        try:
            result = factory()
        except Exception as e:  # the user's code: report it as a SPEC problem, not a crash
            raise SpecError(f"Calling {path}:{name}() raised {type(e).__name__}: {e}") from e
    return _unpack_factory_result(result, f"{path}:{name}")


def _import_file(path: Path) -> Any:
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"onnxport_spec_{re.sub(r'[^0-9A-Za-z_]', '_', path.stem)}_{digest}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise SpecError(f"{path} cannot be imported as a Python module (is it a .py file?).")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module  # dataclasses and pickling look the module up here
    try:
        module_spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[module_name]
        raise SpecError(f"Importing {path} failed with {type(e).__name__}: {e}") from e
    return module


@contextlib.contextmanager
def _importable_from(folder: Path) -> Iterator[None]:
    """Let the factory file import modules next to it while it is loaded and called."""
    entry = str(folder)
    added = entry not in sys.path
    if added:
        sys.path.insert(0, entry)
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def _unpack_factory_result(result: Any, where: str) -> LoadedSpec:
    if not isinstance(result, (tuple, list)) or not 2 <= len(result) <= 4:
        got = (
            f"a {len(result)}-tuple" if isinstance(result, (tuple, list)) else type(result).__name__
        )
        raise SpecError(f"{where}() must return {FACTORY_RETURNS}; it returned {got}.")
    model, args, kwargs, dynamic_shapes = (*result, None, None)[:4]
    if not isinstance(model, (torch.nn.Module, ExportedProgram)):
        raise SpecError(
            f"{where}() returned a {type(model).__name__} as model; expected a torch.nn.Module "
            "(or a torch.export.ExportedProgram)."
        )
    if isinstance(args, torch.Tensor):
        args = (args,)
    if not isinstance(args, (tuple, list)):
        raise SpecError(
            f"{where}() returned a {type(args).__name__} as args; expected a tuple of example inputs."
        )
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, Mapping):
        raise SpecError(
            f"{where}() returned a {type(kwargs).__name__} as kwargs; expected a dict (or None)."
        )
    return LoadedSpec(
        model, tuple(args), dict(kwargs), dynamic_shapes, f"{type(model).__name__} from {where}"
    )


# -- Hugging Face folder ----------------------------------------------------------------------
def load_hf_spec(folder: Path) -> LoadedSpec:
    """A local Hugging Face folder as a SPEC: the one ONNX component ``onnxport.hf`` exports for
    the folder's task (inferred from the architecture), with its example inputs and dynamic shapes.

    This is the model ``onnxport export --hf FOLDER`` exports (``hf/loading.py``, ``hf/inputs.py``),
    so ``verify MODEL.onnx FOLDER`` and ``report FOLDER`` see the same inputs.

    Raises:
        SpecError: The folder is not a model folder, transformers cannot load it, or its task has
            several components (encoder-decoders: use ``export --hf``).
    """
    try:
        loaded = hf_loading.load(folder)
        parts = hf_inputs.components(loaded)
    except HFError as e:
        raise SpecError(str(e)) from e
    if len(parts) != 1:
        names = ", ".join(p.name for p in parts)
        raise SpecError(
            f"{folder} is a {loaded.task.name} model with {len(parts)} ONNX components ({names}): "
            f"export it with `onnxport export --hf {folder} -o OUT_DIR`."
        )
    part = parts[0]
    return LoadedSpec(
        part.module, (), part.capture_inputs(hf_inputs.EXPORT_SIZES), part.dynamic_shapes,
        f"{type(loaded.model).__name__} from {folder}", part.input_names, part.output_names,
    )


# -- --dynamic -------------------------------------------------------------------------------
def parse_dynamic(text: str) -> tuple[str, AxisNames]:
    """Parse one ``--dynamic NAME:AXIS=DIM[,AXIS=DIM...]`` value.

    Args:
        text: The option's value, e.g. ``input_ids:0=batch,1=sequence``.

    Returns:
        ``("input_ids", {0: "batch", 1: "sequence"})``.

    Raises:
        SpecError: The value does not follow the format (the message shows it).
    """
    name, sep, axes_text = text.partition(":")
    name = name.strip()
    if not sep or not _IDENTIFIER.match(name) or not axes_text.strip():
        raise SpecError(f"{text!r} is not {DYNAMIC_FORMAT}.")
    axes: AxisNames = {}
    for item in axes_text.split(","):
        axis_text, eq, dim = (part.strip() for part in item.partition("="))
        if not eq or not axis_text.isdigit() or not _IDENTIFIER.match(dim):
            raise SpecError(
                f"{text!r}: {item.strip()!r} is not AXIS=DIM (a non-negative axis number and a dimension "
                f"name); expected {DYNAMIC_FORMAT}."
            )
        if int(axis_text) in axes:
            raise SpecError(f"{text!r} names axis {axis_text} twice; expected {DYNAMIC_FORMAT}.")
        axes[int(axis_text)] = dim
    return name, axes


def parse_dynamic_options(values: Sequence[str]) -> dict[str, AxisNames]:
    """Parse every ``--dynamic`` value; a later value for the same input replaces the earlier one.

    Raises:
        SpecError: A value does not follow the format.
    """
    parsed: dict[str, AxisNames] = {}
    for text in values:
        name, axes = parse_dynamic(text)
        parsed[name] = axes
    return parsed


def apply_dynamic(loaded: LoadedSpec, overrides: Mapping[str, AxisNames]) -> Any:
    """The spec's ``dynamic_shapes`` with each ``--dynamic`` input's axes replaced.

    The result is a dict keyed by the forward parameters bound to the example inputs (as
    torch.export requires every top-level key); inputs without dynamic axes map to ``None``.

    Raises:
        SpecError: A ``--dynamic`` name is not an input of the model, or the model is an
            ExportedProgram (whose shapes are already fixed).
    """
    if not overrides:
        return loaded.dynamic_shapes
    if isinstance(loaded.model, ExportedProgram):
        raise SpecError(
            "--dynamic cannot change an ExportedProgram: its dynamic shapes were fixed when it was exported."
        )
    try:
        bound = (
            inspect.signature(loaded.model.forward).bind(*loaded.args, **loaded.kwargs).arguments
        )
    except (TypeError, ValueError) as e:
        raise SpecError(
            f"The example inputs do not match {type(loaded.model).__name__}.forward: {e}"
        ) from e
    names = list(bound)
    current = loaded.dynamic_shapes
    if isinstance(current, (list, tuple)):
        merged: dict[str, Any] = dict(zip(names, current, strict=False))
    elif isinstance(current, Mapping):
        merged = dict(current)
    else:
        merged = {}
    for name, axes in overrides.items():
        if name not in bound:
            raise SpecError(
                f"--dynamic names input {name!r}, but the model's inputs are: {', '.join(names) or 'none'}."
            )
        value = bound[name]
        if not isinstance(value, torch.Tensor):
            raise SpecError(
                f"--dynamic names input {name!r}, which is a {type(value).__name__}, not a tensor."
            )
        too_big = [axis for axis in axes if axis >= value.dim()]
        if too_big:
            raise SpecError(
                f"--dynamic names axis {too_big[0]} of input {name!r}, which has only {value.dim()} dimensions."
            )
        merged[name] = dict(axes)
    return {name: merged.get(name) for name in names}
