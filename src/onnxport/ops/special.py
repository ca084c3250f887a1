"""Special functions with no ONNX operator (torch.special, lgamma, digamma, Bessel functions,
orthogonal polynomials): each is evaluated from a published approximation, cited in its docstring."""

from __future__ import annotations
