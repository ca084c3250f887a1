"""Symmetric eigen-decomposition and what is built on it or on the singular value decomposition
(eigvalsh, pinv, lstsq, nuclear norm) and the matrix exponential, unrolled over a static matrix size."""

from __future__ import annotations
