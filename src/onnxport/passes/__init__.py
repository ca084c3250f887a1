"""Graph passes run after translation (``optimize=True``), one pass per file.

The cleanup passes are onnx_ir's own (``onnx_ir.passes.common``); onnxport adds constant folding
and fusions to standard ONNX ops (``passes/fusions/``).
"""

from __future__ import annotations

from collections.abc import Iterable

import onnx_ir as ir
import onnx_ir.passes.common as common

from onnxport.passes.constant_folding import FoldConstantsPass
from onnxport.passes.distinct_outputs import DistinctOutputsPass
from onnxport.passes.fusions.conv_batchnorm import ConvBatchNormPass
from onnxport.passes.fusions.no_op import NoOpPass
from onnxport.passes.fusions.repeat_kv import RepeatKVPass
from onnxport.passes.fusions.rms_norm import RMSNormFusionPass
from onnxport.passes.fusions.unsqueeze_chain import UnsqueezeChainPass
from onnxport.passes.module_functions import ModuleFunctionsPass
from onnxport.passes.weight_layout import WeightLayoutPass


def optimize(model: ir.Model, modules_as_functions: Iterable[str | type] | None = None) -> ir.Model:
    """Run onnxport's default pass pipeline on ``model`` in place and return it.

    Args:
        modules_as_functions: Module types to outline as ONNX local functions; done before CSE
            so that identical blocks keep identical bodies.
    """
    outline = [ModuleFunctionsPass(modules_as_functions)] if modules_as_functions else []
    passes = ir.passes.PassManager(
        [
            WeightLayoutPass(),
            FoldConstantsPass(),
            common.RemoveUnusedNodesPass(),  # fusions match single-use values
            ConvBatchNormPass(),
            RMSNormFusionPass(),
            *outline,
            common.IdentityEliminationPass(),
            NoOpPass(),  # before the Unsqueeze chains: a no-op between two no longer splits one
            UnsqueezeChainPass(),  # after Identity elimination: a full slice between two no longer splits a chain
            common.CommonSubexpressionEliminationPass(),
            RepeatKVPass(),  # after CSE: the repeats of one cache shared by several attentions are one
            common.RemoveUnusedNodesPass(),
            common.LiftConstantsToInitializersPass(lift_all_constants=True, size_limit=0),
            common.RemoveUnusedOpsetsPass(),
            DistinctOutputsPass([v.name for v in model.graph.outputs]),
        ]
    )
    passes(model)
    return model
