"""Small models for the weights tests: every kind of weight rewrite the passes record."""

from __future__ import annotations

import torch
from torch import nn


class Tiny(nn.Module):
    """Embedding (tied to the output head), Conv1d + BatchNorm (folded), a Linear on rank-3 input
    (transposed weight), and a small buffer the constant folding derives from (``scale * 3``)."""

    def __init__(self, vocab: int = 50, dim: int = 16) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.conv = nn.Conv1d(dim, dim, 3, padding=1)
        self.bn = nn.BatchNorm1d(dim)
        self.fc = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight  # tied: one initializer, stored once
        self.register_buffer("scale", torch.tensor([2.0, 0.5]))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids)
        h = self.bn(self.conv(h.transpose(1, 2))).transpose(1, 2)
        h = torch.relu(self.fc(h)) * (self.scale * 3).sum()
        return self.head(h)


def randomized(model: nn.Module) -> nn.Module:
    """``model`` with random BatchNorm statistics (so the fold is not an identity) in eval mode."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm1d):
                module.running_mean.normal_()
                module.running_var.uniform_(0.5, 2.0)
                module.weight.normal_()
                module.bias.normal_()
    return model.eval()


class Wide(nn.Module):
    """Two Linears of 2 MiB weights (aligned offsets, shards) and a small one."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(512, 1024)
        self.b = nn.Linear(1024, 512)
        self.c = nn.Linear(512, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))
