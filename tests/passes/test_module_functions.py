"""modules_as_functions: instances of chosen module types become calls to shared ONNX local functions."""

from __future__ import annotations

import collections

import onnx
import pytest
import torch

import onnxport


def _calls(program: onnxport.ONNXProgram) -> collections.Counter[str]:
    return collections.Counter(n.op_type for n in program.model.graph if n.domain == "pkg.onnxport.modules")


def test_four_layer_transformer_has_four_calls_to_one_function() -> None:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).eval()
    x = torch.randn(2, 6, 16)
    program = onnxport.export(model, (x,), dynamic_shapes=({0: "batch", 1: "seq"},),
                              modules_as_functions={torch.nn.TransformerEncoderLayer})
    assert _calls(program) == {"TransformerEncoderLayer": 4}
    assert len(program.model.functions) == 1
    proto = program.model_proto
    assert [f.name for f in proto.functions] == ["TransformerEncoderLayer"]
    onnx.checker.check_model(proto)
    for shape in ((2, 6, 16), (3, 11, 16)):
        x = torch.randn(*shape)
        torch.testing.assert_close(program(x)[0], model(x).detach(), rtol=1e-4, atol=1e-5)


def test_llama_decoder_layers_by_class_name() -> None:
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                                      num_attention_heads=4, num_key_value_heads=2, use_cache=False)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 64, (2, 7))
    program = onnxport.export(model, (), {"input_ids": ids, "use_cache": False},
                              dynamic_shapes={"input_ids": {0: "batch", 1: "seq"}},
                              modules_as_functions={"LlamaDecoderLayer"})
    assert _calls(program) == {"LlamaDecoderLayer": 3}
    assert len(program.model.functions) == 1
    for b, s in ((2, 7), (1, 12)):
        ids = torch.randint(0, 64, (b, s))
        with torch.no_grad():
            expected = model(input_ids=ids, use_cache=False).logits
        torch.testing.assert_close(program(input_ids=ids)[0], expected, rtol=1e-4, atol=1e-4)


def test_different_blocks_get_different_functions() -> None:
    class Block(torch.nn.Module):
        def __init__(self, act: bool) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)
            self.act = act

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.fc(x)
            return torch.relu(y) if self.act else y

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = torch.nn.ModuleList([Block(True), Block(False), Block(True)])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for block in self.blocks:
                x = block(x)
            return x

    model = Net().eval()
    x = torch.randn(3, 4)
    program = onnxport.export(model, (x,), modules_as_functions=["Block"])
    assert _calls(program) == {"Block": 3}
    assert sorted(f.overload for f in program.model.functions.values()) == ["", "1"]
    torch.testing.assert_close(program(x)[0], model(x).detach())


def test_without_option_no_functions() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
    program = onnxport.export(model, (torch.randn(2, 4),))
    assert not program.model.functions and not _calls(program)
