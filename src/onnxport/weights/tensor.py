"""The initializer carrier: an ``onnx_ir.LazyTensor`` whose bytes come from a weight source
through a chain of per-tensor transforms, produced only when the tensor is written or run.

Two kinds of :class:`WeightTensor`:

* a *root*: one named weight of the module (its state_dict key), held in a :class:`Slot` whose
  source (torch tensor, safetensors file, or missing) :meth:`ONNXProgram.apply_weights` replaces;
* a *derived* tensor: ``fn(*bases)`` — a transpose, cast, reshape, BatchNorm-into-Conv fold,
  quantization — computed from other tensors when written. Because a derived tensor reads its
  bases through their slots, weights applied after the passes ran flow through every transform.

Passes never read weight values; they record a transform with :func:`derive`. The idea is
``onnx_ir.LazyTensor`` (onnx/ir-py, ``_core.py``) and onnxruntime-genai's lazy tensors in its
model builder (``builder.py``), carried to the whole export.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import onnx_ir as ir
import torch

from onnxport.errors import InputError
from onnxport.weights.sources import CastSource, MissingSource, Source


class Slot:
    """One weight of the module, by its state_dict key, and where its data comes from now.

    Attributes:
        name: The state_dict key (also the root initializer's name).
        dtype: The ONNX dtype the graph expects; applied weights must have it.
        shape: The shape the graph expects; applied weights must have it.
        source: The current :class:`onnxport.weights.sources.Source`.
        required: Whether ``apply_weights`` must provide it (parameters and persistent buffers;
            others only when they have no data).
    """

    def __init__(self, name: str, source: Source, *, required: bool = True) -> None:
        self.name = name
        self.dtype = source.dtype
        self.shape = tuple(source.shape)
        self.source = source
        self.required = required

    def __repr__(self) -> str:
        return f"Slot({self.name}, {self.dtype.name}{list(self.shape)}, {self.source.describe()})"


class WeightTensor(ir.LazyTensor):
    """An initializer produced on demand from a :class:`Slot` or from ``fn(*bases)``.

    Use :meth:`root` and :func:`derive`; the constructor is internal.
    """

    def __init__(
        self,
        *,
        dtype: ir.DataType,
        shape: Sequence[int],
        name: str,
        slot: Slot | None = None,
        bases: Sequence[ir.TensorProtocol] = (),
        fn: Callable[..., np.ndarray] | None = None,
        chunks: Callable[..., Iterator[np.ndarray]] | None = None,
    ) -> None:
        super().__init__(self._produce, dtype=dtype, shape=ir.Shape(tuple(int(d) for d in shape)), name=name)
        self.slot = slot
        self.bases = tuple(bases)
        self.fn = fn
        self.chunks = chunks
        self.perm: tuple[int, ...] | None = None  # set by :func:`transposed`: this is bases[0] permuted

    def tofile(self, file: Any) -> None:
        """Write the bytes to ``file``; a transform that streams (a transpose) or a weight
        converted as it is read (:class:`~onnxport.weights.sources.CastSource`: a bfloat16
        checkpoint exported in float32) writes block by block, so writing never holds the whole
        transformed tensor."""
        if self.chunks is not None:
            blocks = self.chunks(*(base.numpy() for base in self.bases))
        elif self.slot is not None and isinstance(self.slot.source, CastSource):
            blocks = self.slot.source.blocks(BLOCK_BYTES)
        else:
            super().tofile(file)
            return
        for block in blocks:
            file.write(np.asarray(block, order="C").reshape(-1).view(np.uint8).data)

    @classmethod
    def root(cls, slot: Slot) -> WeightTensor:
        """The initializer holding ``slot`` as it is (named after it)."""
        return cls(dtype=slot.dtype, shape=slot.shape, name=slot.name, slot=slot)

    def _produce(self) -> ir.TensorProtocol:
        if self.slot is not None:
            return self.slot.source.tensor()
        assert self.fn is not None  # a derived tensor always has its function
        out = np.asarray(self.fn(*(base.numpy() for base in self.bases)))
        expected = tuple(self.shape.numpy())
        if tuple(out.shape) != expected or out.dtype != self.dtype.numpy():
            raise InputError(
                f"The transform producing initializer {self.name} returned {out.dtype}{list(out.shape)}; "
                f"it was declared {self.dtype.name}{list(expected)}."
            )
        return ir.Tensor(np.asarray(out, order="C"), dtype=self.dtype, name=self.name)  # (ascontiguousarray makes 0-D 1-D)

    @property
    def has_data(self) -> bool:
        """Whether every weight this tensor is computed from has data (no fake/meta source)."""
        return all(s.source.has_data for s in self.slots())

    def slots(self) -> Iterator[Slot]:
        """The slots this tensor reads, itself included (duplicates possible)."""
        if self.slot is not None:
            yield self.slot
        for base in self.bases:
            if isinstance(base, WeightTensor):
                yield from base.slots()

    def __repr__(self) -> str:
        origin = repr(self.slot) if self.slot is not None else f"derived from {[b.name for b in self.bases]}"
        return f"WeightTensor({self.name}, {self.dtype.name}{list(self.shape)}, {origin})"


def derive(
    base: ir.TensorProtocol,
    fn: Callable[[np.ndarray], np.ndarray],
    *,
    dtype: ir.DataType,
    shape: Sequence[int],
    name: str,
) -> ir.TensorProtocol:
    """A tensor computed as ``fn(base.numpy())`` when it is written or run, never now.

    Args:
        base: The tensor to compute from (a :class:`WeightTensor` or any ``onnx_ir`` tensor).
        fn: numpy array in (``base``'s dtype and shape; bfloat16 as ``ml_dtypes.bfloat16``),
            numpy array out, of ``dtype`` and ``shape`` exactly.
        dtype: The result's ONNX dtype.
        shape: The result's shape.
        name: The result's initializer name (use a new name, e.g. ``<base>.T``).

    Returns:
        A :class:`WeightTensor`; several may derive from one base.

    Raises:
        InputError: (When produced) ``fn`` returned another dtype or shape than declared.
    """
    return WeightTensor(dtype=dtype, shape=shape, name=name, bases=(base,), fn=fn)


def derive_many(
    bases: Sequence[ir.TensorProtocol],
    fn: Callable[..., np.ndarray],
    *,
    dtype: ir.DataType,
    shape: Sequence[int],
    name: str,
) -> WeightTensor:
    """As :func:`derive` with several bases: ``fn(*[b.numpy() for b in bases])``."""
    return WeightTensor(dtype=dtype, shape=shape, name=name, bases=bases, fn=fn)


# Rows of the transposed tensor written per block: about this many bytes at a time.
BLOCK_BYTES = 16 * 1024**2


_SAME_SIZE_INT = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}


def _transpose_blocks(array: np.ndarray, perm: tuple[int, ...]) -> Iterator[np.ndarray]:
    """``array.transpose(perm)`` in C order, as consecutive blocks along the first axis.

    The copy runs in torch (multi-threaded, ~1.5x numpy's strided copy) on the bits viewed as a
    same-size integer type, so any dtype (bfloat16 included) moves unchanged.
    """
    yield from _permuted(array, perm, BLOCK_BYTES)


def _permuted(array: np.ndarray, perm: tuple[int, ...], block_bytes: int | None) -> Iterator[np.ndarray]:
    """Blocks of ``array.transpose(perm)`` along its first axis (one block when
    ``block_bytes`` is ``None``), copied by torch on the bits."""
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    if array.ndim == 0 or array.size == 0 or array.itemsize not in _SAME_SIZE_INT:
        yield np.asarray(array.transpose(perm), order="C")
        return
    with warnings.catch_warnings():  # a read-only memmap: torch warns about writes, we only read
        warnings.simplefilter("ignore", UserWarning)
        bits = torch.from_numpy(array.view(_SAME_SIZE_INT[array.itemsize])).permute(perm)
    row = max(1, bits[0].numel() * array.itemsize)
    step = bits.shape[0] if block_bytes is None else max(1, block_bytes // row)
    for start in range(0, bits.shape[0], step):
        yield bits[start : start + step].contiguous().numpy().view(array.dtype)


def _joined_transposed_blocks(*parts: np.ndarray) -> Iterator[np.ndarray]:
    """Blocks of rows of ``[p1.T, p2.T, ...]`` (the parts ``[N_i, K]``, joined ``[K, sum N_i]``),
    about :data:`BLOCK_BYTES` each, copied by torch on the bits (as :func:`_permuted`)."""
    dtype = parts[0].dtype
    if dtype.itemsize not in _SAME_SIZE_INT:
        yield np.concatenate([p.T for p in parts], axis=1)
        return
    with warnings.catch_warnings():  # read-only memmaps: torch warns about writes, we only read
        warnings.simplefilter("ignore", UserWarning)
        bits = [torch.from_numpy(np.ascontiguousarray(p).view(_SAME_SIZE_INT[dtype.itemsize])).t() for p in parts]
    rows, width = bits[0].shape[0], sum(b.shape[1] for b in bits)
    step = max(1, BLOCK_BYTES // max(1, width * dtype.itemsize))
    for start in range(0, rows, step):
        yield torch.cat([b[start : start + step] for b in bits], dim=1).numpy().view(dtype)


def transposed(base: ir.TensorProtocol, perm: Sequence[int], name: str) -> ir.TensorProtocol:
    """``base`` permuted by ``perm`` (ONNX Transpose semantics), computed when written, in blocks
    of about :data:`BLOCK_BYTES` (no full transposed copy is ever held)."""
    perm = tuple(int(p) for p in perm)
    dims = base.shape.numpy()
    shape = [int(dims[p]) for p in perm]
    result = WeightTensor(
        dtype=base.dtype, shape=shape, name=name, bases=(base,),
        fn=lambda a: next(_permuted(a, perm, None)),
        chunks=lambda a: _transpose_blocks(a, perm),
    )
    result.perm = perm
    return result


def cast(base: ir.TensorProtocol, dtype: ir.DataType, name: str) -> ir.TensorProtocol:
    """``base`` converted to ``dtype`` (numpy ``astype``, round to nearest even), when written."""
    target = dtype.numpy()
    return derive(base, lambda a: a.astype(target), dtype=dtype, shape=list(base.shape.numpy()), name=name)


def concatenated(
    bases: Sequence[ir.TensorProtocol], axis: int, name: str
) -> ir.TensorProtocol:
    """``bases`` joined along ``axis`` (ONNX Concat / ``numpy.concatenate`` semantics), when written.

    Args:
        bases: Tensors of one dtype and rank whose shapes differ only along ``axis``.
        axis: The axis to join along (negative counts from the end).
        name: The result's initializer name.

    Raises:
        InputError: The bases differ in dtype, rank, or a dimension other than ``axis``.
    """
    shapes = [tuple(int(d) for d in b.shape.numpy()) for b in bases]
    dtypes = {b.dtype for b in bases}
    if not bases or len(dtypes) != 1 or len({len(s) for s in shapes}) != 1:
        raise InputError(f"Cannot concatenate {[b.name for b in bases]} into {name}: need one dtype and rank.")
    rank = len(shapes[0])
    axis = axis % rank if rank else 0
    if len({s[:axis] + s[axis + 1 :] for s in shapes}) != 1:
        raise InputError(f"Cannot concatenate {[b.name for b in bases]} into {name}: shapes {shapes} differ off axis {axis}.")
    shape = list(shapes[0])
    shape[axis] = sum(s[axis] for s in shapes)
    if rank == 2 and axis == 1 and all(isinstance(b, WeightTensor) and b.perm == (1, 0) for b in bases):
        # [w1.T, w2.T] joined on columns (a packed projection): written block of rows by block of
        # rows, each read from every part, so neither the joined parts nor a transposed part is
        # ever held whole
        parts = [b.bases[0] for b in bases]  # type: ignore[attr-defined]
        joined = derive_many(
            parts, lambda *a: np.concatenate([p.T for p in a], axis=1), dtype=bases[0].dtype, shape=shape, name=name
        )
        joined.chunks = _joined_transposed_blocks
        return joined
    result = derive_many(
        bases, lambda *a: np.concatenate(a, axis=axis), dtype=bases[0].dtype, shape=shape, name=name
    )
    if axis == 0:  # joined on the first axis: each part's bytes in turn, never the whole
        result.chunks = lambda *a: iter(a)
    return result


def columns(base: ir.TensorProtocol, start: int, stop: int, name: str) -> ir.TensorProtocol:
    """Columns ``start:stop`` of a 2-D ``base``, when written (the inverse of
    :func:`concatenated` on axis 1). A ``base`` that is a transposed weight (``<w>.T``) gives the
    transpose of rows ``start:stop`` of ``w``, so only those rows are read and transposed."""
    k = int(base.shape.numpy()[0])
    if isinstance(base, WeightTensor) and base.perm == (1, 0):
        source = base.bases[0]
        rows = derive(source, lambda a: a[start:stop], dtype=base.dtype, shape=[stop - start, k], name=f"{name}.rows")
        return transposed(rows, (1, 0), name)
    return derive(base, lambda a: a[:, start:stop], dtype=base.dtype, shape=[k, stop - start], name=name)


def reshaped(base: ir.TensorProtocol, shape: Sequence[int], name: str) -> ir.TensorProtocol:
    """``base`` with another shape of the same size, when written."""
    dims = tuple(int(d) for d in shape)
    return derive(base, lambda a: a.reshape(dims), dtype=base.dtype, shape=dims, name=name)


def is_weight(tensor: Any) -> bool:
    """Whether ``tensor`` is a module weight (or computed from one): passes must not read it."""
    return isinstance(tensor, WeightTensor)


def has_data(tensor: Any) -> bool:
    """Whether ``tensor`` can be read now (not a weight still missing its data)."""
    return not isinstance(tensor, WeightTensor) or tensor.has_data


def missing_slot(name: str, dtype: ir.DataType, shape: Sequence[int]) -> Slot:
    """A slot without data (a weight whose values come later through ``apply_weights``)."""
    return Slot(name, MissingSource(name, dtype, shape))
