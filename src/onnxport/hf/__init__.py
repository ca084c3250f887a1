"""Hugging Face models in one call: ``onnxport.hf.export(folder, task)``.

See ``docs/hf.md`` for the tasks, the graph input/output names and the validation.
"""

from __future__ import annotations

from onnxport.hf.export import HFExport, export
from onnxport.hf.generate import greedy_causal_lm, greedy_seq2seq
from onnxport.hf.tasks import TASKS, Task, infer_task

__all__ = [
    "TASKS",
    "HFExport",
    "Task",
    "export",
    "greedy_causal_lm",
    "greedy_seq2seq",
    "infer_task",
]
