"""Run an export folder right after exporting: embeddings and text generation with onnxruntime.

``onnxport.inference.load(folder)`` opens a folder written by ``onnxport export --hf`` /
:func:`onnxport.hf.export` (either layout) with its tokenizer (``tokenizer.json`` through the
``tokenizers`` library) and gives:

- :meth:`Model.encode` for feature-extraction: sentence embeddings with the sentence-transformers
  pooling the export recorded (the graph's ``sentence_embedding`` output when the export baked
  mean pooling in, else the pooling of the copied ``1_Pooling/config.json`` and ``modules.json``);
- :meth:`Model.generate` / :meth:`Model.generate_ids` for text-generation over the KV-cache graph:
  greedy or sampled decoding as transformers' ``generate`` does it (positions from the attention
  mask, left padding, finished rows padded).

The work is done by numpy, onnxruntime and tokenizers; transformers is not imported (torch is,
by the onnxport package, but not used here), since Optimum's and sentence-transformers' ONNX
backends do not install next to transformers 5 (issue 15).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort  # a hard dependency of onnxport

try:  # optional dependency (extras hf, inference): needed once a tokenizer.json is read
    import tokenizers
except ImportError:  # pragma: no cover - installed with the hf extra
    tokenizers = None  # type: ignore[assignment]

from onnxport.errors import InputError, OnnxportError
from onnxport.hf.generate import decode_steps, longrope_restart
from onnxport.hf.layout import find_model


class InferenceError(OnnxportError):
    """onnxruntime failed to load or run the exported graph."""


@dataclasses.dataclass(frozen=True)
class Pooling:
    """Sentence-transformers pooling of token states into one vector per sentence.

    Attributes:
        mode: ``mean`` (attention-mask-weighted mean), ``cls`` (first token) or ``max``
            (max over unmasked tokens); from ``1_Pooling/config.json``
            (``pooling_mode_*_tokens``), source: sentence-transformers ``models/Pooling.py``.
        normalize: L2-normalize the result (``modules.json`` lists a ``Normalize`` module).
    """

    mode: str = "mean"
    normalize: bool = False


def read_pooling(folder: Path) -> Pooling:
    """The pooling recorded in an export folder (mean, not normalized, when none is recorded).

    Raises:
        InputError: ``1_Pooling/config.json`` or ``modules.json`` is not valid JSON.
    """
    pooling_file, modules_file = folder / "1_Pooling" / "config.json", folder / "modules.json"
    config = _read_json(pooling_file) if pooling_file.is_file() else {}
    modules = _read_json(modules_file) if modules_file.is_file() else []
    mode = "mean"
    if config.get("pooling_mode_cls_token"):
        mode = "cls"
    elif config.get("pooling_mode_max_tokens"):
        mode = "max"
    normalize = any(str(m.get("type", "")).endswith(".Normalize") for m in modules)
    return Pooling(mode, normalize)


def pool(hidden: np.ndarray, attention_mask: np.ndarray, pooling: Pooling) -> np.ndarray:
    """Pool ``hidden`` ``(batch, sequence, hidden)`` float with ``attention_mask``
    ``(batch, sequence)`` (1 = token, 0 = padding) into ``(batch, hidden)`` float32.

    Mean: ``sum(h·m) / max(sum(m), 1e-9)``; normalization: ``x / max(‖x‖₂, 1e-12)`` (as
    sentence-transformers' Pooling and Normalize modules, i.e. ``torch.nn.functional.normalize``).
    """
    mask = attention_mask.astype(np.float32)[..., None]
    if pooling.mode == "cls":
        pooled = hidden[:, 0]
    elif pooling.mode == "max":
        pooled = np.where(mask > 0, hidden, np.finfo(np.float32).min).max(axis=1)
    else:
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    if pooling.normalize:
        norm = np.sqrt((pooled * pooled).sum(axis=1, keepdims=True))
        pooled = pooled / np.maximum(norm, 1e-12)
    return pooled.astype(np.float32)


@dataclasses.dataclass(frozen=True)
class Sampling:
    """How :meth:`Model.generate` picks each token.

    Attributes:
        do_sample: ``False``: greedy (argmax); ``True``: sample from the processed distribution.
        temperature: Logits are divided by it (> 0).
        top_k: Keep the ``top_k`` most likely tokens (0: all).
        top_p: Keep the smallest set of most likely tokens whose probability reaches ``top_p``.
        seed: Seed of the numpy generator used for sampling.

    The processing order (temperature, top-k, top-p) is transformers' ``generate``
    (``TemperatureLogitsWarper``, ``TopKLogitsWarper``, ``TopPLogitsWarper``).
    """

    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 1.0
    seed: int | None = None


class Model:
    """An export folder opened with onnxruntime (see :func:`load`)."""

    def __init__(self, folder: Path, session: ort.InferenceSession, tokenizer: Any) -> None:
        self.folder = folder
        self.session = session
        self.tokenizer = tokenizer
        self.input_names = [i.name for i in session.get_inputs()]
        self.output_names = [o.name for o in session.get_outputs()]
        self.config = (
            _read_json(folder / "config.json") if (folder / "config.json").is_file() else {}
        )
        generation = folder / "generation_config.json"
        self.generation_config = _read_json(generation) if generation.is_file() else {}
        self.pooling = read_pooling(folder)
        genai = _read_json(folder / "genai_config.json") if (folder / "genai_config.json").is_file() else {}
        # the in-place cache graph (kv_cache="shared"): GroupQueryAttention takes each row's length
        # from the mask (seqlens_k), so a batch's prompts go first and their pads after, as genai pads
        self.shared_buffer = bool(genai.get("search", {}).get("past_present_share_buffer"))

    # -- feature extraction ------------------------------------------------------------------
    def encode(self, sentences: str | Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Sentence embeddings, ``(len(sentences), hidden)`` float32 (``(hidden,)`` for one str).

        Tokenized with the folder's ``tokenizer.json`` (padded to the longest sentence of each
        batch, truncated to ``sentence_bert_config.json``'s ``max_seq_length`` when recorded),
        pooled as :func:`read_pooling` recorded (or by the graph's ``sentence_embedding``).

        Raises:
            InputError: The folder has no tokenizer.json, or the graph is not an encoder with
                ``last_hidden_state``/``sentence_embedding``.
            InferenceError: onnxruntime failed.
        """
        single = isinstance(sentences, str)
        texts = [sentences] if isinstance(sentences, str) else list(sentences)
        if (
            "sentence_embedding" not in self.output_names
            and "last_hidden_state" not in self.output_names
        ):
            raise InputError(
                f"{self.folder}: the graph has no last_hidden_state or sentence_embedding output; "
                "encode() needs a feature-extraction export (--task feature-extraction)."
            )
        tokenizer = self._tokenizer()
        limit = self._max_length()
        if limit:
            tokenizer.enable_truncation(max_length=limit)
        tokenizer.enable_padding(direction="right", pad_id=_pad_id(tokenizer, self.config))
        chunks = []
        for start in range(0, len(texts), batch_size):
            encodings = tokenizer.encode_batch(texts[start : start + batch_size])
            feeds = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            }
            if "token_type_ids" in self.input_names:
                feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
            outputs = dict(zip(self.output_names, self._run(feeds), strict=True))
            if "sentence_embedding" in outputs:
                chunks.append(outputs["sentence_embedding"].astype(np.float32))
            else:
                chunks.append(
                    pool(outputs["last_hidden_state"], feeds["attention_mask"], self.pooling)
                )
        embeddings = np.concatenate(chunks) if chunks else np.zeros((0, 0), np.float32)
        return embeddings[0] if single else embeddings

    # -- text generation ---------------------------------------------------------------------
    def generate(
        self,
        prompt: str | Sequence[str],
        max_new_tokens: int = 20,
        sampling: Sampling | None = None,
    ) -> str | list[str]:
        """Continue ``prompt`` (one string or a batch, left-padded) by up to ``max_new_tokens``.

        Returns:
            The new text of each prompt (special tokens skipped); a str for a str prompt.

        Raises:
            InputError: No tokenizer.json, or the graph has no KV cache inputs.
            InferenceError: onnxruntime failed.
        """
        single = isinstance(prompt, str)
        tokenizer = self._tokenizer()
        pad = self._pad_token_id()
        tokenizer.no_truncation()
        tokenizer.enable_padding(direction="left", pad_id=pad if pad is not None else 0)
        encodings = tokenizer.encode_batch([prompt] if isinstance(prompt, str) else list(prompt))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        sequences = self.generate_ids(ids, mask, max_new_tokens, sampling)
        texts = tokenizer.decode_batch(
            sequences[:, ids.shape[1] :].tolist(), skip_special_tokens=True
        )
        return texts[0] if single else texts

    def generate_ids(
        self,
        input_ids: np.ndarray,
        attention_mask: np.ndarray | None = None,
        max_new_tokens: int = 20,
        sampling: Sampling | None = None,
    ) -> np.ndarray:
        """Token-level generation over the KV-cache graph, or over a decoder exported without its
        cache (MiniMax, Jamba, RWKV: the whole sequence is fed at every step).

        Args:
            input_ids: ``(batch, prompt)`` int64 ids, left-padded.
            attention_mask: ``(batch, prompt)`` int64, 0 at padding (all ones when ``None``).
            max_new_tokens: Tokens to add to each row.
            sampling: Greedy when ``None``.

        Returns:
            ``(batch, prompt + generated)`` int64, as transformers' ``generate`` returns: the
            loop stops when every row produced an eos id (``generation_config.json``, else
            ``config.json``); rows that finished earlier are filled with the pad id.

        Raises:
            InputError: The graph gives no ``logits`` or the arguments' shapes differ.
            InferenceError: onnxruntime failed.
        """
        sampling = sampling or Sampling()
        ids = np.asarray(input_ids, dtype=np.int64)
        mask = (
            np.ones_like(ids)
            if attention_mask is None
            else np.asarray(attention_mask, dtype=np.int64)
        )
        if ids.ndim != 2 or mask.shape != ids.shape:
            raise InputError(
                f"input_ids must be (batch, prompt) and attention_mask the same shape; got "
                f"{ids.shape} and {mask.shape}."
            )
        self._check_generates()
        rng = np.random.default_rng(sampling.seed)
        prompt, prompt_mask = ids, mask
        if self.shared_buffer:  # real tokens first, pads after (a stable sort keeps their order)
            order = np.argsort(mask == 0, axis=1, kind="stable")
            prompt, prompt_mask = np.take_along_axis(ids, order, 1), np.take_along_axis(mask, order, 1)
        sequences = decode_steps(
            self.session, {"input_ids": prompt}, prompt, prompt_mask, max_new_tokens,
            lambda tokens: {"input_ids": tokens},
            eos=self._eos_ids(), pad=self._pad_token_id(), choose=lambda logits: next_tokens(logits, sampling, rng),
            run=self._run, restart_at=None if self.shared_buffer else longrope_restart(self.config),
        )
        return np.concatenate([ids, sequences[:, ids.shape[1] :]], axis=1)

    # -- helpers -----------------------------------------------------------------------------
    def _tokenizer(self) -> Any:
        if self.tokenizer is None:
            raise InputError(
                f"{self.folder} has no tokenizer.json; export from a folder that has one, or call "
                "generate_ids() with token ids."
            )
        return self.tokenizer

    def _max_length(self) -> int | None:
        bert_config = self.folder / "sentence_bert_config.json"
        if bert_config.is_file():
            length = _read_json(bert_config).get("max_seq_length")
            if isinstance(length, int):
                return length
        return None

    def _eos_ids(self) -> set[int]:
        value = self.generation_config.get("eos_token_id", self.config.get("eos_token_id"))
        if value is None:
            return set()
        return {int(v) for v in value} if isinstance(value, list) else {int(value)}

    def _pad_token_id(self) -> int | None:
        for source in (self.generation_config, self.config):
            if source.get("pad_token_id") is not None:
                return int(source["pad_token_id"])
        eos = sorted(self._eos_ids())
        return eos[0] if eos else None

    def _check_generates(self) -> None:
        """Raise :class:`InputError` unless the graph gives ``logits``."""
        if "logits" not in [o.name for o in self.session.get_outputs()]:
            raise InputError(
                f"{self.folder}: the graph gives no logits; generate() needs a text-generation "
                "export (--task text-generation)."
            )

    def _run(self, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        try:
            return self.session.run(None, feeds)
        except Exception as e:  # onnxruntime raises its own Fail/InvalidArgument types
            raise InferenceError(f"onnxruntime failed to run {self.folder}: {e}") from e


def next_tokens(logits: np.ndarray, sampling: Sampling, rng: np.random.Generator) -> np.ndarray:
    """One token per row from ``logits`` ``(batch, vocab)``: argmax, or a sample after
    temperature, top-k and top-p (see :class:`Sampling`). Returns ``(batch,)`` int64."""
    if not sampling.do_sample:
        return logits.argmax(-1).astype(np.int64)
    scores = logits.astype(np.float64) / max(sampling.temperature, 1e-6)
    if 0 < sampling.top_k < scores.shape[-1]:
        kth = np.sort(scores, axis=-1)[:, -sampling.top_k][:, None]
        scores = np.where(scores < kth, -np.inf, scores)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    if sampling.top_p < 1.0:
        order = np.argsort(-probs, axis=-1)
        sorted_probs = np.take_along_axis(probs, order, -1)
        # keep a token while the mass before it is below top_p (the first one always stays)
        drop_sorted = (np.cumsum(sorted_probs, -1) - sorted_probs) >= sampling.top_p
        drop = np.zeros_like(drop_sorted)
        np.put_along_axis(drop, order, drop_sorted, -1)
        probs = np.where(drop, 0.0, probs)
        probs /= probs.sum(-1, keepdims=True)
    return np.array([rng.choice(len(row), p=row) for row in probs], dtype=np.int64)


def load(folder: str | Path, providers: Sequence[str] = ("CPUExecutionProvider",)) -> Model:
    """Open an export folder (hub or flat layout) with its tokenizer.

    Args:
        folder: A folder written by :func:`onnxport.hf.export` (``onnx/model.onnx`` or
            ``model.onnx``, ``config.json``, ``tokenizer.json`` when the source had one).
        providers: onnxruntime execution providers.

    Raises:
        InputError: No such folder or no ``model.onnx`` in it (encoder-decoder folders are not
            supported here).
        InferenceError: onnxruntime or tokenizers could not load the files.
    """
    path = Path(folder)
    if not path.is_dir():
        raise InputError(f"{path} is not a folder; give an onnxport export folder.")
    try:
        graph = find_model(path, "model")
    except OnnxportError as e:
        raise InputError(str(e)) from e
    try:
        session = ort.InferenceSession(str(graph), providers=list(providers))
    except Exception as e:  # onnxruntime's own exception types
        raise InferenceError(f"onnxruntime could not load {graph}: {e}") from e
    tokenizer = None
    if (path / "tokenizer.json").is_file():
        if tokenizers is None:
            raise InputError(
                f"{path / 'tokenizer.json'} needs the tokenizers library: pip install 'onnxport[inference]'."
            )
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
        except Exception as e:  # tokenizers raises its own Exception type
            raise InferenceError(f"tokenizers could not read {path / 'tokenizer.json'}: {e}") from e
    return Model(path, session, tokenizer)


def _pad_id(tokenizer: Any, config: dict[str, Any]) -> int:
    padding = tokenizer.padding
    if padding and padding.get("pad_id") is not None:
        return int(padding["pad_id"])
    return int(config.get("pad_token_id") or 0)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path} is not valid JSON ({e}).") from e
