"""onnxport's translations, grouped by ATen family, and the default registry built from them.

Every family module is imported here explicitly (no discovery); :func:`default_registry` registers
the translations each module *defines* (:meth:`Registry.register_module`), so a translation that a
family imports from another one is registered once, by its own module. ``translate/registry.py``
holds the :class:`Registry` and the :func:`translates` marker and imports nothing from here.

Family map (docs/architecture.md, "ops/"):

- ``tensor/``: creation, shape (views, reshape, cat/split), layout (flip, roll, tril, diagonal,
  as_strided...), indexing (gather, index, embedding), scatter (scatter, index_put...), sort
  (sort/topk/searchsorted/kthvalue), unique, conversion (dtype casts, no-ops), pad.
- ``pointwise/``: arithmetic (the 1:1 unary/binary ops, comparison, logic), float_ops (log2, hypot,
  copysign, frexp, nextafter...), integer (gcd, lcm, shifts).
- ``reduction/``: reduce (sum, mean, amax, argmax, var...), scan (cumsum, cumprod, cummax...),
  stats (median, mode, var_mean), histogram.
- ``nn/``: activation, attention, flex_attention (FlexAttention's higher-order op), conv, norm, pool, resize, rnn (LSTM/GRU/RNN), backward, random_ops
  (rand*, dropout), moe (grouped matmuls of mixture-of-experts layers).
- ``linalg/``: products (matmul, linear, einsum, bilinear), norms (vector norm, cdist), dense (det,
  inverse, solve, svd), factorization (Cholesky, LU, QR), ldl, spectral (eigh, pinv, matrix_exp).
- ``special/``: gamma, incomplete_gamma, bessel, orthogonal_polynomials, error_function.
- ``fft/``: transforms (DFT) and complex (the complex-as-real ops).
- ``control/``: control_flow (cond, while_loop, scan), symbolic (SymInt arithmetic).

Private helpers shared by several families are in :mod:`onnxport.ops._common`; those of the
special functions only in :mod:`onnxport.ops.special._cephes`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

from onnxport.errors import InputError
from onnxport.ops.control import control_flow, symbolic
from onnxport.ops.fft import complex as fft_complex
from onnxport.ops.fft import transforms as fft_transforms
from onnxport.ops.linalg import dense, factorization, ldl, norms, products, spectral
from onnxport.ops.nn import (
    activation,
    attention,
    backward,
    conv,
    flex_attention,
    moe,
    norm,
    pool,
    random_ops,
    resize,
    rnn,
)
from onnxport.ops.pointwise import arithmetic, float_ops, integer
from onnxport.ops.reduction import histogram, reduce, scan, stats
from onnxport.ops.special import (
    bessel,
    error_function,
    gamma,
    incomplete_gamma,
    orthogonal_polynomials,
)
from onnxport.ops.tensor import (
    conversion,
    creation,
    indexing,
    layout,
    pad,
    scatter,
    shape,
    sort,
    unique,
)
from onnxport.translate.registry import MIN_OPSET, Promote, Registry, Translation, check_target

FAMILIES: tuple[ModuleType, ...] = (
    # tensor
    creation, shape, layout, indexing, scatter, sort, unique, conversion, pad,
    # pointwise
    arithmetic, float_ops, integer,
    # reduction
    reduce, scan, stats, histogram,
    # nn
    activation, attention, flex_attention, conv, norm, pool, resize, rnn, backward, random_ops, moe,
    # linalg
    products, norms, dense, factorization, ldl, spectral,
    # special
    gamma, incomplete_gamma, bessel, orthogonal_polynomials, error_function,
    # fft and complex numbers
    fft_transforms, fft_complex,
    # control flow and symbolic shapes
    control_flow, symbolic,
)
"""The modules that define translations, in registration order."""


@functools.cache
def default_registry() -> Registry:
    """The process-wide registry: onnxport's translations (built once per process) plus whatever
    :func:`register_translation` added without an explicit ``registry``."""
    registry = Registry()
    register_families(registry)
    return registry


def register_families(registry: Registry) -> None:
    """Register into ``registry`` the translations each module of :data:`FAMILIES` defines; one a
    family imports from another is registered by its own module, once."""
    for module in FAMILIES:
        registry.register_module(module, defined_here=True)


def register_translation(
    target: Any, fn: Callable[..., Any] | None = None, *, since: int = MIN_OPSET,
    registry: Registry | None = None, promote: Promote | str = Promote.NONE, complex: bool = False,
) -> Any:
    """Register a translation for a custom op (or override one of onnxport's).

    Usable directly, ``register_translation(torch.ops.mylib.op.default, fn)``, or as a decorator,
    ``@register_translation(torch.ops.mylib.op.default)``. ``fn(ctx, *args, **kwargs)`` receives the
    op's arguments as in its schema (tensors as ``onnx_ir.Value``) and returns the output value(s),
    built with ``ctx.op.<OnnxOp>(...)``; ops of another domain take ``_domain="com.example"`` and
    the model gets that domain's opset import.

    Args:
        target: The ``OpOverload`` (``torch.ops.mylib.op.default``).
        fn: The translation; omitted for decorator use.
        since: Lowest opset the translation is valid for.
        registry: Where to register; default: the process-wide :func:`default_registry`, used by
            every later export. Pass a :class:`Registry` (or use ``export(custom_translations=)``)
            to scope the translation to some exports only.
        promote: Type promotion the dispatcher applies first (see :class:`Promote`).
        complex: ``fn`` translates the nodes with complex inputs or outputs, carried as real
            tensors with a trailing dimension of 2 (real, imaginary).

    Raises:
        InputError: ``target`` is an ``OpOverloadPacket`` (name the overload, ``.default``).
    """
    check_target(target)
    destination = registry if registry is not None else default_registry()

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        destination.register_translation(target, fn, since=since, promote=promote, complex=complex)
        return fn

    return register if fn is None else register(fn)


def is_registered(target: Any, registry: Registry | None = None) -> bool:
    """Whether ``target`` has a translation in ``registry`` (default: the process-wide one)."""
    return (registry or default_registry()).is_registered(target)


def translations_for(target: Any, registry: Registry | None = None) -> tuple[Translation, ...]:
    """Every translation registered for ``target`` (all opsets), in ``since`` order."""
    return (registry or default_registry()).translations_for(target)


def registry_for_export(registry: Registry | None, custom_translations: Any) -> Registry:
    """The registry one export uses: ``registry`` (or the default) plus ``custom_translations``,
    a ``{target: fn}`` mapping or a :class:`Registry` whose entries win over the base ones.

    Raises:
        InputError: ``registry`` is not a Registry, or ``custom_translations`` is neither a
            mapping nor a Registry.
    """
    if registry is not None and not isinstance(registry, Registry):
        raise InputError(
            f"registry must be an onnxport.Registry (e.g. onnxport.default_registry().copy()), "
            f"got {type(registry).__name__}: {registry!r}. To add translations, use custom_translations={{op: fn}}."
        )
    base = registry or default_registry()
    if not custom_translations:
        return base
    merged = base.copy()
    if isinstance(custom_translations, Registry):
        for target in custom_translations.targets():
            for entry in custom_translations.translations_for(target):
                merged.register(dataclasses.replace(entry, custom=True))
    elif isinstance(custom_translations, dict):
        for target, fn in custom_translations.items():
            merged.register_translation(target, fn)
    else:
        raise InputError(
            "custom_translations must be a dict {torch.ops.<ns>.<op>.<overload>: fn} or an onnxport.Registry, "
            f"got {type(custom_translations).__name__}."
        )
    return merged
