"""What every component builder of :mod:`onnxport.hf.inputs` shares: the input-set
:class:`Sizes`, the :class:`Component` record (with its :class:`CacheBranch`), example-input
helpers and where shape probes run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from onnxport.capture.fake_leaks import fake_tensors_undone
from onnxport.capture.finite import AssumedFinite
from onnxport.capture.patches import (
    dense_experts,
    integer_conv1d_padding,
    transformers_method_caches_off,
)
from onnxport.errors import HFError
from onnxport.hf import meta
from onnxport.hf.dims import ENCODER_SEQUENCE_OUT
from onnxport.hf.loading import LoadedModel
from onnxport.hf.rope import positions_driven_dynamic_rope
from onnxport.verify.ties import kept_state

DEFAULT_IMAGE = 64


@dataclasses.dataclass(frozen=True)
class Sizes:
    """The sizes of one input set. ``past`` is the cached length (0 on the first step)."""

    batch: int = 2
    sequence: int = 8
    past: int = 3
    encoder_sequence: int = 6
    seed: int = 0


EXPORT_SIZES = Sizes()
# Fresh shapes for validation: an empty past (first step), a longer one with other batch/sequence,
# and a one-token decode step (the size generation runs most; models may branch on it, as
# transformers' state-space mixers do on ``seq_len == 1``).
CHECK_SIZES = (Sizes(3, 5, 0, 7, seed=1), Sizes(1, 4, 6, 9, seed=2), Sizes(2, 1, 5, 4, seed=3))


@dataclasses.dataclass(frozen=True)
class CacheBranch:
    """Outputs of the first step that the later ones feed back instead of recomputing
    (:func:`onnxport.passes.cache_branch.branch_on_flag`: an encoder-decoder's cross-attention
    cache, as in Optimum's merged decoder).

    Attributes:
        outputs: The graph outputs computed on the first step (``present.{i}.encoder.key``...).
        inputs: The graph inputs that replace them later (``past_key_values.{i}.encoder.key``...).
        keywords: The keyword inputs of ``make_inputs`` that exist only after the rewrite, left
            out of the capture (``cross_key_values``, ``use_cache_branch``).
        flag: The boolean input choosing the cached values.
        dims: Axis → symbolic dim name of the cached tensors.
    """

    outputs: tuple[str, ...]
    inputs: tuple[str, ...]
    keywords: tuple[str, ...] = ("cross_key_values", "use_cache_branch")
    flag: str = "use_cache_branch"
    dims: tuple[tuple[int, str], ...] = ((2, ENCODER_SEQUENCE_OUT),)


@dataclasses.dataclass
class Component:
    """One ONNX model to write.

    Attributes:
        name: File stem (``model``, ``encoder_model``, ``decoder_model``).
        module: The ``nn.Module`` exported (a wrapper from :mod:`onnxport.hf.cache`).
        make_inputs: Sizes → keyword inputs of ``module.forward``.
        dynamic_shapes: torch.export dynamic shapes, dims named as in the ONNX graph.
        input_names: Graph input names of the capture (``None``: onnxport's defaults).
        output_names: Graph output names.
        branch: Outputs cached after the first step (the graph gains the branch's inputs).
        resizable: Whether inputs resized from the example's are valid inputs (the export's
            runtime check at other sizes: :func:`onnxport.verify.runtime_check.check_runtime`).
            ``False`` when values must agree with other inputs' shapes (Qwen2-VL's ``grid_thw``
            and its patches); the component's validation at ``CHECK_SIZES`` runs onnxruntime on
            ``make_inputs`` instead.
    """

    name: str
    module: torch.nn.Module
    make_inputs: Callable[[Sizes], dict[str, Any]]
    dynamic_shapes: dict[str, Any]
    input_names: list[str] | None
    output_names: list[str]
    branch: CacheBranch | None = None
    resizable: bool = True

    def capture_inputs(self, sizes: Sizes) -> dict[str, Any]:
        """``make_inputs(sizes)`` without the inputs the graph gains after the capture."""
        inputs = self.make_inputs(sizes)
        skipped = self.branch.keywords if self.branch is not None else ()
        return {k: v for k, v in inputs.items() if k not in skipped}


def generator(sizes: Sizes) -> torch.Generator:
    """The random generator of one input set (seeded by ``sizes.seed``)."""
    return torch.Generator().manual_seed(1000 + sizes.seed)


def token_ids(config: Any, batch: int, sequence: int, generator: torch.Generator) -> torch.Tensor:
    """Random ids below ``vocab_size`` (at least 3, past the usual special ids); a composite
    config (``EncoderDecoderConfig``: bert2bert) gives the smaller of its encoder's and decoder's,
    a multimodal one (Qwen3.5's ``*ForTokenClassification``) its ``text_config``'s; CANINE reads
    Unicode code points (hashed into ``num_hash_buckets``), any below 0x110000."""
    vocab = getattr(config, "vocab_size", None)
    if not vocab and isinstance(getattr(config, "num_hash_buckets", None), int):
        vocab = 0x110000
    if not vocab:
        parts = [getattr(getattr(config, part, None), "vocab_size", None) for part in ("encoder", "decoder", "text_config")]
        vocab = min((v for v in parts if v), default=None)
    if not vocab:
        raise HFError(
            f"Config of {config.model_type!r} has no vocab_size; cannot build token inputs."
        )
    low = 3 if vocab > 6 else 0
    return torch.randint(low, vocab, (batch, sequence), generator=generator, dtype=torch.int64)


def left_padded_mask(batch: int, length: int, pad: int = 2) -> torch.Tensor:
    """Ones, except the first ``pad`` positions of row 0 when the batch has several rows."""
    mask = torch.ones(batch, length, dtype=torch.int64)
    if batch > 1 and length > pad:
        mask[0, :pad] = 0
    return mask


def position_ids_from_mask(mask: torch.Tensor, sequence: int) -> torch.Tensor:
    """Positions as transformers' ``generate`` derives them: cumsum of the mask − 1, 1 at padding;
    the last ``sequence`` columns."""
    positions = mask.long().cumsum(-1) - 1
    positions = positions.masked_fill(mask == 0, 1)
    return positions[:, -sequence:]


def image_size(loaded: LoadedModel, config: Any = None) -> tuple[int, int]:
    """(height, width): the image processor's size, else the ``image_size`` of ``config`` (default:
    the model's), else 64."""
    config = config if config is not None else loaded.model.config
    if loaded.folder is not None and (loaded.folder / "preprocessor_config.json").is_file():
        processor = json.loads((loaded.folder / "preprocessor_config.json").read_text())
        size = processor.get("crop_size") or processor.get("size")
        if isinstance(size, dict) and "height" in size and "width" in size:
            return int(size["height"]), int(size["width"])
        if isinstance(size, dict) and "shortest_edge" in size:
            return int(size["shortest_edge"]), int(size["shortest_edge"])
        if isinstance(size, int):
            return size, size
    value = getattr(config, "image_size", None)
    if isinstance(value, int):
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    return DEFAULT_IMAGE, DEFAULT_IMAGE


@contextlib.contextmanager
def probe_mode(model: torch.nn.Module) -> Iterator[None]:
    """Where the shape probes of ``model`` run: in plain eager, or for a meta-device model (the
    streamed path) on fake tensors, all its tensors on ``meta`` (:func:`onnxport.hf.meta.all_on_meta`),
    so that transformers skips its data-dependent shortcuts (``padding_mask.all()`` in
    ``masking_utils``) as under torch.export; transformers' method caches off in both
    (:func:`onnxport.capture.patches.transformers_method_caches_off`: a probe on fake tensors
    would leave them holding fake outputs) and attributes left holding fake tensors put back
    (:func:`onnxport.capture.fake_leaks.fake_tensors_undone`); the model's Python-number state restored after
    (:func:`onnxport.verify.ties.kept_state`: a Swin probe at a small image kept its shift off);
    on fake tensors (with a shape environment, so that a value read from a tensor is an unbacked
    size, not an error: JetMoE routes with ``.tolist()`` of its expert counts), experts that loop
    over the experts hit run densely
    (:func:`onnxport.capture.patches.dense_experts`) and tests of whether activations are finite
    are decided as finite (:class:`onnxport.capture.finite.AssumedFinite`) and audio codecs pad
    with Python ints (:func:`onnxport.capture.patches.integer_conv1d_padding`: their tensor-buffer pads
    are data-dependent sizes on fake tensors). Dynamic-NTK rotary embeddings take their frequencies
    from the positions in the graph (:func:`onnxport.hf.rope.positions_driven_dynamic_rope`)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(module_caches_kept(model))
        stack.enter_context(fake_tensors_undone(model))
        stack.enter_context(kept_state(model))
        stack.enter_context(transformers_method_caches_off())
        stack.enter_context(positions_driven_dynamic_rope(model))  # as the decoder step runs it
        if any(p.device.type == "meta" for p in model.parameters()):
            stack.enter_context(meta.all_on_meta(model))
            stack.enter_context(FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv()))
            stack.enter_context(dense_experts())  # their nonzero cannot run on fake tensors
            stack.enter_context(AssumedFinite())  # BART's float16 clamp tests isfinite(...).all()
            stack.enter_context(integer_conv1d_padding())  # codecs' pads from tensor buffers
        yield


@contextlib.contextmanager
def module_caches_kept(model: torch.nn.Module) -> Iterator[None]:
    """Every dict attribute of ``model``'s submodules restored on exit to what it held on entry.

    Some models cache derived tensors in a dict on the module (LeViT's ``attention_bias_cache``,
    keyed by device): filled during a probe on fake tensors or during the capture, it handed those
    tensors to the next run instead of recomputing them from the weights (the capture lifted them as
    14 constants no checkpoint holds)."""
    saved = [
        (value, dict(value))
        for module in model.modules()
        for name, value in vars(module).items()
        if isinstance(value, dict) and not name.startswith("_")
    ]
    try:
        yield
    finally:
        for current, before in saved:
            current.clear()
            current.update(before)
