"""Capture-time replacements for library functions that stop torch.export on dynamic sizes.

Like torch.onnx's ``_capture_strategies.py`` (``_patch_dynamo_unsupported_functions``), each patch
swaps a function for an equivalent one for the duration of the capture only, and only in modules
the user already imported (no library is imported here).

- transformers MobileNetV1/V2 ``apply_tf_padding`` (TensorFlow "SAME" padding from the input's
  H/W): it reads the sizes with ``int(features.shape[-2])``, which specializes a dynamic H/W to the
  example's value (DynamicShapesError), and branches on ``H % stride == 0``. The replacement
  computes the same pads with symbolic arithmetic and no branch:
  ``pad = max(kernel - ((H - 1) % stride + 1), 0)``, since ``(H - 1) % stride + 1`` is ``stride``
  when ``H % stride == 0`` and ``H % stride`` otherwise (TensorFlow's formula,
  https://www.tensorflow.org/api_docs/python/tf/nn#notes_on_padding_2).
- transformers' Mamba selective scan (``mamba_selective_scan`` of Mamba, FalconMamba, Jamba,
  Zamba): its Python loop over the sequence fixes the sequence length; replaced by the same
  recurrence as a ``scan`` op (:mod:`onnxport.capture.selective_scan`).
- transformers' Mamba2 chunked scan (``mamba2_chunk_scan`` of Mamba2, Bamba, GraniteMoeHybrid,
  NemotronH, Zamba2, Falcon-H1): it pads the sequence to a multiple of the chunk size under
  ``if pad_size > 0:``, a branch on the sequence length; replaced by the same recurrence one
  position at a time, continuing a given state, as a ``scan`` op
  (:mod:`onnxport.capture.chunk_scan`).
- transformers' gated delta rule (``torch_chunk_gated_delta_rule`` of Qwen3-Next, Qwen3.5,
  Qwen3.5-MoE, Qwen4-Exp, OLMo-Hybrid): its loop over the chunks fixes their number and its UT
  transform is 63 in-place row updates; replaced by the same chunked sums with the chunks as a
  ``scan`` op and the inverse by repeated squaring (:mod:`onnxport.capture.delta_rule`).
- transformers' position-embedding interpolation (``interpolate_pos_encoding`` of ViT, DINOv2,
  DeiT, CLIP, SigLIP, ... -- about 50 models; ``get_absolute_positions``, ``_tile_position_embeddings``)
  returns the table unchanged when the input is at the config's resolution
  (``if not torch.jit.is_tracing() and num_patches == num_positions and height == width``). A square
  example at that resolution makes torch.export record this branch under a guard, so the graph is
  valid at that size only. transformers skips the shortcut under ``torch.jit.is_tracing()`` "to
  ensure the exported model works for dynamic input shapes"; the patch runs these methods (and only
  them) with ``torch.jit.is_tracing()`` true, so the capture always takes the interpolating path.
  That path is exact at the config's size too: bicubic/bilinear resampling at scale 1 has the
  weights (0, 1, 0, 0).
- transformers' ``torch_int`` (imported by ~60 modeling files) returns ``int(x)`` outside
  ``torch.jit`` tracing, which fixes a symbolic size to the example's (DINOv2-with-registers
  interpolates its position table to ``size=(torch_int(height), torch_int(width))``: the graph held
  the example's 14x14 grid); during capture it returns SymInts unchanged (:func:`symbolic_torch_int`).
- the builtin ``int`` in transformers' and diffusers' modeling modules: ``int(s)`` of a SymInt fixes
  it to the example's value (Depth Anything resizes its depth map to ``int(patch_height *
  patch_size)``, DiT's grid is ``int(hidden_states.shape[1] ** 0.5)``, and the graph held the
  example's size); during capture each imported ``transformers.models.*`` or ``diffusers.models.*``
  module that calls ``int(`` gets :class:`SymbolicInt` as its global ``int``, which returns SymInts
  unchanged and is the builtin otherwise (:func:`symbolic_int_builtin`).
- ``torch.tensor``, ``torch.as_tensor`` and ``torch.linspace`` given symbolic sizes (Mask2Former's
  ``spatial_shapes`` and reference points; deformable-attention models build them so): non-strict
  capture evaluates the sizes to the example's under a guard, and the graph held the example's
  feature-map grid; during capture they build the same values from the symbolic sizes
  (:func:`symbolic_constructor_patches`).
- ``torch.nn.functional.one_hot`` with a symbolic ``num_classes``: ATen's ``one_hot`` takes an
  ``int``, so the capture fixed it to the example's value (Gemma 4's vision pooler one-hots each
  patch's pooling cell among ``num_patches / k²`` cells: the graph dropped every cell past the
  example's); during capture it compares with an ``arange`` of that size instead
  (:func:`symbolic_one_hot`).
- ``torch.nn.functional.max_pool1d`` over a symbolic length, which torch 2.13 fixes to the
  example's (CANINE, 1-D CNNs), as ``max_pool2d`` over a height of 1 (:func:`symbolic_max_pool1d`).
- the interleaved multimodal rotary of Qwen3-VL / Qwen3.5's text decoders given 2-D position ids
  (three equal rows): the plain rotary table, bit for bit (:mod:`onnxport.capture.text_mrope`).
- transformers' ``compile_compatible_method_lru_cache`` (anchors and sine position tables of
  RT-DETR, D-FINE, ... ~30 models) is bypassed, as transformers itself does under Dynamo: a cache
  filled during the capture or a fake-tensor probe held fake tensors that a later eager run at the
  same sizes got back (:func:`transformers_method_caches_off`).
- diffusers' position and timestep embeddings that fix sizes (PatchEmbed's table at the
  configured size, Chroma's guidance of ``torch.tensor([0] * batch_size)``, CogVideoX's table
  copied in place): :mod:`onnxport.capture.diffusers_models`.
- the audio codecs' convolutions (EnCodec, Mimi, PocketTTS) pad with sizes held in tensor
  buffers: run with them as Python ints (:mod:`onnxport.capture.conv1d_padding`).
- RecurrentGemma's RG-LRU recurrence as a ``scan`` op (:mod:`onnxport.capture.rg_lru`).
- RWKV's WKV recurrence (``rwkv_linear_attention``) as a ``scan`` op (:mod:`onnxport.capture.wkv`).
- xLSTM's mLSTM cell in inference mode as a ``scan`` of its step kernel (:mod:`onnxport.capture.mlstm`).
- GPT-Neo's attention mask is built from positions, not sliced from its stored table with
  symbolic bounds (:mod:`onnxport.capture.causal_buffers`).
- MiniMax's lightning attention without a cache is one expression for any sequence length, not a
  loop over the example's blocks (:mod:`onnxport.capture.lightning`).
- SwitchTransformers', NLLB-MoE's and DBRX's experts, a loop over the experts their tokens hit (a
  ``nonzero``), computed densely over every expert, or for DBRX through transformers' grouped
  experts implementation (:mod:`onnxport.capture.expert_loops`).
- diffusers' UNets resize their up-sampled maps to the skip connections' sizes at every latent
  size, not only off multiples of ``2**num_upsamplers`` (:mod:`onnxport.capture.upsampling`).
- diffusers' ``PatchEmbed.forward`` (DiT, PixArt): the same shortcut at the configured sample size,
  without a guard; run with its configured grid hidden so the sin-cos table is always recomputed
  (:func:`always_interpolating`).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any, cast

import torch
import torch.utils._device

from onnxport.capture.causal_buffers import positional_mask
from onnxport.capture.chunk_scan import chunk_scan
from onnxport.capture.conv1d_padding import conv1d_padding_patches
from onnxport.capture.delta_rule import chunk_gated_delta_rule
from onnxport.capture.diffusers_models import DIFFUSERS_PATCHES
from onnxport.capture.expert_loops import EXPERT_LOOP_PATCHES
from onnxport.capture.flex import flex_attention_patches
from onnxport.capture.lightning import whole_sequence
from onnxport.capture.mlstm import recurrent_inference
from onnxport.capture.rg_lru import rnn_scan
from onnxport.capture.selective_scan import selective_scan
from onnxport.capture.text_mrope import TEXT_MROPE_CLASSES, text_positions
from onnxport.capture.upsampling import upsampling_patches
from onnxport.capture.windows import window_patches
from onnxport.capture.wkv import wkv_scan


def tf_same_padding(features: torch.Tensor, conv_layer: torch.nn.Conv2d, *, dilate: bool) -> torch.Tensor:
    """transformers' ``apply_tf_padding`` without ``int()`` on sizes or a branch on them.

    Args:
        features: (N, C, H, W) input of ``conv_layer``.
        conv_layer: The convolution whose stride, kernel size (and dilation) set the padding.
        dilate: Multiply the pads by the dilation (MobileNetV2's version; V1's does not).

    Returns:
        ``features`` zero-padded (left, right, top, bottom) as TensorFlow's "SAME" padding.

    With ``kernel >= stride`` the total pad is written as TensorFlow defines it,
    ``(ceil(size / stride) - 1) * stride + kernel - size`` (equal to transformers'
    ``max(kernel - ((size - 1) % stride + 1), 0)`` there, and never negative), so the convolution's
    output size simplifies to ``ceil(size / stride)`` for torch's symbolic shapes. transformers'
    form nests a ``Max`` and a ``Mod`` per strided layer into every later size: MobileNetV2's
    export spent 15 of its 60 s (cProfile) in this function's symbolic arithmetic, and more in the
    decomposition and translation that carry those sizes (session 31).
    """
    pads = []
    for size, stride, kernel in zip(features.shape[-2:], conv_layer.stride, conv_layer.kernel_size):
        if kernel >= stride:  # never negative: TF's (ceil(size / stride) - 1) * stride + kernel - size
            pads.append(((size + stride - 1) // stride - 1) * stride + kernel - size)
        else:
            remainder = (size - 1) % stride + 1
            pads.append(torch.sym_max(kernel - remainder, 0))
    (pad_h, pad_w), (dil_h, dil_w) = pads, (conv_layer.dilation if dilate else (1, 1))
    padding = (pad_w // 2 * dil_w, (pad_w - pad_w // 2) * dil_w, pad_h // 2 * dil_h, (pad_h - pad_h // 2) * dil_h)
    return torch.nn.functional.pad(features, padding, "constant", 0.0)


#: (module name, attribute, replacement) applied while capturing, when the module is imported.
PATCHES: tuple[tuple[str, str, Callable[..., Any]], ...] = (
    *((f"transformers.models.{name}.modeling_{name}", "mamba_selective_scan", selective_scan)
      for name in ("mamba", "falcon_mamba", "jamba", "zamba")),
    *((f"transformers.models.{name}.modeling_{name}", "mamba2_chunk_scan", chunk_scan)
      for name in ("mamba2", "bamba", "granitemoehybrid", "nemotron_h", "zamba2", "falcon_h1")),
    *((f"transformers.models.{name}.modeling_{name}", "torch_chunk_gated_delta_rule", chunk_gated_delta_rule)
      for name in ("qwen3_next", "qwen3_5", "qwen3_5_moe", "qwen4_exp", "olmo_hybrid")),
    ("transformers.models.rwkv.modeling_rwkv", "rwkv_linear_attention", wkv_scan),
    ("transformers.models.mobilenet_v2.modeling_mobilenet_v2", "apply_tf_padding",
     functools.partial(tf_same_padding, dilate=True)),
    ("transformers.models.mobilenet_v1.modeling_mobilenet_v1", "apply_tf_padding",
     functools.partial(tf_same_padding, dilate=False)),
)


@contextlib.contextmanager
def transformers_method_caches_off() -> Iterator[None]:
    """transformers' ``compile_compatible_method_lru_cache`` (RT-DETR's and D-FINE's anchors and
    sine position tables, ~30 models) bypassed, as it is under Dynamo: run on fake or meta tensors,
    a cached method would keep their outputs and hand them to a later eager run at the same sizes
    (the validation of RT-DETR compared fake anchors). Active during the capture
    (:func:`library_patches`) and the hf shape probes. ``is_torchdynamo_compiling`` of
    ``transformers.pytorch_utils`` is read there by that decorator's wrapper only."""
    module = sys.modules.get("transformers.pytorch_utils")
    if module is None or "is_torchdynamo_compiling" not in vars(module):
        yield
        return
    original = vars(module)["is_torchdynamo_compiling"]
    setattr(module, "is_torchdynamo_compiling", _tracing)  # noqa: B010 (a module the checker cannot see)
    try:
        yield
    finally:
        setattr(module, "is_torchdynamo_compiling", original)  # noqa: B010


def _tracing() -> bool:
    return True


def as_if_tracing(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` run with ``torch.jit.is_tracing()`` returning True (restored when it returns)."""
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        original = torch.jit.is_tracing
        torch.jit.is_tracing = _tracing
        try:
            return method(*args, **kwargs)
        finally:
            torch.jit.is_tracing = original
    return wrapper


def _imported_modules(prefixes: tuple[str, ...] = ("transformers.models.",)) -> list[tuple[str, Any]]:
    """The imported modules under ``prefixes`` (transformers' modeling modules by default), by name."""
    return [(name, m) for name, m in list(sys.modules.items()) if name.startswith(prefixes) and m is not None]


def position_interpolation_patches() -> list[tuple[Any, str, Callable[..., Any]]]:
    """``(class, method name, replacement)`` for the position-embedding methods of the imported
    transformers models that skip their general path unless tracing: methods whose name contains
    ``pos`` and whose code reads ``is_tracing``."""
    patches: list[tuple[Any, str, Callable[..., Any]]] = []
    for module_name, module in _imported_modules():
        for cls in list(vars(module).values()):
            if not isinstance(cls, type) or cls.__module__ != module_name:
                continue
            for name, method in list(vars(cls).items()):
                code = getattr(method, "__code__", None)
                if "pos" in name and code is not None and "is_tracing" in code.co_names:
                    patches.append((cls, name, as_if_tracing(method)))
    return patches


# Methods replaced on classes of optional libraries when their module is imported:
# (module, class, method, the replacement made from the original).
METHOD_PATCHES: tuple[tuple[str, str, str, Callable[[Any], Callable[..., Any]]], ...] = (
    *DIFFUSERS_PATCHES,
    ("transformers.models.minimax.modeling_minimax", "MiniMaxLightningAttention", "forward", whole_sequence),
    ("transformers.models.gpt_neo.modeling_gpt_neo", "GPTNeoSelfAttention", "_attn", positional_mask),
    ("transformers.models.recurrent_gemma.modeling_recurrent_gemma", "RecurrentGemmaRglru", "_rnn_scan",
     lambda _original: rnn_scan),
    ("transformers.models.xlstm.modeling_xlstm", "xLSTMBackend", "forward", recurrent_inference),
    *EXPERT_LOOP_PATCHES,
    *((module, cls, "forward", text_positions) for module, cls in TEXT_MROPE_CLASSES),
)


def method_patches(
    entries: tuple[tuple[str, str, str, Callable[[Any], Callable[..., Any]]], ...] = METHOD_PATCHES,
) -> list[tuple[Any, str, Callable[..., Any]]]:
    """``(class, method name, replacement)`` of ``entries`` (:data:`METHOD_PATCHES`) whose module
    is imported."""
    patches = []
    for module_name, class_name, method, replacement in entries:
        cls = getattr(sys.modules.get(module_name), class_name, None)
        if isinstance(cls, type) and method in vars(cls):
            patches.append((cls, method, replacement(vars(cls)[method])))
    return patches


_SYMBOLIC = (torch.SymInt, torch.SymFloat)
_TENSOR, _AS_TENSOR, _LINSPACE = torch.tensor, torch.as_tensor, torch.linspace
_ONE_HOT = torch.nn.functional.one_hot
_MAX_POOL1D: Callable[..., Any] = torch.nn.functional.max_pool1d
_RAND, _RANDN = torch.rand, torch.randn


def _symbolic_data(data: Any) -> bool:
    if isinstance(data, _SYMBOLIC):
        return True
    return isinstance(data, (list, tuple)) and any(_symbolic_data(x) for x in data)


def _stacked(data: Any, dtype: torch.dtype | None, device: Any) -> torch.Tensor:
    """``data`` (numbers and symbolic sizes, nested lists) as a tensor built from 0-d tensors."""
    if isinstance(data, (list, tuple)):
        return torch.stack([_stacked(x, dtype, device) for x in data])
    integral = isinstance(data, (int, torch.SymInt)) and not isinstance(data, bool)
    return torch.scalar_tensor(data, dtype=dtype or (torch.int64 if integral else torch.get_default_dtype()), device=device)


def symbolic_tensor(data: Any, *, dtype: torch.dtype | None = None, device: Any = None, **kwargs: Any) -> torch.Tensor:
    """``torch.tensor`` that keeps symbolic sizes in its data symbolic (a ``stack`` of
    ``scalar_tensor``); anything else goes to ``torch.tensor``."""
    if _symbolic_data(data):
        return _stacked(data, dtype, device)
    return _TENSOR(data, dtype=dtype, device=device, **kwargs)


def symbolic_as_tensor(data: Any, dtype: torch.dtype | None = None, device: Any = None) -> torch.Tensor:
    """``torch.as_tensor`` that keeps symbolic sizes symbolic, as :func:`symbolic_tensor`."""
    if _symbolic_data(data):
        return _stacked(data, dtype, device)
    return _AS_TENSOR(data, dtype=dtype, device=device)


def symbolic_linspace(start: Any, end: Any, steps: Any, *args: Any, dtype: torch.dtype | None = None,
                      device: Any = None, **kwargs: Any) -> torch.Tensor:
    """``torch.linspace`` with a symbolic ``start``/``end``/``steps``, as torch's CPU kernel computes
    it (:func:`onnxport.ops.tensor.creation.aten_linspace`): ``start`` and ``end`` converted to the
    output type first (an integer one truncates them), ``step = (end - start) / max(steps - 1, 1)``,
    the first ``steps // 2`` points (at least one) ``start + step·i`` and the others ``end -
    step·(steps - 1 - i)``, in float64, then cast (truncating toward zero for an integer type);
    anything else goes to ``torch.linspace``."""
    if not any(isinstance(v, _SYMBOLIC) for v in (start, end, steps)):
        return _LINSPACE(start, end, steps, *args, dtype=dtype, device=device, **kwargs)
    out = dtype or torch.get_default_dtype()
    first, last = (torch.scalar_tensor(v, dtype=torch.float64, device=device).to(out).double() for v in (start, end))
    count = torch.scalar_tensor(steps, dtype=torch.float64, device=device)
    positions = torch.arange(steps, dtype=torch.float64, device=device)
    step = (last - first) / torch.clamp(count - 1, min=1)
    halfway = torch.clamp(torch.floor(count / 2), min=1)  # steps == 1: [start]
    values = torch.where(positions < halfway, first + step * positions, last - step * (count - 1 - positions))
    return values.to(out)


def symbolic_one_hot(tensor: torch.Tensor, num_classes: int | torch.SymInt = -1) -> torch.Tensor:
    """``F.one_hot`` that keeps a symbolic ``num_classes`` symbolic: int64 ``[..., num_classes]``,
    1 where the class equals ``arange(num_classes)`` (the PyTorch doc's definition; a value out of
    range gives a row of zeros where ``F.one_hot`` raises); anything else goes to ``F.one_hot``."""
    if not isinstance(num_classes, torch.SymInt):
        return _ONE_HOT(tensor, num_classes)
    return (tensor.unsqueeze(-1) == torch.arange(cast(Any, num_classes), device=tensor.device)).to(torch.int64)


def symbolic_max_pool1d(input: torch.Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                        dilation: Any = 1, ceil_mode: bool = False, *more: Any, return_indices: bool = False) -> Any:
    """``F.max_pool1d`` over a symbolic length as ``F.max_pool2d`` over a height of 1: torch 2.13's
    1-D kernel (``max_pool1d``, a composite of ATen) fixes the length to the example's value
    ("specialized it to be a constant", torch.export alone too: CANINE's character downsampling,
    1-D CNNs over audio or text), the 2-D one keeps it symbolic. The windows, padding, dilation,
    ``ceil_mode`` and indices (flat over a row of 1) are the same; a static length goes to
    ``F.max_pool1d``. Takes ``F.max_pool1d``'s arguments (``return_indices``, its seventh, also
    positionally in ``more``)."""
    return_indices = bool(more[0]) if more else return_indices
    if not isinstance(input.shape[-1], torch.SymInt):
        return _MAX_POOL1D(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                           return_indices=return_indices)
    one = torch.nn.modules.utils._single
    kernel = one(kernel_size)[0]
    step = one(stride)[0] if stride is not None and one(stride) else kernel
    pooled = torch.nn.functional.max_pool2d(
        input.unsqueeze(-2), (1, kernel), (1, step), (0, one(padding)[0]), (1, one(dilation)[0]),
        ceil_mode=ceil_mode, return_indices=return_indices,
    )
    if return_indices:
        return pooled[0].squeeze(-2), pooled[1].squeeze(-2)
    return pooled.squeeze(-2)


def _without_no_generator(draw: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def wrapper(*args: Any, **kwargs: Any) -> torch.Tensor:
        if "generator" in kwargs and kwargs["generator"] is None:
            del kwargs["generator"]
        return draw(*args, **kwargs)

    return wrapper


def symbolic_constructor_patches() -> list[tuple[Any, str, Callable[..., Any]]]:
    """``(torch, name, replacement)`` for ``torch.tensor``, ``torch.as_tensor`` and
    ``torch.linspace``: in a non-strict capture, a symbolic size in their arguments is evaluated to
    the example's value under a guard (Mask2Former's pixel decoder builds ``spatial_shapes`` with
    ``torch.as_tensor`` of the feature maps' sizes and reference points with
    ``torch.linspace(0.5, height - 0.5, height)``: the graph held the example's grid);
    ``(torch.nn.functional, "one_hot", symbolic_one_hot)``, whose ``num_classes`` the same way; and
    ``F.max_pool1d`` over a symbolic length (:func:`symbolic_max_pool1d`);
    ``torch.rand``/``torch.randn`` without a ``generator=None`` argument, whose ``.generator``
    overload takes concrete sizes only ("SymIntArrayRef expected to contain only concrete
    integers": diffusers' ``randn_tensor`` passes ``generator=None``, and the LTX-2 diffusion
    decoder draws its noise with it at the latent's symbolic size)."""
    return [(torch, "tensor", symbolic_tensor), (torch, "as_tensor", symbolic_as_tensor), (torch, "linspace", symbolic_linspace),
            (torch.nn.functional, "one_hot", symbolic_one_hot), (torch.nn.functional, "max_pool1d", symbolic_max_pool1d),
            (torch, "rand", _without_no_generator(_RAND)),
            (torch, "randn", _without_no_generator(_RANDN))]


_MODULE_TO = torch.nn.Module.to


def unchanged_module_to(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    """``torch.nn.Module.to`` that returns the module as it is when no parameter or buffer would
    change (the dtype and device they already have, no memory format). ``Module.to`` then changes
    nothing in eager, but on the fake parameters of a streamed (meta-device) model's capture its
    ``_apply`` swaps every parameter for itself and fails ("_apply(): Couldn't swap
    Linear.weight"): NLLB-MoE's and SwitchTransformers' routers cast their classifier to the router dtype in every forward
    (``self.classifier = self.classifier.to(self.dtype)``). Any other call is the original."""
    device, dtype, _, memory_format = torch._C._nn._parse_to(*args, **kwargs)
    tensors = [*self.parameters(), *self.buffers()]
    if memory_format is None and all(
        (device is None or t.device == device)
        and (dtype is None or t.dtype == dtype or not (t.is_floating_point() or t.is_complex()))
        for t in tensors
    ):
        return self
    return _MODULE_TO(self, *args, **kwargs)


def symbolic_torch_int(x: Any) -> Any:
    """transformers' ``torch_int`` that keeps a symbolic size symbolic: ``int(x)`` of a SymInt
    would fix it to the example's value (a dynamic height/width feeding an interpolation size)."""
    if isinstance(x, torch.SymInt):
        return x
    if isinstance(x, torch.SymFloat):
        return torch.sym_int(x)
    return x.to(torch.int64) if torch.jit.is_tracing() and isinstance(x, torch.Tensor) else int(x)


def torch_int_patches() -> list[tuple[Any, str, Callable[..., Any]]]:
    """``(module, "torch_int", symbolic_torch_int)`` for each imported transformers module that
    imported ``torch_int`` (DINOv2-with-registers, ... interpolate position tables to
    ``size=(torch_int(height), torch_int(width))``)."""
    return [(module, "torch_int", symbolic_torch_int) for _, module in _imported_modules() if "torch_int" in vars(module)]


class _IntType(type):
    """Makes :class:`SymbolicInt` stand for ``int`` in ``isinstance``/``issubclass`` checks and
    attribute lookups (``int.from_bytes``) of the modules it is placed in."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, builtins.int)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return issubclass(sub, builtins.int)

    def __getattr__(cls, name: str) -> Any:
        return getattr(builtins.int, name)


class SymbolicInt(metaclass=_IntType):
    """``int`` for transformers' modeling modules during capture: ``int(s)`` of a SymInt returns it
    unchanged (a SymFloat is truncated symbolically) instead of fixing it to the example's value;
    anything else is the builtin ``int``. Depth Anything resizes its depth map to
    ``(int(patch_height * patch_size), int(patch_width * patch_size))``: the graph held the
    example's 42x42 at every image size. Where a Python int is really needed (``range``, slicing),
    ``__index__`` still specializes, as before."""

    def __new__(cls, value: Any = 0, *args: Any) -> Any:  # type: ignore[misc]
        if isinstance(value, torch.SymInt) and not args:
            return value
        if isinstance(value, torch.SymFloat) and not args:
            return torch.sym_int(value)
        return builtins.int(value, *args)


@contextlib.contextmanager
def symbolic_int_builtin() -> Iterator[None]:
    """:class:`SymbolicInt` as the global ``int`` of every imported ``transformers.models.*`` and
    ``diffusers.models.*`` module that calls ``int(`` (its functions look globals up before
    builtins); removed on exit. diffusers' DiT, Latte and ``Transformer2DModel`` compute
    ``height = width = int(hidden_states.shape[1] ** 0.5)``: the graph held the example's grid."""
    placed = []
    try:
        for _, module in _imported_modules(("transformers.models.", "diffusers.models.")):
            source = getattr(module, "__file__", None) or ""
            if "int" in vars(module) or not source.endswith(".py") or not _calls_int(source):
                continue
            module.int = SymbolicInt  # type: ignore[attr-defined]
            placed.append(module)
        yield
    finally:
        for module in placed:
            vars(module).pop("int", None)


@functools.cache
def _calls_int(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return "int(" in f.read().replace("torch_int(", "")
    except OSError:
        return False


def _fill_torch_caches() -> None:
    """Fill torch's lazily built, process-wide caches of its own functions before any is replaced.

    Built while ``torch.tensor`` is :func:`symbolic_tensor`, such a cache keeps the replacement and
    misses the real function for the rest of the process. ``torch.utils._device._device_constructors``
    (the factories a ``with torch.device("meta"):`` block moves to its device) then lacked
    ``torch.tensor``, so transformers' ``from_pretrained`` (which builds the model under
    ``torch.device("meta")`` and checks ``torch.tensor([]).device``) built it on the CPU, skipped
    the initialization of non-persistent buffers, and left BERT's ``position_ids`` as uninitialized
    memory: every later Hugging Face export in that process failed its runtime check. The same
    holds for ``torch.overrides``' function tables and Dynamo's special handlers of torch functions.
    Private APIs: each is filled only where this torch has it."""
    caches = [
        getattr(torch.utils._device, "_device_constructors", None),
        getattr(torch.overrides, "get_ignored_functions", None),
        getattr(torch.overrides, "_get_overridable_functions", None),
    ]
    dynamo_torch = sys.modules.get("torch._dynamo.variables.torch")
    handlers = getattr(getattr(dynamo_torch, "TorchInGraphFunctionVariable", None), "_get_handlers", None)
    for fill in [*caches, handlers]:
        if callable(fill):
            fill()


@contextlib.contextmanager
def library_patches() -> Iterator[None]:
    """Apply :data:`PATCHES`, :func:`unchanged_module_to`, :func:`position_interpolation_patches`,
    :func:`torch_int_patches`,
    :func:`method_patches`, :func:`symbolic_constructor_patches`,
    :func:`onnxport.capture.windows.window_patches`,
    :func:`onnxport.capture.upsampling.upsampling_patches`,
    :func:`onnxport.capture.flex.flex_attention_patches`,
    :func:`onnxport.capture.conv1d_padding.conv1d_padding_patches`, :func:`symbolic_int_builtin` and
    :func:`transformers_method_caches_off` to the modules already imported (:func:`replaced`);
    restore them on exit.

    torch's caches keyed by function identity are filled first (:func:`_fill_torch_caches`), so
    they hold the originals, never a replacement that is gone after the capture."""
    _fill_torch_caches()
    targets: list[tuple[Any, str, Callable[..., Any]]] = [
        (sys.modules.get(module_name), attribute, replacement) for module_name, attribute, replacement in PATCHES
    ]
    models = _imported_modules()
    with replaced([
        *targets, (torch.nn.Module, "to", unchanged_module_to), *position_interpolation_patches(),
        *torch_int_patches(), *method_patches(),
        *symbolic_constructor_patches(), *window_patches(models), *upsampling_patches(),
        *flex_attention_patches(), *conv1d_padding_patches(models),
    ]), symbolic_int_builtin(), transformers_method_caches_off():
        yield


@contextlib.contextmanager
def replaced(patches: list[tuple[Any, str, Callable[..., Any]]]) -> Iterator[None]:
    """Each ``(owner, attribute, replacement)`` set while the context is active (an owner that is
    ``None`` or lacks the attribute is skipped), the originals restored on exit."""
    saved = []
    try:
        for owner, attribute, replacement in patches:
            if owner is not None and attribute in vars(owner):
                saved.append((owner, attribute, vars(owner)[attribute]))
                setattr(owner, attribute, replacement)
        yield
    finally:
        for owner, attribute, original in reversed(saved):
            setattr(owner, attribute, original)


def integer_conv1d_padding() -> contextlib.AbstractContextManager[None]:
    """:func:`onnxport.capture.conv1d_padding.conv1d_padding_patches` applied to the imported
    transformers models: the shape probes of a meta-device model run the audio codecs' pads on
    fake tensors, where the tensor-buffer pads are data-dependent sizes."""
    return replaced(conv1d_padding_patches(_imported_modules()))


def dense_experts() -> contextlib.AbstractContextManager[None]:
    """:data:`onnxport.capture.expert_loops.EXPERT_LOOP_PATCHES` applied to the classes whose
    module is imported: the shape probes of a meta-device model run them on fake tensors, where
    their ``nonzero`` cannot run."""
    return replaced(method_patches(EXPERT_LOOP_PATCHES))
