"""Run PyTorch OpInfo samples through an exporter and compare with eager.

Shared by the op suite (``tests/ops``), the coverage generator (``onnxport.coverage``) and
``bench/opinfo_compare.py``. Each sample becomes a module whose inputs are the sample's tensors
(every other argument is baked in), exported, run in onnxruntime, and compared with eager on
values, shapes and dtypes by :func:`onnxport.verify.compare.compare_tensors` with its one
tolerance table (:data:`onnxport.verify.compare.TOLERANCES`; NaN must match NaN).

Needs ``torch.testing._internal`` (and its ``expecttest`` dependency): import lazily.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import os
import textwrap
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from onnxport._export import export
from onnxport.capture.decomp import call_nodes
from onnxport.errors import UnsupportedOpError
from onnxport.verify.compare import compare_tensors

DTYPES: tuple[torch.dtype, ...] = (
    torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool,
)
DTYPE_NAMES = {d: str(d).removeprefix("torch.") for d in DTYPES}

# OpInfos whose values are random: compared by shape, dtype and distribution, not values.
RANDOM_OPS = frozenset({
    "bernoulli", "normal", "normal.number_mean", "normal.in_place", "rand_like", "randn_like",
    "randint_like", "randint", "randn", "rand", "multinomial", "uniform", "exponential",
    "geometric", "log_normal", "cauchy", "nn.functional.dropout", "nn.functional.dropout2d",
    "nn.functional.dropout3d", "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout.with_train",
    "nn.functional.feature_alpha_dropout.without_train", "nn.functional.rrelu", "randperm",
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted",
})
# Ops whose only output is indices into a sort, compared through the values they pick unless
# the sample asks for a stable sort.
UNSTABLE_INDEX_OPS = frozenset({"argsort"})
# Random ops whose distribution has no mean: compared by median.
HEAVY_TAILED_OPS = frozenset({"cauchy"})
# Ops whose index output orders equal values as the implementation likes (torch documents the
# order as unspecified without stable=True): only their values are compared.
TIE_ORDER_OPS = frozenset({"topk", "kthvalue", "sort", "median", "nanmedian", "mode"})

# onnxruntime 1.31 has no kernels for RandomUniform(Like)/RandomNormal(Like)/Multinomial-22, so the
# random ops are checked at opset 21 (their opset-22 encodings are the same nodes).
RANDOM_OPSET = 21
# Of these, the ones whose output is uninitialized memory: shape and dtype only.
UNINITIALIZED_OPS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"})


@functools.cache
def op_db() -> dict[str, Any]:
    """OpInfo full name (``name`` or ``name.variant``) → OpInfo."""
    # heavy optional dependency (needs expecttest); imported only when the op suite runs
    from torch.testing._internal.common_methods_invocations import op_db as db

    return {full_name(o): o for o in db}


def full_name(opinfo: Any) -> str:
    return f"{opinfo.name}.{opinfo.variant_test_name}" if opinfo.variant_test_name else opinfo.name


def supported_dtypes(opinfo: Any) -> list[torch.dtype]:
    supported = opinfo.supported_dtypes("cpu")
    return [d for d in DTYPES if d in supported]


def samples(opinfo: Any, dtype: torch.dtype, limit: int | None = None) -> list[Any]:
    """The OpInfo's CPU samples for ``dtype``, generated from a fixed seed (so reproducible)."""
    torch.manual_seed(0)
    out = []
    generator = iter(opinfo.sample_inputs("cpu", dtype, requires_grad=False))
    try:
        for sample in generator:
            out.append(sample)
            if limit is not None and len(out) >= limit:
                break
    finally:  # close now, not later inside some export's tracing context
        close = getattr(generator, "close", None)
        if close is not None:
            close()
    return out


class OpCall(torch.nn.Module):
    """``op(input, *args, **kwargs)`` with the tensors of the call as module inputs."""

    def __init__(self, op: Callable[..., Any], structure: Any, tensor_slots: Sequence[int]) -> None:
        super().__init__()
        self.op = op
        self.leaves, self.spec = pytree.tree_flatten(structure)
        self.tensor_slots = list(tensor_slots)

    def forward(self, *tensors: torch.Tensor) -> Any:
        leaves = list(self.leaves)
        for slot, tensor in zip(self.tensor_slots, tensors):
            leaves[slot] = tensor
        inp, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.op(inp, *args, **kwargs)


def as_module(opinfo: Any, sample: Any) -> tuple[OpCall, tuple[torch.Tensor, ...]]:
    """The module calling ``opinfo.op`` on ``sample`` and its tensor inputs."""
    structure = (sample.input, tuple(sample.args), dict(sample.kwargs))
    leaves, _ = pytree.tree_flatten(structure)
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    module = OpCall(opinfo.op, structure, slots)
    return module, tuple(leaves[i] for i in slots)


@dataclasses.dataclass
class SampleResult:
    """Outcome of one sample: ``status`` is pass, mismatch, export_error, unsupported or run_error."""

    status: str
    detail: str = ""
    aten_ops: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def _tensor_leaves(value: Any) -> list[torch.Tensor]:
    return [x for x in pytree.tree_leaves(value) if isinstance(x, torch.Tensor)]


def compare_outputs(name: str, expected: Sequence[torch.Tensor], actual: Sequence[torch.Tensor]) -> str:
    """Return '' when every output matches (values, shapes, dtypes), else what differs."""
    if len(expected) != len(actual):
        return f"{len(actual)} outputs, eager has {len(expected)}"
    random = name in RANDOM_OPS
    for i, (exp, act) in enumerate(zip(expected, actual)):
        if act.dtype != exp.dtype:
            return f"output {i}: dtype {act.dtype}, eager {exp.dtype}"
        if tuple(act.shape) != tuple(exp.shape):
            return f"output {i}: shape {tuple(act.shape)}, eager {tuple(exp.shape)}"
        if random:
            problem = _compare_distribution(name, exp, act)
        elif name in TIE_ORDER_OPS and exp.dtype == torch.int64 and i > 0:
            problem = ""  # the values (output 0) are compared; equal values may come in any order
        else:
            problem = _compare_values(exp, act)
        if problem:
            return f"output {i}: {problem}"
    return ""


def _compare_values(exp: torch.Tensor, act: torch.Tensor) -> str:
    """'' when ``act`` matches ``exp`` by :func:`~onnxport.verify.compare.compare_tensors` (the
    shared tolerance table, NaN must match NaN), else its one-line summary."""
    comparison = compare_tensors("output", exp, act, strict_nan=True)
    return "" if comparison.passed else comparison.summary()[:300]


def _compare_distribution(name: str, exp: torch.Tensor, act: torch.Tensor) -> str:
    """Random outputs: finite where eager is; on samples of 20 or more values, the same support
    (central 90% of ours within eager's range widened by 4 spreads) and, from 400 values, a close
    mean (a close median for heavy-tailed distributions without a mean, e.g. Cauchy). A handful of
    draws says nothing about a distribution, so smaller samples are checked by finiteness only."""
    if name in UNINITIALIZED_OPS or exp.numel() == 0:
        return ""
    e, a = exp.double().flatten(), act.double().flatten()
    if not bool(torch.isfinite(a).all()) and bool(torch.isfinite(e).all()):
        return "non-finite random values"
    if e.numel() < 20:
        return ""
    lo, hi = float(e.min()), float(e.max())
    spread = max(hi - lo, 1.0)
    a_lo, a_hi = (float(q) for q in torch.quantile(a, torch.tensor([0.05, 0.95], dtype=a.dtype)))
    if a_lo < lo - 4 * spread or a_hi > hi + 4 * spread:
        return f"random values (central 90%) in [{a_lo}, {a_hi}], eager [{lo}, {hi}]"
    if e.numel() >= 400:
        if name in HEAVY_TAILED_OPS:
            q1, q3 = (float(q) for q in torch.quantile(e, torch.tensor([0.25, 0.75], dtype=e.dtype)))
            if abs(float(a.median()) - float(e.median())) > 0.25 * (q3 - q1) + 0.05:
                return f"random median {float(a.median()):.4g}, eager {float(e.median()):.4g}"
            return ""
        std = float(e.std()) if e.numel() > 1 else 0.0
        if abs(float(a.mean()) - float(e.mean())) > 0.25 * std + 0.05 * max(abs(float(e.mean())), 1.0):
            return f"random mean {float(a.mean()):.4g}, eager {float(e.mean()):.4g}"
    return ""


def aten_targets(ep: Any) -> tuple[str, ...]:
    """The ``call_function`` targets of a (decomposed) ExportedProgram, as strings."""
    return tuple(sorted({str(n.target) for n in call_nodes(ep) if isinstance(n.target, torch._ops.OpOverload)}))


def run_sample(
    opinfo: Any, sample: Any, *, optimize: bool = True, opset: int | None = None,
    exporter: str = "onnxport",
) -> SampleResult:
    """Export one sample with ``exporter`` ("onnxport" or "torch.onnx"), run it, compare."""
    module, tensors = as_module(opinfo, sample)
    name = full_name(opinfo)
    try:
        expected = _tensor_leaves(module(*tensors))
    except Exception as e:  # a sample eager itself rejects (rare): not the exporter's failure
        return SampleResult("skip", f"eager failed: {type(e).__name__}: {e}")
    if not expected:
        return SampleResult("skip", "no tensor output")
    try:
        if exporter == "onnxport":
            if opset is None and name in RANDOM_OPS:
                opset = RANDOM_OPSET
            program = export(module, tensors, opset_version=opset, optimize=optimize)
            ops = aten_targets(program.exported_program)
        else:
            program = _torch_onnx_export(module, tensors, opset, optimize)
            ops = ()
    except UnsupportedOpError as e:
        return SampleResult("unsupported", _short(e), _failing_target(e))
    except Exception as e:
        return SampleResult("export_error", f"{type(e).__name__}: {_short(e)}", _failing_target(e))
    try:
        actual = _run(program, tensors)
    except Exception as e:
        return SampleResult("run_error", f"{type(e).__name__}: {_short(e)}", ops)
    finally:
        if exporter == "onnxport":  # torch.onnx's release() runs gc.collect(): ~1 s per sample
            program.release()
    if name in UNSTABLE_INDEX_OPS and not _asks_stable(sample):
        expected, actual = _sorted_values(sample, expected), _sorted_values(sample, actual)
    problem = compare_outputs(name, expected, actual)
    return SampleResult("mismatch" if problem else "pass", problem, ops)


def _asks_stable(sample: Any) -> bool:
    return bool(sample.kwargs.get("stable", False))


def _sorted_values(sample: Any, indices: list[torch.Tensor]) -> list[torch.Tensor]:
    """argsort without ``stable=True``: the values the indices pick, since the order of equal values
    is the implementation's (eager's vectorized sort of long inputs is not stable)."""
    dim = sample.kwargs.get("dim", sample.args[0] if sample.args else -1)
    return [torch.take_along_dim(sample.input, i, dim) for i in indices]


def _run(program: Any, tensors: tuple) -> list[torch.Tensor]:
    """``program(*tensors)`` (``ONNXProgram.__call__`` carries bfloat16 through OrtValues)."""
    return list(program(*tensors))


def _failing_target(e: BaseException) -> tuple[str, ...]:
    """The op an onnxport error names (its FX node's target), for per-overload attribution."""
    node = getattr(e, "node", None)
    target = getattr(node, "target", None)
    return (str(target),) if isinstance(target, torch._ops.OpOverload) else ()


def _torch_onnx_export(module: torch.nn.Module, tensors: tuple, opset: int | None, optimize: bool) -> Any:
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return torch.onnx.export(
            module, tensors, dynamo=True, opset_version=opset, optimize=optimize, verbose=False,
            report=False, verify=False,
        )


def _short(e: BaseException, n: int = 400) -> str:
    text = " ".join(str(e).split())
    return text[:n]


def iter_cases(
    names: Sequence[str] | None = None, dtypes: Sequence[torch.dtype] = DTYPES,
) -> Iterator[tuple[str, torch.dtype]]:
    """(OpInfo full name, dtype) for every OpInfo (or ``names``) and each supported dtype."""
    db = op_db()
    for name in names if names is not None else sorted(db):
        for dtype in supported_dtypes(db[name]):
            if dtype in dtypes:
                yield name, dtype


# -- reproduction scripts ---------------------------------------------------------------------

_REPRO = '''\
"""Reproduce onnxport OpInfo failure: {name} [{dtype}] sample {index} (optimize={optimize}).

{detail}
"""
import torch
import torch.utils._pytree as pytree

import onnxport
from onnxport.testing.opinfo import compare_outputs, op_db

inp, args, kwargs = torch.load({data!r}, weights_only=False)
opinfo = op_db()[{name!r}]


class Model(torch.nn.Module):
    def forward(self, *tensors):
        leaves, spec = pytree.tree_flatten((inp, args, kwargs))
        it = iter(tensors)
        leaves = [next(it) if isinstance(x, torch.Tensor) else x for x in leaves]
        i, a, k = pytree.tree_unflatten(leaves, spec)
        return opinfo.op(i, *a, **k)


tensors = tuple(x for x in pytree.tree_leaves((inp, args, kwargs)) if isinstance(x, torch.Tensor))
model = Model()
expected = [x for x in pytree.tree_leaves(model(*tensors)) if isinstance(x, torch.Tensor)]
program = onnxport.export(model, tensors, opset_version={opset!r}, optimize={optimize!r})
print(program.model)
actual = program(*tensors)
print(compare_outputs({name!r}, expected, actual) or "outputs match")
'''


def write_repro(
    opinfo: Any, sample: Any, dtype: torch.dtype, index: int, result: SampleResult, *,
    optimize: bool = True, opset: int | None = None, folder: str | os.PathLike[str] | None = None,
) -> Path:
    """Write ``repro_<op>_<dtype>_<index>.py`` (and its ``.pt`` inputs) for a failing sample."""
    folder = Path(folder or os.environ.get("ONNXPORT_REPRO_DIR", "onnxport_repro"))
    folder.mkdir(parents=True, exist_ok=True)
    name = full_name(opinfo)
    stem = f"repro_{name.replace('.', '_')}_{DTYPE_NAMES.get(dtype, dtype)}_{index}_{'opt' if optimize else 'noopt'}"
    data = folder / f"{stem}.pt"
    torch.save((sample.input, tuple(sample.args), dict(sample.kwargs)), data)
    script = folder / f"{stem}.py"
    detail = textwrap.fill(f"{result.status}: {result.detail}", 96)
    script.write_text(_REPRO.format(
        name=name, dtype=DTYPE_NAMES.get(dtype, dtype), index=index, optimize=optimize, opset=opset,
        detail=detail, data=str(data.resolve()),
    ))
    return script


def format_exception(e: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(e), e)).strip()
