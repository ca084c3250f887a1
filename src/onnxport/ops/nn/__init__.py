"""torch.nn ops: activations, attention, convolution, normalization, pooling, resampling, their backward ops, random tensors and dropout.

The modules are imported and registered by :mod:`onnxport.ops`."""
