"""Block-wise weight-only quantization of a ``[K, N]`` MatMul weight into MatMulNBits' layout.

Layout and arithmetic follow onnxruntime's ``com.microsoft.MatMulNBits`` (docs/ContribOperators.md)
and the MLAS quantizer its Python tooling calls (``onnxruntime/core/mlas/lib/q4_dq.cpp``,
``range2scale`` / ``range2scalezp``), so the bytes equal ``quantize_matmul_4bits`` /
``quantize_matmul_8bits`` for the same weight (tests/passes/ort/test_matmul_nbits.py checks both a
plain numpy loop and MLAS):

- the weight is read per output column ``n`` in blocks of ``block_size`` rows along ``K``
  (``K`` padded with zeros to a whole number of blocks);
- symmetric: ``scale = m / -2**(bits-1)`` where ``m`` is the block's value of largest magnitude
  (signed), zero point ``2**(bits-1)`` (implicit: not stored);
- asymmetric: ``min``/``max`` widened to include 0, ``scale = (max - min) / (2**bits - 1)``,
  ``zero_point = round(-min / scale)`` clamped to ``[0, 2**bits - 1]``;
- ``q = clamp(round_half_away(w * (1 / scale) + zero_point), 0, 2**bits - 1)`` (``1 / 0 → 0``),
  with the bytes of the padding rows past ``K`` left 0;
- 4 bits: two values per byte, the first in the low nibble; zero points packed the same way per
  column, an odd block count padded with the default zero point 8 (as MLAS does).

Dequantized: ``W[k, n] = (q[n, k] - zero_point[n, k // block]) * scale[n, k // block]``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

BLOCK_SIZES = (16, 32, 64, 128, 256)
BITS = (4, 8)


@dataclasses.dataclass(frozen=True)
class Quantized:
    """MatMulNBits' constant inputs for one weight.

    Attributes:
        packed: uint8 ``[N, k_blocks, block_size * bits / 8]``.
        scales: float32 ``[N, k_blocks]``.
        zero_points: uint8 ``[N, ceil(k_blocks * bits / 8)]`` (asymmetric only, else ``None``).
    """

    packed: np.ndarray
    scales: np.ndarray
    zero_points: np.ndarray | None


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """C's ``roundf`` (ties away from zero), not numpy's ties-to-even."""
    return np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))


def _pack(q: np.ndarray, bits: int, pad: int = 0) -> np.ndarray:
    """Pack the last axis of uint8 ``q`` (values < 2**bits) into bytes, first value lowest; an odd
    count is completed with ``pad``."""
    if bits == 8:
        return q
    if q.shape[-1] % 2:
        q = np.concatenate([q, np.full((*q.shape[:-1], 1), pad, np.uint8)], axis=-1)
    return (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)


def quantize(
    weight: np.ndarray, bits: int = 4, block_size: int = 32, symmetric: bool = True
) -> Quantized:
    """:func:`quantize_numpy`, computed by onnxruntime's multi-threaded MLAS quantizer when the
    installed onnxruntime has it (same bytes, ~4x faster), else by numpy."""
    try:  # heavy optional dependency: onnxruntime's native quantizer
        from onnxruntime.capi import _pybind_state  # heavy: MLAS quantizer, loaded on first use
    except ImportError:
        return quantize_numpy(weight, bits, block_size, symmetric)
    native = getattr(_pybind_state, f"quantize_matmul_{bits}bits", None)
    if native is None or weight.ndim != 2 or bits not in BITS or block_size not in BLOCK_SIZES:
        return quantize_numpy(weight, bits, block_size, symmetric)
    k, n = weight.shape
    blocks = -(-k // block_size)
    packed = np.zeros((n, blocks, block_size * bits // 8), np.uint8)
    scales = np.zeros((n, blocks), np.float32)
    zero_points = np.zeros((n, -(-blocks * bits // 8)), np.uint8)
    source = np.ascontiguousarray(weight, dtype=np.float32)
    native(packed, source, scales, zero_points, block_size, n, k, symmetric)
    return Quantized(packed, scales, None if symmetric else zero_points)


def quantize_numpy(
    weight: np.ndarray, bits: int = 4, block_size: int = 32, symmetric: bool = True
) -> Quantized:
    """Quantize a ``[K, N]`` float weight (the MatMul's second input) block-wise along ``K``.

    Args:
        weight: float32 (or float16/bfloat16 read as float32) ``[K, N]``.
        bits: 4 or 8.
        block_size: One of :data:`BLOCK_SIZES`.
        symmetric: Symmetric (implicit zero point) or asymmetric (stored zero points).

    Returns:
        The packed weights, scales and zero points (see the module docstring for the formula).

    Raises:
        ValueError: ``weight`` is not 2-D, or ``bits``/``block_size`` is not supported.
    """
    if weight.ndim != 2:
        raise ValueError(f"block quantization needs a 2-D [K, N] weight, got shape {weight.shape}")
    if bits not in BITS or block_size not in BLOCK_SIZES:
        raise ValueError(f"bits must be one of {BITS} and block_size one of {BLOCK_SIZES}")
    k, n = weight.shape
    blocks = -(-k // block_size)
    columns = np.zeros((n, blocks * block_size), np.float32)
    columns[:, :k] = weight.T
    grid = columns.reshape(n, blocks, block_size)
    qmax = np.float32((1 << bits) - 1)
    low = np.minimum(grid.min(-1), np.float32(0))
    high = np.maximum(grid.max(-1), np.float32(0))
    if symmetric:
        extreme = np.where(np.abs(high) > np.abs(low), high, low)
        scales = (extreme / np.float32(-(1 << (bits - 1)))).astype(np.float32)
        zero = np.full(scales.shape, np.float32(1 << (bits - 1)))
    else:
        scales = ((high - low) / qmax).astype(np.float32)
        safe = np.where(scales != 0, scales, np.float32(1))
        zero_fp = np.where(scales != 0, np.float32(0) - low / safe, low)
        zero = np.clip(np.floor(zero_fp + np.float32(0.5)), 0, qmax).astype(np.float32)
    with np.errstate(divide="ignore"):
        reciprocal = np.where(scales != 0, np.float32(1) / scales, np.float32(0)).astype(np.float32)
    values = grid * reciprocal[..., None] + zero[..., None]
    q = np.clip(_round_half_away(values), 0, qmax).astype(np.uint8).reshape(n, -1)
    q[:, k:] = 0  # the padding past K stays zero, as MLAS leaves it
    q = q.reshape(n, blocks, block_size)
    # An odd block count leaves half a zero-point byte: MLAS fills it with the default zero point.
    zero_points = None if symmetric else _pack(zero.astype(np.uint8), bits, pad=1 << (bits - 1))
    return Quantized(_pack(q, bits), scales, zero_points)


def dequantize(quantized: Quantized, k: int, bits: int, block_size: int) -> np.ndarray:
    """The float32 ``[K, N]`` weight MatMulNBits computes with (for error reports and tests)."""
    packed = quantized.packed
    if bits == 4:
        q = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(*packed.shape[:2], -1)
    else:
        q = packed
    n, blocks = quantized.scales.shape
    if quantized.zero_points is None:
        zero = np.full((n, blocks), 1 << (bits - 1), np.float32)
    elif bits == 4:
        zp = quantized.zero_points
        zero = np.stack([zp & 0x0F, zp >> 4], axis=-1).reshape(n, -1)[:, :blocks].astype(np.float32)
    else:
        zero = quantized.zero_points.astype(np.float32)
    values = (q.astype(np.float32) - zero[..., None]) * quantized.scales[..., None]
    return values.reshape(n, blocks * block_size)[:, :k].T.copy()
