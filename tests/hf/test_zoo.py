"""Acceptance: small-config random-weight models of many architectures export from a saved folder
(``save_pretrained``) for their task and validate (every output within atol on fresh inputs).

The full list runs with ``-m slow``; four run by default. docs/hf.md lists the results.
"""

from __future__ import annotations

import pathlib

import onnx
import pytest

import onnxport.hf

from .zoo import ZOO, save

pytest.importorskip("transformers")

FAST = {"bert", "roberta", "vit", "resnet"}


@pytest.mark.parametrize(
    "entry",
    [e if e.name in FAST else pytest.param(e, marks=pytest.mark.slow) for e in ZOO],
    ids=[e.name for e in ZOO],
)
def test_zoo_exports_and_validates(entry, tmp_path: pathlib.Path) -> None:  # noqa: ANN001
    folder = save(entry, tmp_path)
    out = tmp_path / "onnx"
    result = onnxport.hf.export(folder, output_dir=out)  # task inferred from the architecture
    assert result.task == entry.task
    assert result.passed
    assert all(c.max_abs_diff < 1e-4 and c.shape_ok for c in result.checks)
    components = {c.component for c in result.checks}
    for component in components:  # model, or encoder_model + decoder_model
        per_set = {c.inputs for c in result.checks if c.component == component}
        assert len(per_set) == 2  # two fresh input sets per component, none of the export's shapes
    onnx_files = sorted(p.name for p in out.glob("*.onnx"))
    seq2seq = entry.task in ("text2text-generation", "automatic-speech-recognition")
    assert onnx_files == (
        ["decoder_model.onnx", "encoder_model.onnx"] if seq2seq else ["model.onnx"]
    )
    assert (out / "config.json").is_file()
    for name in onnx_files:
        proto = onnx.load(out / name)
        onnx.checker.check_model(proto, full_check=True)
        batch = proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param
        assert batch == "batch"
