"""Elementwise ops: arithmetic, comparison and logic (1:1 ONNX ops), floating-point functions beyond them, integer algorithms.

The modules are imported and registered by :mod:`onnxport.ops`."""
