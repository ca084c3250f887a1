"""Greedy decoding driven through onnxruntime with the exported cache models.

These loops are what an application does with ``model.onnx`` (decoder-only) or
``encoder_model.onnx`` + ``decoder_model_merged.onnx``: feed the new token, the grown attention mask, the
positions and the previous step's ``present.*`` as ``past_key_values.*``. They follow
``transformers``' greedy ``generate`` (positions from the attention mask, finished rows padded), so
their token ids can be compared with ``model.generate(..., do_sample=False)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from onnxport.hf.vision_language import PIXEL_MASK, SPATIAL_SHAPES, TOKEN_TYPES, merge, token_types


def _ids(value: Any) -> set[int]:
    if value is None:
        return set()
    if isinstance(value, (list, tuple)):
        return {int(v) for v in value}
    return {int(value)}


def empty_cache(session: Any, batch: int) -> dict[str, np.ndarray]:
    """The first step's past for every cache input of the session, as transformers.js builds it:
    zero-length ``past_key_values.*`` (the past length 0) and zero ``past_conv.*`` /
    ``past_ssm.*`` / ``past_recurrent.*`` states (fixed shapes but the batch)."""
    feeds = {}
    for value in session.get_inputs():
        dtype = np.float16 if "float16" in value.type else np.float32
        if value.name.startswith("past_key_values."):  # [B, heads, past, D] or [B, past, D]
            past_axis = 2 if len(value.shape) == 4 else 1
            feeds[value.name] = np.zeros(
                [batch, *(0 if i == past_axis else d for i, d in enumerate(value.shape) if i)], dtype=dtype
            )
        elif value.name.startswith("past_"):
            feeds[value.name] = np.zeros((batch, *value.shape[1:]), dtype=dtype)
    return feeds


def next_cache(session: Any, outputs: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """``present.X`` outputs renamed to the ``past_key_values.X`` inputs, ``present_conv.X`` (and
    the other states) to ``past_conv.X``."""
    names = [o.name for o in session.get_outputs()]
    feeds = {}
    for name, value in zip(names, outputs, strict=True):
        if name.startswith("present."):
            feeds["past_key_values" + name[len("present") :]] = value
        elif name.startswith("present_"):
            feeds["past_" + name[len("present_") :]] = value
    return feeds


def _choose(
    tokens: np.ndarray, unfinished: np.ndarray, eos: set[int], pad: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """``tokens`` ``(batch,)`` with rows that already finished set to ``pad`` (else the lowest eos
    id), and the rows still unfinished after them."""
    if eos:
        fill = pad if pad is not None else min(eos)
        tokens = np.where(unfinished, tokens, fill)
        unfinished = unfinished & ~np.isin(tokens, sorted(eos))
    return tokens, unfinished


def _argmax(logits: np.ndarray) -> np.ndarray:
    return logits.argmax(-1).astype(np.int64)


def greedy_causal_lm(
    session: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    max_new_tokens: int,
    *,
    eos_token_id: Any = None,
    pad_token_id: int | None = None,
) -> torch.Tensor:
    """Greedy decoding with a decoder-only ``model.onnx`` (inputs ``input_ids``, ``attention_mask``,
    ``position_ids`` when the graph has it, ``past_key_values.{i}.key/value`` and recurrent states).

    Args:
        session: An ``onnxruntime.InferenceSession`` of the exported model.
        input_ids: ``(batch, prompt)`` prompt ids, left-padded.
        attention_mask: ``(batch, prompt)``, 0 at padding.
        max_new_tokens: How many tokens to generate.
        eos_token_id: An id or ids ending a row (then padded with ``pad_token_id``).
        pad_token_id: The id appended to finished rows.

    Returns:
        ``(batch, prompt + generated)`` ids, as ``model.generate`` returns them.
    """
    ids = input_ids.numpy().astype(np.int64)
    return torch.from_numpy(
        decode_steps(session, {"input_ids": ids}, ids, attention_mask.numpy(), max_new_tokens,
                     lambda tokens: {"input_ids": tokens}, eos=_ids(eos_token_id), pad=pad_token_id)
    )


def longrope_restart(config: Mapping[str, Any]) -> int | None:
    """``original_max_position_embeddings`` of a Phi-3-family ``config.json`` with LongRoPE, else
    ``None``. Its rotary switches to the long factors once a sequence passes that length
    (``longrope_frequency_update``, ``modeling_rope_utils.py``), and transformers' ``generate``
    then drops the cache, whose keys were rotated with the short ones, and feeds the whole
    sequence again (``Phi3ForCausalLM.prepare_inputs_for_generation``; also PhiMoE and Phi-4
    multimodal)."""
    if config.get("model_type") not in ("phi3", "phimoe", "phi4_multimodal"):
        return None
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    kind = rope.get("rope_type", rope.get("type")) if isinstance(rope, Mapping) else None
    length = config.get("original_max_position_embeddings", rope.get("original_max_position_embeddings") if isinstance(rope, Mapping) else None)
    if kind != "longrope" and not (isinstance(rope, Mapping) and rope.get("long_factor")):
        return None
    return length if isinstance(length, int) else None


def last_real_logits(logits: np.ndarray, step_mask: np.ndarray) -> np.ndarray:
    """``(batch, vocab)``: each row's logits at the step's last real token. ``logits`` is
    ``(batch, sequence, vocab)`` (or ``(batch, 1, vocab)`` from a graph that returns the last real
    token's only: ``prune_lm_head``), ``step_mask`` the step's ``(batch, sequence)`` columns of the
    attention mask. Left padding or none: the last position; right padding (a shared-buffer
    graph's prompt, as onnxruntime-genai pads it): the position before the row's pads."""
    if logits.shape[1] == 1 or logits.shape[1] != step_mask.shape[1]:
        return logits[:, -1, :]
    order = np.arange(1, step_mask.shape[1] + 1)
    last = ((step_mask != 0).astype(np.int64) * order).max(-1) - 1
    return logits[np.arange(logits.shape[0]), np.maximum(last, 0)]


def decode_steps(
    decoder: Any,
    first: dict[str, np.ndarray],
    prompt: np.ndarray,
    attention_mask: np.ndarray,
    max_new_tokens: int,
    step: Callable[[np.ndarray], dict[str, np.ndarray]],
    *,
    eos: set[int],
    pad: int | None,
    rope: tuple[torch.Tensor, torch.Tensor] | None = None,
    choose: Callable[[np.ndarray], np.ndarray] = _argmax,
    run: Callable[[dict[str, np.ndarray]], list[np.ndarray]] | None = None,
    restart_at: int | None = None,
) -> np.ndarray:
    """The decode loop of a decoder step graph with a concatenated cache (the one loop behind
    these greedy functions and ``onnxport.inference.Model.generate_ids``).

    ``first`` feeds the prompt (its first entry has the prompt's length on axis 1),
    ``step(tokens)`` the new ``(batch, 1)`` tokens (the whole sequence when the graph has no
    cache inputs). Positions come from the grown attention mask as transformers computes them,
    or with ``rope`` (Qwen2-VL's ``(position_ids [3, batch, prompt], rope_deltas [batch, 1])``)
    those of the prompt, then ``past_length + rope_deltas`` on every row, as transformers.js.
    ``choose`` maps each row's last real token's logits ``(batch, vocab)`` (:func:`last_real_logits`:
    the last position, or before a right-padded prompt's pads) to ``(batch,)`` int64 tokens
    (argmax: greedy); ``run(feeds)`` runs the graph (``decoder.run(None, feeds)``). A row stops
    at an ``eos`` id and is then filled with ``pad``. ``restart_at`` (:func:`longrope_restart`):
    when the sequence reaches ``restart_at + 1`` tokens, the whole sequence is fed again over an
    empty cache, as transformers' Phi-3 ``generate`` does. Returns ``(batch, prompt + generated)``
    int64 ids, as transformers' ``generate``."""
    mask = np.asarray(attention_mask, dtype=np.int64)
    batch = prompt.shape[0]
    cache = empty_cache(decoder, batch)
    cached = bool(cache)
    feeds: dict[str, np.ndarray] = {**first, **cache}
    length = next(iter(first.values())).shape[1]
    takes_positions = any(i.name == "position_ids" for i in decoder.get_inputs())
    sequences = prompt
    unfinished = np.ones(batch, dtype=bool)
    for _ in range(max_new_tokens):
        positions = np.cumsum(mask, -1) - 1
        positions = np.where(mask == 0, 1, positions)[:, -length:]
        if rope is not None:  # multimodal rows: the prompt's, then past length + the row's delta
            past = mask.shape[1] - length
            positions = rope[0].numpy() if past == 0 else np.broadcast_to((past + rope[1].numpy())[None], (3, batch, 1))
        feeds["attention_mask"] = mask
        if takes_positions:  # Jamba, MiniMax and other models without rotary take none
            feeds["position_ids"] = np.ascontiguousarray(positions, dtype=np.int64)
        outputs = decoder.run(None, feeds) if run is None else run(feeds)
        logits = last_real_logits(outputs[0], mask[:, -length:])
        tokens, unfinished = _choose(choose(logits), unfinished, eos, pad)
        sequences = np.concatenate([sequences, tokens[:, None]], axis=1)
        if not unfinished.any():
            break
        mask = np.concatenate([mask, np.ones((batch, 1), dtype=np.int64)], axis=1)
        if cached and restart_at is not None and mask.shape[1] == restart_at + 1:
            feeds, length = {**step(sequences), **empty_cache(decoder, batch)}, sequences.shape[1]
        elif cached:
            feeds = {**step(tokens[:, None]), **next_cache(decoder, outputs)}
            length = 1
        else:  # a graph without cache inputs (MiniMax, Jamba) reads the whole sequence every step
            feeds, length = step(sequences), sequences.shape[1]
    return sequences


def greedy_image_text(
    sessions: Sequence[Any],
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    pixel_values: torch.Tensor,
    image_token_id: int,
    max_new_tokens: int,
    *,
    eos_token_id: Any = None,
    pad_token_id: int | None = None,
    pixel_attention_mask: torch.Tensor | None = None,
    spatial_shapes: torch.Tensor | None = None,
    grid_thw: torch.Tensor | None = None,
    rope: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Greedy decoding with a vision-language export (:mod:`onnxport.hf.vision_language`): the
    images through ``vision_encoder``, the prompt through ``embed_tokens``, the image features
    written at the ``image_token_id`` positions, then ``decoder_model_merged`` step by step (each
    new token embedded by ``embed_tokens``), as transformers.js' ``LlavaForConditionalGeneration``
    runs the three graphs. A decoder with ``token_type_ids`` (Gemma 3) gets 1 at the prompt's
    image tokens on the first step and zeros after, as transformers' ``generate`` feeds them.

    Args:
        sessions: onnxruntime sessions of ``vision_encoder``, ``embed_tokens`` and
            ``decoder_model_merged``, in that order.
        input_ids: ``(batch, prompt)`` ids holding one run of image tokens per image, left-padded.
        attention_mask: ``(batch, prompt)``, 0 at padding.
        pixel_values: ``(images, C, H, W)`` at the processor's size (a vision graph of one image,
            Mistral3's, runs once per image); for a vision graph taking
            ``pixel_attention_mask`` (Idefics3, SmolVLM) ``(batch, images, C, H, W)``, padding
            images all zeros.
        image_token_id: The config's ``image_token_id``.
        max_new_tokens, eos_token_id, pad_token_id: As :func:`greedy_causal_lm`.
        pixel_attention_mask: ``(batch, images, H, W)`` bool, fed with ``pixel_values`` when given;
            for LFM2-VL's padded tiles ``(tiles, patches)`` int64 (:mod:`onnxport.hf.naflex`).
        spatial_shapes: LFM2-VL's ``(tiles, 2)`` patch grids, fed when given (``pixel_values`` then
            ``(tiles, patches, C * patch²)``).
        grid_thw: Qwen2-VL's and Qwen2.5-VL's ``(images, 3)`` patch grids, fed with
            ``pixel_values`` (then its flattened patches) when given (:mod:`onnxport.hf.multimodal_rope`).
        rope: Qwen2-VL's prompt positions and deltas (transformers' ``get_rope_index``): see
            :func:`decode_steps`.

    Returns:
        ``(batch, prompt + generated)`` ids, as ``model.generate`` returns them.
    """
    vision, embed, decoder = sessions
    images = {"pixel_values": pixel_values.numpy()}
    if pixel_attention_mask is not None:
        images[PIXEL_MASK] = pixel_attention_mask.numpy()
    if spatial_shapes is not None:
        images[SPATIAL_SHAPES] = spatial_shapes.numpy().astype(np.int64)
    if grid_thw is not None:  # grid_thw (Qwen2-VL) or image_grid_thw (Qwen2.5-VL): the graph's second input
        images[vision.get_inputs()[1].name] = grid_thw.numpy().astype(np.int64)
    if vision.get_inputs()[0].shape[0] == 1:  # one image a run (Mistral3's Pixtral tower), as transformers.js feeds it
        runs = [vision.run(None, {"pixel_values": image[None]})[0] for image in images["pixel_values"]]
        features = torch.from_numpy(np.concatenate(runs))
    else:
        features = torch.from_numpy(vision.run(None, images)[0])
    return _decode_merged(embed, decoder, input_ids, attention_mask, [(image_token_id, features)],
                          max_new_tokens=max_new_tokens, eos=_ids(eos_token_id), pad=pad_token_id, rope=rope)


def _decode_merged(
    embed: Any,
    decoder: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    features: Sequence[tuple[int, torch.Tensor]],
    *,
    max_new_tokens: int,
    eos: set[int],
    pad: int | None,
    rope: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """The prompt through ``embed`` with each ``(token_id, rows)`` of ``features`` written at its
    token's positions, then :func:`decode_steps` with every new token through ``embed``; ``embed``'s
    other outputs (Gemma 4's ``per_layer_inputs``) go to the decoder as they are; a decoder
    taking ``token_type_ids`` (Gemma 3) gets 1 at the prompt's first ``token_id``'s positions on
    the first step and zeros after."""
    names = [o.name for o in embed.get_outputs()]

    def embedded(tokens: np.ndarray) -> dict[str, np.ndarray]:
        return dict(zip(names, embed.run(None, {"input_ids": tokens}), strict=True))

    first = embedded(input_ids.numpy().astype(np.int64))
    embeds = torch.from_numpy(first["inputs_embeds"])
    for token, rows in features:
        embeds = merge(input_ids, embeds, rows, token)
    first["inputs_embeds"] = embeds.numpy()
    typed = any(i.name == TOKEN_TYPES for i in decoder.get_inputs())
    if typed:
        first[TOKEN_TYPES] = token_types(input_ids, features[0][0]).numpy()

    def step(tokens: np.ndarray) -> dict[str, np.ndarray]:
        feeds = embedded(tokens)
        return {**feeds, TOKEN_TYPES: np.zeros_like(tokens)} if typed else feeds

    return torch.from_numpy(decode_steps(decoder, first, input_ids.numpy().astype(np.int64), attention_mask.numpy(),
                                         max_new_tokens, step, eos=eos, pad=pad, rope=rope))


def greedy_image_audio_text(
    sessions: dict[str, Any],
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    max_new_tokens: int,
    *,
    images: dict[str, torch.Tensor] | None = None,
    audio: dict[str, torch.Tensor] | None = None,
    image_token_id: int | None = None,
    audio_token_id: int | None = None,
    eos_token_id: Any = None,
    pad_token_id: int | None = None,
) -> torch.Tensor:
    """Greedy decoding with an image-audio-text export (:mod:`onnxport.hf.image_audio_text`,
    Gemma 4): the images through ``vision_encoder``, the audio through ``audio_encoder``, the prompt
    through ``embed_tokens`` (``inputs_embeds`` and ``per_layer_inputs``), the features written at
    their tokens of ``inputs_embeds``, then ``decoder_model_merged`` step by step, as transformers.js'
    ``Gemma4ForConditionalGeneration`` runs the four graphs.

    Args:
        sessions: onnxruntime sessions by graph name (``embed_tokens``, ``decoder_model_merged``,
            and ``vision_encoder`` / ``audio_encoder`` when their inputs are given).
        input_ids: ``(batch, prompt)`` ids holding each image's and audio's tokens, left-padded.
        attention_mask: ``(batch, prompt)``, 0 at padding.
        max_new_tokens, eos_token_id, pad_token_id: As :func:`greedy_causal_lm`.
        images: ``vision_encoder``'s inputs by name (``pixel_values``, ``pixel_position_ids``).
        audio: ``audio_encoder``'s inputs by name (``input_features``, ``input_features_mask``).
        image_token_id, audio_token_id: The config's ids of the tokens the features replace.

    Returns:
        ``(batch, prompt + generated)`` ids, as ``model.generate`` returns them.
    """
    merges = []
    for graph, inputs, token in (("vision_encoder", images, image_token_id), ("audio_encoder", audio, audio_token_id)):
        if inputs is not None and token is not None:
            rows = sessions[graph].run(None, {name: value.numpy() for name, value in inputs.items()})[0]
            merges.append((token, torch.from_numpy(rows)))
    return _decode_merged(sessions["embed_tokens"], sessions["decoder_model_merged"], input_ids, attention_mask, merges,
                          max_new_tokens=max_new_tokens, eos=_ids(eos_token_id), pad=pad_token_id)


def greedy_audio_text(
    sessions: Sequence[Any],
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    input_features: torch.Tensor,
    audio_token_id: int,
    max_new_tokens: int,
    *,
    eos_token_id: Any = None,
    pad_token_id: int | None = None,
) -> torch.Tensor:
    """Greedy decoding with an audio-language export (:mod:`onnxport.hf.audio_language`): the
    log-mel chunks through ``audio_encoder``, the prompt through ``embed_tokens``, the audio
    features written at the ``audio_token_id`` positions, then ``decoder_model_merged`` step by
    step, as transformers.js' ``UltravoxModel`` (Voxtral) runs the three graphs.

    Args:
        sessions: onnxruntime sessions of ``audio_encoder``, ``embed_tokens`` and
            ``decoder_model_merged``, in that order.
        input_ids: ``(batch, prompt)`` ids holding the audio tokens of every chunk, left-padded.
        attention_mask: ``(batch, prompt)``, 0 at padding.
        input_features: ``(chunks, mel_bins, frames)`` log-mel features of all rows' audio.
        audio_token_id: The config's ``audio_token_id``.
        max_new_tokens, eos_token_id, pad_token_id: As :func:`greedy_causal_lm`.

    Returns:
        ``(batch, prompt + generated)`` ids, as ``model.generate`` returns them.
    """
    audio, embed, decoder = sessions
    features = torch.from_numpy(audio.run(None, {audio.get_inputs()[0].name: input_features.numpy()})[0])
    return _decode_merged(embed, decoder, input_ids, attention_mask, [(audio_token_id, features)],
                          max_new_tokens=max_new_tokens, eos=_ids(eos_token_id), pad=pad_token_id)


def greedy_seq2seq(
    encoder: Any,
    decoder: Any,
    encoder_inputs: dict[str, torch.Tensor],
    decoder_start_token_id: int,
    max_new_tokens: int,
    *,
    eos_token_id: Any = None,
    pad_token_id: int | None = None,
    embed: Any = None,
) -> torch.Tensor:
    """Greedy decoding with ``encoder_model.onnx`` + ``decoder_model_merged.onnx``.

    Args:
        encoder: Session of the encoder (``input_ids`` + ``attention_mask``, or ``input_features``).
        decoder: Session of the decoder with cache (``use_cache_branch`` false on the first
            step, which computes the cross-attention cache, true on the later ones).
        encoder_inputs: The encoder's inputs by name.
        decoder_start_token_id: The first decoder token.
        max_new_tokens: How many tokens to generate.
        eos_token_id: An id or ids ending a row.
        pad_token_id: The id appended to finished rows.
        embed: Session of ``embed_tokens`` for a decoder taking ``inputs_embeds`` (Florence-2):
            each step's tokens go through it.

    Returns:
        ``(batch, 1 + generated)`` decoder ids starting with ``decoder_start_token_id``.
    """
    feeds_in = {k: v.numpy() for k, v in encoder_inputs.items()}
    (hidden,) = encoder.run(None, feeds_in)
    batch = hidden.shape[0]
    eos = _ids(eos_token_id)
    start = np.full((batch, 1), decoder_start_token_id, dtype=np.int64)
    decoder_names = {i.name for i in decoder.get_inputs()}
    fixed = {"encoder_hidden_states": hidden}
    if "encoder_attention_mask" in decoder_names:
        fixed["encoder_attention_mask"] = feeds_in["attention_mask"].astype(np.int64)
    branch = "use_cache_branch" in decoder_names  # the cross-attention cache: computed, then fed back
    def tokens_in(tokens: np.ndarray) -> dict[str, np.ndarray]:
        return {"input_ids": tokens} if embed is None else {"inputs_embeds": embed.run(None, {"input_ids": tokens})[0]}

    feeds = {**tokens_in(start), **empty_cache(decoder, batch)}
    sequences = start
    unfinished = np.ones(batch, dtype=bool)
    for step in range(max_new_tokens):
        if branch:
            feeds["use_cache_branch"] = np.array([step > 0])
        outputs = decoder.run(None, {**fixed, **feeds})
        tokens, unfinished = _choose(_argmax(outputs[0][:, -1, :]), unfinished, eos, pad_token_id)
        sequences = np.concatenate([sequences, tokens[:, None]], axis=1)
        if not unfinished.any():
            break
        feeds = {**tokens_in(tokens[:, None]), **next_cache(decoder, outputs)}
    return torch.from_numpy(sequences)


def greedy_image_text_seq2seq(
    sessions: Sequence[Any],
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    pixel_values: torch.Tensor,
    decoder_start_token_id: int,
    max_new_tokens: int,
    *,
    eos_token_id: Any = None,
    pad_token_id: int | None = None,
) -> torch.Tensor:
    """Greedy decoding with an encoder-decoder VLM export (Florence-2): the image features
    (``vision_encoder``) before the prompt's embeddings (``embed_tokens``) with a mask of ones for
    them, through ``encoder_model``, then ``decoder_model_merged`` from embedded tokens, as
    transformers.js' ``Florence2ForConditionalGeneration`` runs the four graphs. transformers'
    processor writes the same features at image tokens it puts before the prompt.

    Args:
        sessions: onnxruntime sessions of ``vision_encoder``, ``embed_tokens``, ``encoder_model``
            and ``decoder_model_merged``, in that order.
        input_ids: ``(batch, prompt)`` ids of the prompt (no image tokens).
        attention_mask: ``(batch, prompt)``, 0 at padding.
        pixel_values: ``(batch, C, H, W)`` at the processor's size.
        decoder_start_token_id, max_new_tokens, eos_token_id, pad_token_id: As
            :func:`greedy_seq2seq`.

    Returns:
        ``(batch, 1 + generated)`` decoder ids starting with ``decoder_start_token_id``.
    """
    vision, embed, encoder, decoder = sessions
    (features,) = vision.run(None, {"pixel_values": pixel_values.numpy()})
    (embeds,) = embed.run(None, {"input_ids": input_ids.numpy().astype(np.int64)})
    mask = np.concatenate([np.ones(features.shape[:2], dtype=np.int64), attention_mask.numpy().astype(np.int64)], 1)
    inputs = {"inputs_embeds": torch.from_numpy(np.concatenate([features, embeds], 1)), "attention_mask": torch.from_numpy(mask)}
    return greedy_seq2seq(encoder, decoder, inputs, decoder_start_token_id, max_new_tokens,
                          eos_token_id=eos_token_id, pad_token_id=pad_token_id, embed=embed)
