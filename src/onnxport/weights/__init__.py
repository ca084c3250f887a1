"""Weights: where each initializer's bytes come from and how they reach the file.

* :mod:`~onnxport.weights.sources` — a torch tensor, a tensor of a ``.safetensors`` file (mmap),
  a shard folder (``model.safetensors.index.json``), or missing (fake/meta export);
* :mod:`~onnxport.weights.tensor` — :class:`WeightTensor`, the initializer carrier produced on
  demand, and :func:`derive`, how a pass records a transform instead of reading values;
* :mod:`~onnxport.weights.table` — the program's slots (state_dict key → source) and
  ``apply_weights``;
* :mod:`~onnxport.weights.save` — the streaming, atomic writer of ``model.onnx`` + external data.
"""

from onnxport.weights.sources import open_weights
from onnxport.weights.table import WeightTable, adopt, apply, tie
from onnxport.weights.tensor import (
    Slot,
    WeightTensor,
    cast,
    columns,
    concatenated,
    derive,
    derive_many,
    has_data,
    is_weight,
    reshaped,
    transposed,
)

__all__ = [
    "Slot",
    "WeightTable",
    "WeightTensor",
    "adopt",
    "apply",
    "cast",
    "columns",
    "concatenated",
    "derive",
    "derive_many",
    "has_data",
    "is_weight",
    "open_weights",
    "reshaped",
    "tie",
    "transposed",
]
