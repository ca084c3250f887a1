"""Special functions in float64 after Cephes: gamma family, incomplete gamma, Bessel functions, orthogonal polynomials, error-function inverses.

The modules are imported and registered by :mod:`onnxport.ops`."""
