"""Small hand-written models for issue 14's coverage families (recurrent nets, attention masks,
dynamic-resolution resampling), each exported with dynamic shapes and run at two input sizes.

One :class:`Case` = a module factory, an input factory ``inputs(size)`` (``size`` 0 is the export
example, 1 differs from it in every dynamic dim) and the ``dynamic_shapes`` given to the exporter.
The tests (``tests/ops/nn/``, ``tests/verify/``) and the torch.onnx comparison in ``bench/`` share
this table; :func:`run_case` exports one case and compares onnxruntime with eager at both sizes.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import torch

from onnxport._export import export

DYN = torch.export.Dim.DYNAMIC


@dataclasses.dataclass(frozen=True)
class Case:
    """One coverage model.

    Attributes:
        name: Unique id (``family/variant``).
        build: Returns the module in eval mode, with deterministic weights.
        inputs: ``inputs(size)`` returns the positional inputs; ``size`` 0 is the export example,
            ``size`` 1 differs from it in every dynamic dim.
        dynamic_shapes: As for ``torch.export.export`` (``Dim.DYNAMIC`` dims, keyed by position).
        atol: Max abs difference allowed between onnxruntime and eager (float32 outputs).
        slow: The export takes more than a few seconds (the tests mark it ``slow``).
    """

    name: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[int], tuple[Any, ...]]
    dynamic_shapes: Any
    atol: float = 1e-4
    slow: bool = False


@dataclasses.dataclass(frozen=True)
class CaseResult:
    """The max abs difference per input size (``diffs[size][output]``) and the ONNX op types."""

    name: str
    diffs: list[list[float]]
    op_types: list[str]


def _seeded(fn: Callable[[], torch.nn.Module]) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        torch.manual_seed(0)
        return fn().eval()

    return build


def _leaves(out: Any) -> list[torch.Tensor]:
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def compare(name: str, actual: list[torch.Tensor], expected: list[torch.Tensor], atol: float) -> list[float]:
    """Max abs difference per output; AssertionError on a count, shape, dtype or NaN mismatch."""
    if len(actual) != len(expected):
        raise AssertionError(f"{name}: {len(actual)} ONNX outputs vs {len(expected)} eager outputs")
    diffs = []
    for i, (a, e) in enumerate(zip(actual, expected)):
        if a.shape != e.shape or a.dtype != e.dtype:
            raise AssertionError(f"{name} output {i}: {a.dtype}{tuple(a.shape)} != eager {e.dtype}{tuple(e.shape)}")
        if not torch.equal(torch.isnan(a), torch.isnan(e)):
            raise AssertionError(f"{name} output {i}: NaN positions differ from eager")
        finite = ~torch.isnan(e)
        diff = (a[finite].double() - e[finite].double()).abs().max().item() if finite.any() else 0.0
        if diff > atol:
            raise AssertionError(f"{name} output {i}: max abs diff {diff:.3g} > {atol:g}")
        diffs.append(diff)
    return diffs


def run_case(case: Case, **export_kwargs: Any) -> CaseResult:
    """Export ``case`` with onnxport and compare onnxruntime with eager at both input sizes.

    Raises:
        AssertionError: An output differs from eager (count, shape, dtype, NaN positions, values).
        onnxport.errors.OnnxportError: The export failed.
    """
    model = case.build()
    program = export(model, case.inputs(0), dynamic_shapes=case.dynamic_shapes, **export_kwargs)
    diffs = []
    for size in (0, 1):
        args = case.inputs(size)
        with torch.no_grad():
            expected = _leaves(model(*args))
        diffs.append(compare(f"{case.name}[size {size}]", program(*args), expected, case.atol))
    return CaseResult(case.name, diffs, [n.op_type for n in program.model.graph])


# --------------------------------------------------------------------------------------------
# Attention: F.scaled_dot_product_attention with every mask form.


class Sdpa(torch.nn.Module):
    """``F.scaled_dot_product_attention(q, k, v, mask, **kwargs)``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self.kwargs = kwargs

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, **self.kwargs)


# (batch, query length L, key length S) at the two sizes; heads 4, head size 8.
_SDPA_SIZES = ((2, 5, 7), (3, 4, 9))
# A 1-D (S,) mask is refused by eager itself (IndexError in torch's math backend), so the broadcast
# forms start at (1, S).
_MASK_FORMS: dict[str, Callable[[int, int, int, int], tuple[int, ...]]] = {
    "1S": lambda b, h, q_len, s: (1, s),
    "L1": lambda b, h, q_len, s: (q_len, 1),
    "LS": lambda b, h, q_len, s: (q_len, s),
    "HLS": lambda b, h, q_len, s: (h, q_len, s),
    "B11S": lambda b, h, q_len, s: (b, 1, 1, s),
    "B1LS": lambda b, h, q_len, s: (b, 1, q_len, s),
    "BHLS": lambda b, h, q_len, s: (b, h, q_len, s),
}
_MASK_DYNAMIC: dict[str, dict[int, Any]] = {
    "1S": {1: DYN},
    "L1": {0: DYN},
    "LS": {0: DYN, 1: DYN},
    "HLS": {1: DYN, 2: DYN},
    "B11S": {0: DYN, 3: DYN},
    "B1LS": {0: DYN, 2: DYN, 3: DYN},
    "BHLS": {0: DYN, 2: DYN, 3: DYN},
}


def _qkv(size: int, kv_heads: int = 4) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    b, q_len, s = _SDPA_SIZES[size]
    g = torch.Generator().manual_seed(size)
    return (torch.randn(b, 4, q_len, 8, generator=g), torch.randn(b, kv_heads, s, 8, generator=g),
            torch.randn(b, kv_heads, s, 8, generator=g))


def _mask(form: str, kind: str, size: int) -> torch.Tensor:
    b, q_len, s = _SDPA_SIZES[size]
    shape = _MASK_FORMS[form](b, 4, q_len, s)
    g = torch.Generator().manual_seed(10 + size)
    if kind == "float":
        return torch.randn(shape, generator=g)
    mask = torch.rand(shape, generator=g) > 0.3
    if shape[-1] > 1:
        mask[..., 0] = True  # every row attends somewhere (fully masked rows have their own cases)
    return mask


_QKV_DYNAMIC = ({0: DYN, 2: DYN}, {0: DYN, 2: DYN}, {0: DYN, 2: DYN})


def _sdpa_mask_case(form: str, kind: str) -> Case:
    return Case(
        f"sdpa/{kind}_mask_{form}",
        _seeded(Sdpa),
        lambda size: (*_qkv(size), _mask(form, kind, size)),
        (*_QKV_DYNAMIC, _MASK_DYNAMIC[form]),
    )


def _fully_masked(kind: str) -> Callable[[int], tuple[torch.Tensor, ...]]:
    def inputs(size: int) -> tuple[torch.Tensor, ...]:
        mask = _mask("B1LS", kind, size)
        mask[0, 0, 1, :] = False if kind == "bool" else float("-inf")
        return (*_qkv(size), mask)

    return inputs


def _decode_qkv(size: int) -> tuple[torch.Tensor, ...]:
    q, k, v = _qkv(size)
    return q[:, :, :2], k, v  # L=2 < S: is_causal is top-left aligned (torch's docs)


SDPA_CASES = [
    *[_sdpa_mask_case(form, kind) for kind in ("bool", "float") for form in _MASK_FORMS],
    Case("sdpa/no_mask", _seeded(Sdpa), _qkv, _QKV_DYNAMIC),
    Case("sdpa/causal_L_ne_S", _seeded(lambda: Sdpa(is_causal=True)), _qkv, _QKV_DYNAMIC),
    Case("sdpa/causal_decode", _seeded(lambda: Sdpa(is_causal=True)), _decode_qkv,
         ({0: DYN}, {0: DYN, 2: DYN}, {0: DYN, 2: DYN})),
    Case("sdpa/scale", _seeded(lambda: Sdpa(scale=0.3)), lambda size: (*_qkv(size), _mask("B11S", "bool", size)),
         (*_QKV_DYNAMIC, _MASK_DYNAMIC["B11S"])),
    Case("sdpa/gqa", _seeded(lambda: Sdpa(enable_gqa=True)),
         lambda size: (*_qkv(size, kv_heads=2), _mask("B11S", "float", size)), (*_QKV_DYNAMIC, _MASK_DYNAMIC["B11S"])),
    # eager (torch's _safe_softmax) gives 0 on a row whose keys are all hidden, bool or -inf
    *[Case(f"sdpa/fully_masked_row_{kind}", _seeded(Sdpa), _fully_masked(kind), (*_QKV_DYNAMIC, _MASK_DYNAMIC["B1LS"]))
      for kind in ("bool", "float")],
]



class Mha(torch.nn.Module):
    """``nn.MultiheadAttention`` (batch_first) with a key padding mask and an (L, S) attention mask."""

    def __init__(self, need_weights: bool, mask_kind: str) -> None:
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(16, 4, batch_first=True)
        self.need_weights = need_weights
        self.mask_kind = mask_kind

    def forward(self, q: torch.Tensor, kv: torch.Tensor, key_padding_mask: torch.Tensor) -> Any:
        q_len, s = q.shape[1], kv.shape[1]
        attn_mask = torch.ones(q_len, s, dtype=torch.bool, device=q.device).triu(1 + s - q_len)  # True = hidden
        if self.mask_kind == "float":
            attn_mask = torch.zeros(q_len, s).masked_fill(attn_mask, float("-inf"))
            key_padding_mask = torch.zeros(key_padding_mask.shape).masked_fill(key_padding_mask, float("-inf"))
        out = self.attn(q, kv, kv, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                        need_weights=self.need_weights)
        return out if self.need_weights else out[0]


def _padding(b: int, s: int, size: int) -> torch.Tensor:
    """(B, S) key padding mask, True = padding: row i hides its last i keys (never all of them)."""
    lengths = torch.tensor([s - (i % (s - 1)) for i in range(b)])
    return torch.arange(s)[None, :] >= lengths[:, None]


# (batch, target/query length, source/memory length) at the two sizes.
_SEQ_SIZES = ((2, 5, 7), (3, 6, 9))


def _mha_inputs(size: int) -> tuple[torch.Tensor, ...]:
    b, q_len, s = _SEQ_SIZES[size]
    g = torch.Generator().manual_seed(size)
    return torch.randn(b, q_len, 16, generator=g), torch.randn(b, s, 16, generator=g), _padding(b, s, size)


_MHA_DYNAMIC = ({0: DYN, 1: DYN}, {0: DYN, 1: DYN}, {0: DYN, 1: DYN})


class Transformer(torch.nn.Module):
    """``nn.Transformer`` (batch_first) with a causal target mask and the three key padding masks."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                                        dim_feedforward=32, dropout=0.0, batch_first=True)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, src_pad: torch.Tensor, tgt_pad: torch.Tensor) -> torch.Tensor:
        tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=tgt.device)
        return self.net(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                        memory_key_padding_mask=src_pad, tgt_is_causal=True)


def _transformer_inputs(size: int) -> tuple[torch.Tensor, ...]:
    b, t, s = _SEQ_SIZES[size]
    g = torch.Generator().manual_seed(size)
    return (torch.randn(b, s, 16, generator=g), torch.randn(b, t, 16, generator=g), _padding(b, s, size),
            _padding(b, t, size))


MODULE_ATTENTION_CASES = [
    *[Case(f"mha/{kind}_masks_weights_{w}", _seeded(functools.partial(Mha, w, kind)), _mha_inputs, _MHA_DYNAMIC,
           slow=(kind, w) != ("bool", False))
      for kind in ("bool", "float") for w in (True, False)],
    Case("transformer/masks", _seeded(Transformer), _transformer_inputs,
         ({0: DYN, 1: DYN}, {0: DYN, 1: DYN}, {0: DYN, 1: DYN}, {0: DYN, 1: DYN}), slow=True),
]


# --------------------------------------------------------------------------------------------
# Recurrent nets: nn.LSTM / nn.GRU / nn.RNN with dynamic batch and sequence; cells in a loop.


class Recurrent(torch.nn.Module):
    """``nn.<kind>(4, 8, **options)``; initial states as inputs when ``initial``; returns
    (output, final states)."""

    def __init__(self, kind: str, initial: bool, **options: Any) -> None:
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(4, 8, **options)
        self.initial = initial

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None, c0: torch.Tensor | None = None) -> Any:
        hx = None if h0 is None else h0 if c0 is None else (h0, c0)
        return self.rnn(x, hx)


# (batch, sequence) at the two sizes.
_RNN_SIZES = ((2, 5), (3, 7))


def _recurrent_case(kind: str, initial: bool, slow: bool = False, **options: Any) -> Case:
    layers, d = options.get("num_layers", 1), 2 if options.get("bidirectional") else 1
    batch_first = options.get("batch_first", False)
    n_states = (2 if kind == "LSTM" else 1) if initial else 0
    state_sizes = [options.get("proj_size") or 8, 8][:n_states]  # h0 has the projection's size

    def inputs(size: int) -> tuple[torch.Tensor, ...]:
        b, t = _RNN_SIZES[size]
        g = torch.Generator().manual_seed(size)
        x = torch.randn((b, t, 4) if batch_first else (t, b, 4), generator=g)
        return (x, *[torch.randn(layers * d, b, h, generator=g) for h in state_sizes])

    x_dyn = {0: DYN, 1: DYN}
    name = "_".join([kind.lower(), *[f"{k}={v}" for k, v in options.items()], f"initial={initial}"])
    return Case(f"rnn/{name}", _seeded(lambda: Recurrent(kind, initial, **options)), inputs,
                (x_dyn, *[{1: DYN}] * n_states), slow=slow)


class CellLoop(torch.nn.Module):
    """``nn.<kind>Cell`` applied in a Python loop over a static number of steps (dim 1 of x)."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.cell = getattr(torch.nn, f"{kind}Cell")(4, 8)
        self.lstm = kind == "LSTM"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(x.shape[0], 8)
        c = x.new_zeros(x.shape[0], 8)
        outs = []
        for t in range(x.shape[1]):
            if self.lstm:
                h, c = self.cell(x[:, t], (h, c))
            else:
                h = self.cell(x[:, t], h)
            outs.append(h)
        return torch.stack(outs, 1)


def _cell_inputs(size: int) -> tuple[torch.Tensor]:
    return (torch.randn(_RNN_SIZES[size][0], 4, 4, generator=torch.Generator().manual_seed(size)),)


RNN_CASES = [
    _recurrent_case("LSTM", False),
    _recurrent_case("LSTM", True, num_layers=2, bidirectional=True, batch_first=True),
    _recurrent_case("LSTM", True, bidirectional=True),
    _recurrent_case("LSTM", False, num_layers=2, batch_first=True, bias=False),
    _recurrent_case("GRU", False, batch_first=True),
    _recurrent_case("GRU", True, num_layers=2, bidirectional=True),
    _recurrent_case("RNN", True, num_layers=2),
    _recurrent_case("RNN", False, nonlinearity="relu", bidirectional=True, batch_first=True),
    *[Case(f"rnn/{kind.lower()}_cell_loop", _seeded(functools.partial(CellLoop, kind)), _cell_inputs, ({0: DYN},))
      for kind in ("LSTM", "GRU", "RNN")],
]

#: nn.LSTM(proj_size > 0): one ONNX Scan per layer and direction (ops/nn/rnn_proj.py).
PROJ_CASES = [
    _recurrent_case("LSTM", False, proj_size=3, num_layers=2),
    _recurrent_case("LSTM", True, proj_size=3, bidirectional=True, batch_first=True),
    _recurrent_case("LSTM", True, proj_size=5, num_layers=2, bidirectional=True, bias=False),
]


class Packed(torch.nn.Module):
    """``pack_padded_sequence`` → ``nn.<kind>`` → ``pad_packed_sequence``; returns the padded output,
    the final states and the lengths."""

    def __init__(self, kind: str, enforce_sorted: bool, batch_first: bool, initial: bool, **options: Any) -> None:
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(4, 8, batch_first=batch_first, **options)
        self.enforce_sorted, self.batch_first, self.initial = enforce_sorted, batch_first, initial

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, h0: torch.Tensor | None = None,
                c0: torch.Tensor | None = None) -> Any:
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            x, lengths, batch_first=self.batch_first, enforce_sorted=self.enforce_sorted)
        hx = None if h0 is None else h0 if c0 is None else (h0, c0)
        out, final = self.rnn(packed, hx)
        padded, out_lengths = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=self.batch_first)
        return padded, final, out_lengths


# (batch, sequence, lengths) at the two sizes: the longest length is the sequence (a padded batch).
_PACKED_SIZES = ((3, 5, (5, 3, 2)), (4, 7, (7, 6, 3, 1)))


def _packed_case(kind: str, enforce_sorted: bool, batch_first: bool, initial: bool = False,
                 **options: Any) -> Case:
    layers, d = options.get("num_layers", 1), 2 if options.get("bidirectional") else 1
    n_states = (2 if kind == "LSTM" else 1) if initial else 0
    state_sizes = [options.get("proj_size") or 8, 8][:n_states]  # h0 has the projection's size

    def inputs(size: int) -> tuple[torch.Tensor, ...]:
        b, t, lengths = _PACKED_SIZES[size]
        g = torch.Generator().manual_seed(size)
        order = lengths if enforce_sorted else lengths[1:] + lengths[:1]  # unsorted: the longest last
        x = torch.randn((b, t, 4) if batch_first else (t, b, 4), generator=g)
        return (x, torch.tensor(order), *[torch.randn(layers * d, b, h, generator=g) for h in state_sizes])

    bdim = 0 if batch_first else 1
    name = "_".join([kind.lower(), f"sorted={enforce_sorted}", f"batch_first={batch_first}",
                     *[f"{k}={v}" for k, v in options.items()], f"initial={initial}"])
    return Case(f"packed/{name}", _seeded(lambda: Packed(kind, enforce_sorted, batch_first, initial, **options)),
                inputs, ({bdim: DYN, 1 - bdim: DYN}, {0: DYN}, *[{1: DYN}] * n_states))


#: pack_padded_sequence → ONNX sequence_lens (capture/packed.py).
PACKED_CASES = [
    _packed_case("LSTM", True, False),
    _packed_case("LSTM", False, True, initial=True, proj_size=3, bidirectional=True),
    _packed_case("LSTM", False, True, initial=True, num_layers=2, bidirectional=True),
    _packed_case("GRU", False, False, bidirectional=True),
    _packed_case("RNN", True, True, initial=True, nonlinearity="relu"),
]


# --------------------------------------------------------------------------------------------
# Dynamic-resolution resampling: interpolate to sizes computed from dynamic dims, scale factors,
# a UNet skip, TF "same" padding from H/W.


class Interpolate(torch.nn.Module):
    """``F.interpolate`` by ``scale`` (a float: ``scale_factor``; ``"size"``: to 2·in + 1 computed
    from the dynamic dims; ``"skip"``: to the spatial size of a second input)."""

    def __init__(self, mode: str, align_corners: bool | None, scale: Any) -> None:
        super().__init__()
        self.mode, self.align_corners, self.scale = mode, align_corners, scale

    def forward(self, x: torch.Tensor, skip: torch.Tensor | None = None) -> torch.Tensor:
        f = torch.nn.functional.interpolate
        if self.scale == "size":
            return f(x, size=[2 * d + 1 for d in x.shape[2:]], mode=self.mode, align_corners=self.align_corners)
        if self.scale == "skip":
            assert skip is not None
            return torch.cat([f(x, size=skip.shape[2:], mode=self.mode, align_corners=self.align_corners), skip], 1)
        return f(x, scale_factor=self.scale, mode=self.mode, align_corners=self.align_corners)


# spatial sizes at the two sizes (batch 2 then 3)
_SPATIAL = {1: ((6,), (9,)), 2: ((6, 5), (7, 9)), 3: ((4, 5, 3), (5, 3, 4))}
_MODES = {"nearest": 2, "nearest-exact": 2, "linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "area": 2}


def _resize_case(mode: str, align_corners: bool | None, scale: Any) -> Case:
    n = _MODES[mode]

    def inputs(size: int) -> tuple[torch.Tensor, ...]:
        g = torch.Generator().manual_seed(size)
        spatial = _SPATIAL[n][size]
        x = torch.randn(2 + size, 3, *spatial, generator=g)
        if scale == "skip":
            return x, torch.randn(2 + size, 2, *[2 * d + 1 for d in spatial], generator=g)
        return (x,)

    dyn = {i: DYN for i in [0, *range(2, 2 + n)]}
    name = f"resize/{mode}_ac={align_corners}_{'scale=' + str(scale) if isinstance(scale, float) else scale}"
    return Case(name, _seeded(lambda: Interpolate(mode, align_corners, scale)), inputs,
                (dyn, dyn) if scale == "skip" else (dyn,))


class TfSamePadConv(torch.nn.Module):
    """A stride-2 conv after TF "same" padding computed from the input's H/W, as transformers'
    MobileNetV2 ``apply_tf_padding`` writes it (a Python branch on ``H % stride``)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        in_h, in_w = x.shape[-2:]
        (s_h, s_w), (k_h, k_w) = self.conv.stride, self.conv.kernel_size
        pad_h = max(k_h - s_h, 0) if in_h % s_h == 0 else max(k_h - in_h % s_h, 0)
        pad_w = max(k_w - s_w, 0) if in_w % s_w == 0 else max(k_w - in_w % s_w, 0)
        pad = (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2)
        return self.conv(torch.nn.functional.pad(x, pad))


def _image(size: int) -> tuple[torch.Tensor]:
    return (torch.randn(2 + size, 3, *((8, 10), (7, 9))[size], generator=torch.Generator().manual_seed(size)),)


RESIZE_CASES = [
    *[_resize_case(mode, ac, scale)
      for mode in ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear")
      for ac in ((None,) if mode.startswith("nearest") else (False, True))
      for scale in (2.0, "size")],
    _resize_case("bilinear", True, "skip"),
    _resize_case("nearest", None, "skip"),
    _resize_case("bilinear", False, 1.5),
]

#: TF "same" padding written with a Python branch on ``H % stride``: torch.export records the
#: example's branch (an even H) without a constraint violation, so the model is wrong on odd sizes.
TF_SAME_PAD = Case("pad/tf_same_stride2", _seeded(TfSamePadConv), _image, ({0: DYN, 2: DYN, 3: DYN},))

CASES: list[Case] = [*SDPA_CASES, *MODULE_ATTENTION_CASES, *RNN_CASES, *PROJ_CASES, *PACKED_CASES, *RESIZE_CASES]


def case(name: str) -> Case:
    """The case called ``name`` (KeyError naming the known ones otherwise)."""
    for c in CASES:
        if c.name == name:
            return c
    raise KeyError(f"no coverage case {name!r}; known: {', '.join(c.name for c in CASES)}")
