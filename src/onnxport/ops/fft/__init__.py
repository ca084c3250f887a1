"""Discrete Fourier transforms and the complex-number ops (complex tensors carried as real tensors with a trailing dimension of 2).

The modules are imported and registered by :mod:`onnxport.ops`."""
