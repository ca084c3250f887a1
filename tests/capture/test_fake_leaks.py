"""A model's lazily filled caches hold no fake tensor after onnxport captures it
(onnxport.capture.fake_leaks), so its eager runs after the export -- the user's and the
verification's -- compute what they computed before."""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import onnxport
from onnxport.capture.fake_leaks import fake_tensors_undone, holds_fake


class _Table:
    """A plain object (not a module) filling its table on its first call, as diffusers' Z-Image
    rotary embedder does (``freqs_cis``)."""

    def __init__(self) -> None:
        self.tables: list[torch.Tensor] | None = None

    def __call__(self, n: int) -> torch.Tensor:
        if self.tables is None:
            self.tables = [torch.arange(8.0).sin(), torch.arange(8.0).cos()]
        return self.tables[0][:n] * self.tables[1][:n]


class _Cached(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.table = _Table()
        self.scale: torch.Tensor | None = None  # a module attribute filled on the first call
        self.calls = 0  # other state the forward changes is the model's own business

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.scale is None:
            self.scale = torch.full((8,), 0.5)
        self.calls += 1
        return self.linear(x) * self.scale + self.table(8)


def test_caches_filled_during_the_capture_are_put_back() -> None:
    torch.manual_seed(0)
    model = _Cached().eval()
    x = torch.randn(3, 8)
    expected = torch.nn.functional.linear(x, model.linear.weight, model.linear.bias) * 0.5 + (
        torch.arange(8.0).sin() * torch.arange(8.0).cos()
    )
    program = onnxport.export(model, (x,), verify=True)  # eager runs after the capture: real caches
    assert not holds_fake(vars(model)) and not holds_fake(vars(model.table))
    assert program.status.verification is not None and program.status.verification.passed
    torch.testing.assert_close(torch.as_tensor(program(x)[0]), expected)
    with torch.no_grad():
        torch.testing.assert_close(model(x), expected)  # eager after the export: real tables
    assert isinstance(model.table.tables, list) and not holds_fake(model.table.tables)


class _DictCache(torch.nn.Module):
    """A bias cached per device in a dict the forward fills in place, as LeViT's
    ``attention_bias_cache``."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(4))
        self.cache: dict[str, torch.Tensor] = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = str(x.device)
        if key not in self.cache:
            self.cache[key] = self.bias * 2
        return x + self.cache[key]


def test_a_dict_filled_in_place_gets_its_entries_back() -> None:
    """A forward on fake tensors (an hf shape probe) fills the module's dict in place: the dict
    stays the module's, with its entries from before (a deleted attribute broke LeViT)."""
    model = _DictCache().eval()
    cache = model.cache
    cache["meta"] = torch.ones(4)
    with fake_tensors_undone(model), FakeTensorMode(allow_non_fake_inputs=True):
        model(torch.empty(2, 4))
    assert model.cache is cache and list(cache) == ["meta"] and not holds_fake(cache)
    x = torch.randn(2, 4)
    program = onnxport.export(model, (x,))  # torch.export puts a copy of the dict back itself
    assert not holds_fake(vars(model))
    torch.testing.assert_close(torch.as_tensor(program(x)[0]), x + model.bias.detach() * 2)


def test_holds_fake_looks_into_containers() -> None:
    with FakeTensorMode():
        fake = torch.zeros(2)
    assert holds_fake(fake) and holds_fake([1, (fake,)]) and holds_fake({"a": [fake]})
    assert not holds_fake([torch.zeros(2), {"a": 1}]) and not holds_fake(None)
