"""The one place a fusion builds a weight derived from another weight, lazily.

Issue 12 adds ``onnxport.weights.derive(base, fn, *, dtype, shape, name)``, which records the
transform on the weight's source so it streams at save time. Until that lands, this helper has the
same signature on top of ``onnx_ir.LazyTensor``: ``fn(base)`` runs only when the model is
serialized (``ir.save`` writes tensor by tensor) or handed to onnxruntime. Switching is a change
of this function's body.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx_ir as ir


def derive(
    base: ir.TensorProtocol,
    fn: Callable[[ir.TensorProtocol], np.ndarray],
    *,
    dtype: ir.DataType,
    shape: tuple[int, ...],
    name: str,
) -> ir.TensorProtocol:
    """A tensor equal to ``fn(base)``, computed at serialization time.

    Args:
        base: The source weight (never read here).
        fn: Maps the source to a numpy array of ``dtype`` and ``shape``.
        dtype: Element type of the result.
        shape: Shape of the result.
        name: Initializer name.
    """

    def produce() -> ir.TensorProtocol:
        array = fn(base)
        if tuple(array.shape) != tuple(shape):
            raise ValueError(f"derived tensor {name}: expected shape {shape}, got {array.shape}")
        return ir.Tensor(array, dtype=dtype, name=name)

    return ir.LazyTensor(produce, dtype=dtype, shape=ir.Shape(shape), name=name)
