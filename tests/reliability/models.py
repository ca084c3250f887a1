"""Tiny models shared by the reliability tests (each exports in about a second)."""

from __future__ import annotations

import torch


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


class AddMul(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return a + b, a * b


class BatchOneBranch(torch.nn.Module):
    """Branches on the batch size: a batch-1 example must not give a 'dynamic' batch graph."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] == 1:
            return x * 2
        return x + 1


class Returns(torch.nn.Module):
    """``forward`` returns whatever ``make(x)`` builds."""

    def __init__(self, make) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.make = make

    def forward(self, x: torch.Tensor):  # type: ignore[no-untyped-def]
        return self.make(x)
