"""An hf export of a model in eval mode does not warn that it is in training mode (the wrapper
modules onnxport puts around it, ``onnxport.hf.cache``, are new ``torch.nn.Module``\\ s, in
training mode until put in eval mode, and before session 39 every ``--hf`` export of a causal LM
printed that warning), nor with torch's own deprecation warnings that the user cannot act on."""

from __future__ import annotations

import pathlib
import warnings

import pytest

import onnxport.hf
from _checkpoints import llama_checkpoint

pytest.importorskip("transformers")


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "in-memory"])
def test_no_training_mode_warning(tmp_path: pathlib.Path, stream: bool) -> None:
    llama_checkpoint(tmp_path / "ckpt")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        onnxport.hf.export(tmp_path / "ckpt", output_dir=tmp_path / "out", stream=stream)
    assert (tmp_path / "out" / "onnx" / "model.onnx").is_file()
    assert [str(w.message) for w in caught if "training mode" in str(w.message)] == []


def test_no_torch_treespec_deprecation_warning(tmp_path: pathlib.Path) -> None:
    """torch 2.13's ``run_decompositions`` deep-copies pytree specs that warn
    ``isinstance(treespec, LeafSpec) is deprecated``: torch's own deprecation, silenced where
    onnxport calls it (``capture/decomp.py``). MPNet's export runs the decompositions."""
    from onnxport.testing import tiny_models

    tiny_models.build("mpnet").save_pretrained(tmp_path / "src")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        onnxport.hf.export(tmp_path / "src", output_dir=tmp_path / "out")
    assert (tmp_path / "out" / "onnx" / "model.onnx").is_file()
    assert [str(w.message) for w in caught if "LeafSpec" in str(w.message)] == []
