"""Control flow (cond, while_loop, scan → If, Loop, Scan) and symbolic-shape (SymInt) arithmetic.

The modules are imported and registered by :mod:`onnxport.ops`."""
