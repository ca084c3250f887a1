"""``enable_fake_mode()``: build modules whose parameters and buffers are fake (no data).

Seed 003 (``torch.onnx.enable_fake_mode``): inside the context, ``torch._subclasses.FakeTensorMode``
is active, so a model created there allocates no memory for its weights; ``onnxport.export``
captures it (with fake or real example inputs) and the :class:`onnxport.ONNXProgram` records every
weight as missing until :meth:`~onnxport.ONNXProgram.apply_weights`. ``torch.device("meta")``
works the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv


@contextlib.contextmanager
def enable_fake_mode() -> Iterator[FakeTensorMode]:
    """Context manager: modules and tensors created inside are fake (shapes/dtypes, no data).

    Yields:
        The ``torch._subclasses.fake_tensor.FakeTensorMode`` (real tensors created outside may be
        mixed in: ``allow_non_fake_inputs=True``, as torch.onnx's fake context does).

    Example:
        >>> with onnxport.enable_fake_mode():
        ...     model = MyModel()                 # no memory for the weights
        >>> program = onnxport.export(model, (torch.randn(2, 8),))
        >>> program.save("graph.onnx", include_initializers=False)
        >>> program.apply_weights("model.safetensors")    # or a state_dict / shard folder
        >>> program.save("model.onnx")
    """
    mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv(allow_dynamic_output_shape_ops=True))
    with mode:
        yield mode
