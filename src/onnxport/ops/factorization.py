"""Matrix factorizations and triangular solves (Cholesky, LU, LDLᵀ, QR, triangular systems),
unrolled over a static matrix size with ONNX tensor ops."""

from __future__ import annotations
