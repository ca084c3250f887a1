"""onnxport's version (a leaf module: the report and the ONNX producer_version read it)."""

__version__ = "0.1.0"
