"""Which ``com.microsoft`` contrib ops the installed onnxruntime's CPU provider has.

A target fusion applies only when its op is registered (``get_all_opkernel_def``, the registry
``passes/half_compute.py`` also reads), so an older or trimmed onnxruntime keeps the standard ops.
"""

from __future__ import annotations

import functools

MICROSOFT = "com.microsoft"


@functools.cache
def cpu_contrib_ops() -> frozenset[str]:
    """Names of the ``com.microsoft`` ops with a CPU kernel (empty without onnxruntime)."""
    try:  # heavy optional dependency, imported only when a target pass runs
        from onnxruntime.capi import _pybind_state  # heavy: kernel registry, loaded on first use
    except ImportError:
        return frozenset()
    return frozenset(
        k.op_name
        for k in _pybind_state.get_all_opkernel_def()
        if k.domain == MICROSOFT and k.provider == "CPUExecutionProvider"
    )


def has_kernel(op_type: str) -> bool:
    """Whether ``com.microsoft.<op_type>`` runs on onnxruntime's CPU provider here."""
    return op_type in cpu_contrib_ops()
