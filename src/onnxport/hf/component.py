"""Capture and translate one component of a Hugging Face export (both paths: a loaded model in
:mod:`onnxport.hf.export`, a meta-device model in :mod:`onnxport.hf.streamed`)."""

from __future__ import annotations

import contextlib
from typing import Any

from onnxport._export import export as export_program
from onnxport.capture.strategies import uncached_fake_tensors
from onnxport.hf import cache as wrappers
from onnxport.hf import inputs as hf_inputs
from onnxport.hf import moe
from onnxport.hf.parts import module_caches_kept
from onnxport.passes.cache_branch import branch_on_flag


def export_component(part: hf_inputs.Component, opset_version: int | None, optimize: bool, target: str | None) -> Any:
    """The :class:`onnxport.ONNXProgram` of ``part`` exported at :data:`hf_inputs.EXPORT_SIZES`
    (a meta model's inputs are moved to meta by ``onnxport.export``), captured without the
    FakeTensor cache (:func:`~onnxport.capture.strategies.uncached_fake_tensors`) and with the
    modules' own dict caches restored after it (:func:`~onnxport.hf.parts.module_caches_kept`); for the
    onnxruntime target its mixture-of-experts layers become ``com.microsoft.MoE``
    (:mod:`onnxport.hf.moe`, DBRX's too: :func:`~onnxport.hf.moe.fused_looped_experts`); a vision encoder keeps its image batch whole
    (:func:`onnxport.hf.cache.image_batch_kept_whole`). The component's wrapper module (made by
    onnxport, so in training mode as every new ``torch.nn.Module``) is put in eval mode, as its
    model already is (both paths load it so): otherwise every export warned that the model was in
    training mode."""
    part.module.eval()
    ort = target == "onnxruntime"
    fused = moe.fused_experts(part.module) if ort else contextlib.nullcontext()
    looped = moe.fused_looped_experts(part.module) if ort else contextlib.nullcontext()
    with fused, looped, uncached_fake_tensors(), module_caches_kept(part.module), wrappers.image_batch_kept_whole(part.module):
        program = export_program(
            part.module,
            (),
            part.capture_inputs(hf_inputs.EXPORT_SIZES),
            dynamic_shapes=part.dynamic_shapes,
            input_names=part.input_names,
            output_names=part.output_names,
            opset_version=opset_version,
            optimize=optimize,
            check_runtime=part.resizable,
        )
    if part.branch is not None:
        branch = part.branch
        branch_on_flag(program.model, branch.outputs, branch.inputs, branch.flag, dict(branch.dims))
        program.release()  # the export's verification session ran the graph before the branch
    return program
