"""onnxport: export PyTorch models to ONNX.

``torch.export`` captures the model, onnxport translates every ATen operator to ONNX itself (onnx_ir),
optimizes, saves (external data for big models) and verifies the result in onnxruntime.
"""

from __future__ import annotations

from onnxport._export import export
from onnxport.capture.fake_mode import enable_fake_mode
from onnxport.errors import (
    CaptureError,
    DynamicShapesError,
    InputError,
    MissingWeightsError,
    ModelCheckError,
    NodeError,
    OnnxportError,
    OpsetError,
    RuntimeCheckError,
    SaveError,
    TranslationError,
    UnsupportedOpError,
    UnsupportedOpsError,
    VerificationError,
    WeightsError,
)
from onnxport.ops import default_registry, is_registered, register_translation, translations_for
from onnxport.status import ExportStatus
from onnxport.translate.context import Ctx
from onnxport.translate.registry import Promote, Registry, Translation, translates
from onnxport.verify.api import ONNXProgram, verify
from onnxport.version import __version__

__all__ = [
    "CaptureError",
    "Ctx",
    "DynamicShapesError",
    "ExportStatus",
    "InputError",
    "MissingWeightsError",
    "ModelCheckError",
    "RuntimeCheckError",
    "NodeError",
    "ONNXProgram",
    "OnnxportError",
    "OpsetError",
    "Promote",
    "Registry",
    "SaveError",
    "TranslationError",
    "UnsupportedOpError",
    "UnsupportedOpsError",
    "VerificationError",
    "WeightsError",
    "__version__",
    "Translation",
    "default_registry",
    "enable_fake_mode",
    "export",
    "is_registered",
    "register_translation",
    "translates",
    "translations_for",
    "verify",
]
