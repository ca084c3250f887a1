"""Capture-time library patches: transformers' method LRU caches bypassed on fake tensors, tensors
built from symbolic sizes, and Chroma's batch kept dynamic."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.export import Dim

import onnxport
from onnxport.capture.patches import (
    library_patches,
    symbolic_max_pool1d,
    tf_same_padding,
    transformers_method_caches_off,
)

pytest.importorskip("transformers")


def _anchors_class() -> type:
    from transformers.pytorch_utils import compile_compatible_method_lru_cache

    class Anchors:
        """RT-DETR's ``_cached_generate_anchors`` pattern: anchors cached per grid size."""

        @staticmethod
        @compile_compatible_method_lru_cache(maxsize=4)
        def anchors(side: int) -> torch.Tensor:
            return torch.arange(side, dtype=torch.float32) / side

    return Anchors


def test_a_fake_tensor_probe_leaves_no_fake_tensor_in_the_cache() -> None:
    leaky = _anchors_class()
    with FakeTensorMode():
        leaky.anchors(4)
    assert isinstance(leaky.anchors(4), FakeTensor)  # what the eager validation got back before

    fixed = _anchors_class()
    for scope in (transformers_method_caches_off, library_patches):
        with scope(), FakeTensorMode():
            fixed.anchors(4)
        value = fixed.anchors(4)
        assert not isinstance(value, FakeTensor)
        torch.testing.assert_close(value, torch.tensor([0.0, 0.25, 0.5, 0.75]))


class GridFromSizes(torch.nn.Module):
    """Mask2Former's pixel decoder in small: the feature map's sizes as a tensor
    (``torch.as_tensor``, ``torch.tensor``) and reference points from ``torch.linspace`` over them."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        height, width = x.shape[2], x.shape[3]
        shapes = torch.as_tensor([(height, width)], dtype=torch.long)
        normalizer = torch.tensor([[width, height]], dtype=torch.float32)
        rows = torch.linspace(0.5, height - 0.5, height, dtype=torch.float32)
        cols = torch.linspace(0.5, width - 0.5, width, dtype=torch.float32)
        grid = torch.stack(torch.meshgrid(rows, cols, indexing="ij"), -1) / normalizer
        return shapes.prod(-1) * x.mean((1, 2, 3)), grid.unsqueeze(0) * x.mean()


def test_tensors_built_from_symbolic_sizes_stay_dynamic() -> None:
    """Without the patches torch.export evaluates the sizes to the example's (7x9) under guards and
    the runtime check raises a DynamicShapesError; with them the graph is general."""
    import onnxport

    model = GridFromSizes().eval()
    x = torch.rand(2, 3, 7, 9)
    program = onnxport.export(model, (x,), dynamic_shapes={"x": {0: "batch", 2: "height", 3: "width"}})
    other = torch.rand(1, 3, 12, 5)
    actual = program(other)
    expected = model(other)
    assert actual[1].shape == (1, 12, 5, 2)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(torch.as_tensor(a), e, rtol=1e-6, atol=1e-6)
    with library_patches():  # outside a capture they are torch's own
        assert torch.equal(torch.linspace(0.5, 3.5, 4), torch.tensor([0.5, 1.5, 2.5, 3.5]))
        assert torch.as_tensor([(2, 3)]).dtype == torch.int64


class PoolByPairs(torch.nn.Module):
    """Gemma 4's vision pooler in small: each position one-hot among ``N / 2`` cells (a symbolic
    ``num_classes``), the cells averaged."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cells = torch.arange(x.shape[0], device=x.device) // 2
        weights = torch.nn.functional.one_hot(cells, x.shape[0] // 2).to(x.dtype) / 2
        return weights.T @ x


def test_one_hot_with_a_symbolic_num_classes_stays_dynamic() -> None:
    """ATen's one_hot takes an ``int``: without the patch the graph held the example's 3 cells and
    returned 3 rows for 12 positions."""
    import onnxport

    model = PoolByPairs().eval()
    program = onnxport.export(model, (torch.rand(6, 4),), dynamic_shapes={"x": {0: 2 * torch.export.Dim("cells")}})
    other = torch.rand(12, 4)
    (actual,) = (torch.as_tensor(o) for o in program(other))
    assert actual.shape == (6, 4)
    torch.testing.assert_close(actual, other.reshape(6, 2, 4).mean(1), rtol=1e-6, atol=1e-6)
    with library_patches():  # outside a capture with an int: torch's own
        assert torch.nn.functional.one_hot(torch.tensor([2, 0]), 3).tolist() == [[0, 0, 1], [1, 0, 0]]


def test_torch_caches_keep_the_real_constructors(tmp_path) -> None:  # noqa: ANN001
    """A ``with torch.device(...)`` block first entered during a capture used to cache the
    replaced ``torch.tensor`` in torch's device-constructor table: afterwards ``torch.tensor`` ignored
    device contexts for the whole process, and transformers' ``from_pretrained`` (built under
    ``torch.device("meta")``) left BERT's non-persistent ``position_ids`` uninitialized."""
    import torch.utils._device as device_context
    import transformers

    config = transformers.BertConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37,
        max_position_embeddings=64,
    )
    transformers.BertForMaskedLM(config).save_pretrained(tmp_path)
    device_context._device_constructors.cache_clear()  # as in a fresh process
    try:
        with library_patches(), torch.device("meta"):  # a model that builds tensors on a device context
            assert torch.tensor([1.0]).device.type == "meta"
        with torch.device("meta"):
            assert torch.tensor([]).device.type == "meta"
        with torch.device("cpu"):  # memory the buffer would be given without initialization
            junk = [torch.full((64,), 7, dtype=torch.int64) for _ in range(256)]
        del junk
        loaded = transformers.BertForMaskedLM.from_pretrained(tmp_path)
        assert loaded.bert.embeddings.position_ids.tolist() == [list(range(64))]
    finally:
        device_context._device_constructors.cache_clear()



def test_a_module_cast_to_its_own_dtype_on_fake_parameters() -> None:
    """NLLB-MoE's router casts its classifier to its own dtype in every forward; on the fake
    parameters of a streamed model's capture, ``Module.to`` failed ("Couldn't swap")."""
    mode = FakeTensorMode()
    layer = torch.nn.Linear(4, 3)
    with mode:
        for name, p in list(layer.named_parameters()):
            setattr(layer, name, torch.nn.Parameter(mode.from_tensor(p), requires_grad=False))
        with library_patches():
            assert layer.to(torch.float32) is layer
            assert isinstance(layer.weight, FakeTensor) and layer.weight.dtype == torch.float32
    assert torch.nn.Module.to.__module__ == "torch.nn.modules.module"  # restored
    real = torch.nn.Linear(4, 3)
    with library_patches():  # a cast that changes the dtype still casts
        assert real.to(torch.float64).weight.dtype == torch.float64


def _assert_denoises_like_eager(model: torch.nn.Module, program: Any, feeds: dict[str, torch.Tensor],
                                shape: tuple[int, ...]) -> None:
    """The program's first output on ``feeds`` has ``shape`` and equals the diffusers model's."""
    with torch.no_grad():
        expected = model(**feeds, return_dict=False)[0]
    got = torch.as_tensor(program(**feeds)[0])
    assert got.shape == expected.shape == shape
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)


def test_chroma_batch_stays_dynamic() -> None:
    """A tiny Chroma transformer (diffusers 0.42), whose timestep embedding builds its guidance from
    ``torch.tensor([0] * batch_size)``: exported at batch 2, the graph matches eager at batch 3 and
    1 with other image and text lengths (before the patch: DynamicShapesError, the batch fixed to
    2). Its attention's ``batch != 1`` guard is relaxed to Dim.DYNAMIC with a warning."""
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.ChromaTransformer2DModel(
        patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=16, num_attention_heads=2,
        joint_attention_dim=32, axes_dims_rope=(4, 6, 6), approximator_num_channels=16, approximator_hidden_dim=32,
        approximator_layers=1,
    ).eval()  # fmt: skip

    def inputs(batch: int, height: int, width: int, text: int) -> dict[str, torch.Tensor]:
        grid = torch.meshgrid(torch.zeros(1), torch.arange(float(height)), torch.arange(float(width)), indexing="ij")
        return {"hidden_states": torch.randn(batch, height * width, 16), "encoder_hidden_states": torch.randn(batch, text, 32),
                "timestep": torch.rand(batch), "img_ids": torch.stack(grid, -1).reshape(-1, 3),
                "txt_ids": torch.zeros(text, 3)}  # fmt: skip

    batch, image, text = Dim("batch_size", max=16), Dim("image", min=2, max=4096), Dim("text", min=2, max=512)
    dynamic = {"hidden_states": {0: batch, 1: image}, "encoder_hidden_states": {0: batch, 1: text},
               "timestep": {0: batch}, "img_ids": {0: image}, "txt_ids": {0: text}}  # fmt: skip
    with pytest.warns(UserWarning, match=r"Dim.DYNAMIC .*batch_size.*!= 1"):  # its attention's guard, relaxed
        program = onnxport.export(model, (), kwargs=inputs(2, 4, 6, 7), dynamic_shapes=dynamic)
    assert [str(d) for d in program.model.graph.inputs[0].shape] == ["batch_size", "image", "16"]
    for size in [(3, 3, 5, 9), (1, 2, 4, 3)]:
        _assert_denoises_like_eager(model, program, inputs(*size), (size[0], size[1] * size[2], 16))


def test_cogvideox_exports_with_dynamic_frames_and_sides() -> None:
    """A tiny CogVideoX transformer (diffusers 0.42): its patch embedding adds the registered 3-D
    sin-cos table at the configured sample size and rebuilds it in place elsewhere. Exported at the
    configured size with dynamic batch, latent frames, height and width, the graph matches eager at
    other sizes (before the patches: "Constant ... is mutated in the forward method")."""
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.CogVideoXTransformer3DModel(
        num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4, time_embed_dim=2,
        text_embed_dim=8, num_layers=2, sample_width=8, sample_height=8, sample_frames=8, patch_size=2,
        temporal_compression_ratio=4, max_text_seq_length=8,
    ).eval()  # fmt: skip

    def inputs(batch: int, frames: int, height: int, width: int) -> dict[str, torch.Tensor]:
        return {"hidden_states": torch.randn(batch, frames, 4, height, width),
                "encoder_hidden_states": torch.randn(batch, 8, 8), "timestep": torch.randint(0, 1000, (batch,))}  # fmt: skip

    batch, frames = Dim("batch_size", max=16), Dim("frames", min=1, max=32)
    half_h, half_w = Dim("half_height", min=1, max=64), Dim("half_width", min=1, max=64)
    dynamic = {"hidden_states": {0: batch, 1: frames, 3: 2 * half_h, 4: 2 * half_w},
               "encoder_hidden_states": {0: batch}, "timestep": {0: batch}}  # fmt: skip
    program = onnxport.export(model, (), kwargs=inputs(2, 2, 8, 8), dynamic_shapes=dynamic)
    dims = [str(d) for d in program.model.graph.inputs[0].shape]
    assert dims == ["batch_size", "frames", "4", "2*half_height", "2*half_width"]
    for size in [(3, 3, 10, 6), (1, 1, 4, 12)]:
        _assert_denoises_like_eager(model, program, inputs(*size), (size[0], size[1], 4, size[2], size[3]))


@pytest.mark.slow  # 17 s, one diffusers video model's attention: kept out of the default run's time budget
def test_mochi_attention_keeps_the_batch_and_the_prompt_masks() -> None:
    """A tiny Mochi transformer (diffusers 0.42), whose attention loops over the batch and gathers
    each prompt's valid tokens with ``nonzero``: before, the batch was fixed to the example's.
    Exported at batch 2 with dynamic batch, frames, height, width and prompt length, the graph
    matches eager at other sizes with prompts masked in places (padding inside and at the end)."""
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.MochiTransformer3DModel(
        patch_size=2, num_attention_heads=2, attention_head_dim=8, num_layers=2, pooled_projection_dim=16,
        in_channels=4, qk_norm="rms_norm", text_embed_dim=16, time_embed_dim=4, max_sequence_length=16,
    ).eval()  # fmt: skip

    def inputs(batch: int, frames: int, height: int, width: int, text: int, masked: bool) -> dict[str, torch.Tensor]:
        mask = torch.ones(batch, text, dtype=torch.bool)
        if masked:
            mask[0, -3:] = False  # padding at the end
            mask[-1, 1:3] = False  # and inside
        return {"hidden_states": torch.randn(batch, 4, frames, height, width),
                "encoder_hidden_states": torch.randn(batch, text, 16),
                "timestep": torch.randint(0, 1000, (batch,)), "encoder_attention_mask": mask}  # fmt: skip

    batch, frames, text = Dim("batch_size", max=16), Dim("frames", max=16), Dim("text", min=4, max=64)
    half_h, half_w = Dim("half_height", min=2, max=64), Dim("half_width", min=2, max=64)
    dynamic = {"hidden_states": {0: batch, 2: frames, 3: 2 * half_h, 4: 2 * half_w},
               "encoder_hidden_states": {0: batch, 1: text}, "timestep": {0: batch},
               "encoder_attention_mask": {0: batch, 1: text}}  # fmt: skip
    program = onnxport.export(model, (), kwargs=inputs(2, 2, 8, 8, 16, masked=False), dynamic_shapes=dynamic)
    for size in [(3, 3, 6, 10, 12), (1, 2, 8, 4, 9)]:
        _assert_denoises_like_eager(model, program, inputs(*size, masked=True), (size[0], 4, *size[1:4]))


def test_dit_exports_at_any_square_resolution() -> None:
    """diffusers' DiT computes its patch grid as ``int(hidden_states.shape[1] ** 0.5)``: the builtin
    ``int`` fixed it to the example's 4x4 (DynamicShapesError at 6x6); :class:`SymbolicInt` is the
    global ``int`` of diffusers' modeling modules during capture too."""
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = diffusers.DiTTransformer2DModel(
        num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=4, num_layers=1, sample_size=8,
        patch_size=2, num_embeds_ada_norm=10, norm_num_groups=1,
    ).eval()  # fmt: skip

    class Denoise(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return self.model(x, timestep=t, class_labels=y, return_dict=False)[0]

    side = Dim("side", min=2, max=64)
    example = (torch.randn(2, 4, 8, 8), torch.tensor([3, 5]), torch.tensor([1, 2]))
    program = onnxport.export(Denoise(), example, dynamic_shapes=({0: "batch", 2: 2 * side, 3: 2 * side}, {0: "batch"},
                                                                  {0: "batch"}))
    other = (torch.randn(3, 4, 12, 12), torch.tensor([1, 2, 3]), torch.tensor([0, 1, 2]))
    with torch.no_grad():
        expected = Denoise()(*other)
    (got,) = program(*other)
    assert got.shape == (3, 4, 12, 12)
    torch.testing.assert_close(torch.as_tensor(got), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("kernel", "stride", "dilation"), [(3, 1, 1), (3, 2, 1), (1, 1, 1), (1, 2, 1), (5, 2, 2), (2, 2, 1), (7, 4, 1)])
def test_tf_same_padding_pads_as_transformers(kernel: int, stride: int, dilation: int) -> None:
    """The patch's pads (TensorFlow's form where ``kernel >= stride``) equal transformers'
    ``apply_tf_padding`` at every size 1..40, MobileNetV2's dilated variant included."""
    from transformers.models.mobilenet_v2 import modeling_mobilenet_v2 as v2

    conv = torch.nn.Conv2d(1, 1, kernel, stride=stride, dilation=dilation)
    for h, w in [(size, 41 - size) for size in range(1, 41)]:
        x = torch.randn(1, 1, h, w)
        expected = v2.apply_tf_padding(x, conv)
        actual = tf_same_padding(x, conv, dilate=True)
        assert actual.shape == expected.shape
        assert torch.equal(actual, expected)


class _Pools1d(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = torch.nn.MaxPool1d(3, 2, 1, ceil_mode=True, return_indices=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.nn.functional.max_pool1d(x, 3, 2, 1), torch.nn.functional.max_pool1d(x, 2), *self.pool(x)


def test_max_pool1d_over_a_dynamic_length_stays_dynamic() -> None:
    """torch 2.13's max_pool1d fixes the length to the example's ("specialized it to be a constant",
    torch.export alone too: CANINE's downsampling); captured as max_pool2d over a row of 1."""
    model = _Pools1d()
    program = onnxport.export(model, (torch.randn(2, 4, 17),), dynamic_shapes={"x": {0: "batch", 2: "length"}})
    for shape in ((2, 4, 17), (3, 4, 30)):
        x = torch.randn(*shape)
        expected = model(x)
        actual = program(x)
        assert [tuple(a.shape) for a in actual] == [tuple(e.shape) for e in expected]
        for a, e in zip(actual, expected):
            torch.testing.assert_close(torch.as_tensor(a), e, rtol=0, atol=0)
    assert torch.nn.functional.max_pool1d is not symbolic_max_pool1d  # restored after the capture
