"""Give every graph output its own value: a model returning one tensor twice gets an Identity.

onnx_ir's identity elimination merges ``y = Identity(x)`` into ``x`` when ``y`` is a graph output,
which can leave the same value listed as two outputs with one name; this pass splits them again,
in the main graph and in every subgraph. In a ``Scan`` body the merge also happened: a step
returning its new carry and ``carry.clone()`` as the scanned output (RecurrentGemma's RG-LRU,
``capture/rg_lru.py``) listed one value as both, and onnxruntime 1.31 then computed wrong values
for both outputs (max abs diff 3.0 on a 7-step recurrence) instead of refusing the model.
"""

from __future__ import annotations

import onnx_ir as ir

from onnxport.passes.graphs import all_graphs


def _split_repeats(graph: ir.Graph) -> bool:
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
    return modified


class DistinctOutputsPass(ir.passes.InPlacePass):
    """Repeated outputs of the graph, a function or a subgraph become distinct Identity outputs
    named ``<name>_<i>``.

    Args:
        output_names: The main graph's output names before the pipeline: they are given back
            (identity elimination renamed the merged value after the last of the outputs it
            became: a model returning ``y, y`` as ``a, b`` had outputs ``b, b_1``).
    """

    def __init__(self, output_names: list[str | None] | None = None) -> None:
        super().__init__()
        self.output_names = output_names

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for graph in list(all_graphs(model)):
            modified |= _split_repeats(graph)
        outputs = model.graph.outputs
        if self.output_names is not None and len(self.output_names) == len(outputs):
            for value, name in zip(outputs, self.output_names, strict=True):
                if name is not None and value.name != name:
                    value.name, modified = name, True
        return ir.passes.PassResult(model, modified)
