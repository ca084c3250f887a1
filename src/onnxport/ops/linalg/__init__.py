"""Linear algebra: matrix products, norms and distances, small dense solvers, factorizations (Cholesky, LU, QR, LDLᵀ) and spectral functions.

The modules are imported and registered by :mod:`onnxport.ops`."""
