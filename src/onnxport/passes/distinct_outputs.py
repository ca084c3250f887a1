"""Give every graph output its own value: a model returning one tensor twice gets an Identity.

onnx_ir's identity elimination merges ``y = Identity(x)`` into ``x`` when ``y`` is a graph output,
which can leave the same value listed as two outputs with one name; this pass splits them again.
"""

from __future__ import annotations

import onnx_ir as ir


class DistinctOutputsPass(ir.passes.InPlacePass):
    """Repeated graph outputs become distinct Identity outputs named ``<name>_<i>``."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        graph = model.graph
        seen: set[int] = set()
        modified = False
        for i, value in enumerate(list(graph.outputs)):
            if id(value) in seen:
                copy = ir.Node("", "Identity", [value], num_outputs=1)
                producer = value.producer()
                if producer is not None:
                    copy.metadata_props.update(producer.metadata_props)
                graph.append(copy)
                out = copy.outputs[0]
                out.type, out.shape = value.type, value.shape
                out.metadata_props.update(value.metadata_props)
                out.name = f"{value.name}_{i}"
                graph.outputs[i] = out
                modified = True
            seen.add(id(value))
        return ir.passes.PassResult(model, modified)
