"""Tensor creation, shape and layout, indexing and scatter, sorting and unique values, dtype conversion, padding.

The modules are imported and registered by :mod:`onnxport.ops`."""
