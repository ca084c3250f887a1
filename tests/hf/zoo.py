"""The models of ``onnxport.testing.tiny_models`` saved as folders for onnxport.hf.

``python tests/hf/zoo.py [NAME ...]`` exports each from a saved folder and prints the markdown
table of docs/hf.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

from onnxport.testing.tiny_models import BY_NAME, ZOO, Entry

__all__ = ["BY_NAME", "ZOO", "Entry", "save"]


def save(entry: Entry, folder: Path) -> Path:
    """Build the model and ``save_pretrained`` it into ``folder / entry.name``."""
    path = folder / entry.name
    entry.build().save_pretrained(path)
    return path


def main(names: list[str]) -> None:  # pragma: no cover - documentation helper
    import tempfile
    import time

    import onnxport.hf

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for entry in [BY_NAME[n] for n in names] if names else ZOO:
            start = time.perf_counter()
            try:
                folder = save(entry, Path(tmp))
                result = onnxport.hf.export(
                    folder, entry.task, output_dir=Path(tmp) / f"{entry.name}-onnx"
                )
                worst = max(c.max_abs_diff for c in result.checks)
                status = f"pass ({len(result.checks)} checks, max abs diff {worst:.1e})"
                files = ", ".join(str(f) for f in result.files if f.suffix == ".onnx")
            except Exception as e:  # report, keep going
                status, files = f"FAIL: {type(e).__name__}: {str(e).splitlines()[0][:120]}", ""
            rows.append(
                f"| {entry.name} | {entry.task} | {files} | {status} | {time.perf_counter() - start:.0f} s |"
            )
            print(rows[-1], flush=True)
    print("\n| model | task | files | validation | time |\n|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
