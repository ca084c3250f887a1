"""Load a local transformers model folder (config.json + safetensors) offline, with clear errors."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxport.errors import HFError
from onnxport.hf import hub
from onnxport.hf.tasks import Task, get_task, infer_task, model_class

if TYPE_CHECKING:
    import torch

WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")


@dataclasses.dataclass
class LoadedModel:
    """A model loaded for one task.

    Attributes:
        model: The transformers model, in eval mode.
        task: The task it was loaded for.
        folder: The folder it came from (``None`` when a model object was given).
        pooling: Sentence-transformers pooling (``{"mode": "mean"|"cls"|"max"|"lasttoken", "normalize": bool}``) when the
            folder has a ``1_Pooling`` module, else ``None``.
        prune_lm_head: Text generation: the decoder graph returns each row's last real token's logits only,
            ``[batch_size, 1, vocab_size]`` (:class:`onnxport.hf.cache.CausalLMWithCache`).
        with_past: Text generation: ``False`` exports the decoder without its cache (the whole
            sequence → logits, Optimum's ``text-generation`` without ``-with-past``).
    """

    model: Any
    task: Task
    folder: Path | None
    pooling: dict[str, Any] | None = None
    prune_lm_head: bool = False
    with_past: bool = True


def import_transformers() -> Any:
    """Import transformers with the hub switched off (``HF_HUB_OFFLINE=1`` unless already set:
    :func:`onnxport.hf.hub.switch_off`)."""
    hub.switch_off()
    try:
        import transformers  # heavy optional dependency (onnxport[hf])
    except ImportError as e:  # pragma: no cover - transformers is a declared extra
        raise HFError(f"onnxport.hf needs transformers: pip install 'onnxport[hf]' ({e}).") from e
    return transformers


def read_config(folder: Path) -> Any:
    """Check the folder and return its ``PretrainedConfig``.

    Raises:
        HFError: The folder or its config.json is missing, config.json is not JSON or has no
            ``model_type``, or transformers does not know the model type.
    """
    if not folder.is_dir():
        raise HFError(f"{folder} is not a folder; give a local Hugging Face model folder.")
    path = folder / "config.json"
    if not path.is_file():
        raise HFError(
            f"{folder} has no config.json: a Hugging Face model folder needs config.json and "
            "*.safetensors (save one with model.save_pretrained(folder))."
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise HFError(f"{path} is not valid JSON ({e}); fix or re-save the config.") from e
    if not isinstance(raw, dict) or not isinstance(raw.get("model_type"), str):
        raise HFError(
            f'{path} has no "model_type" string; transformers cannot tell which model it describes.'
        )
    transformers = import_transformers()
    model_type = raw["model_type"]
    if model_type not in transformers.CONFIG_MAPPING:
        raise HFError(
            f"{path}: model_type {model_type!r} is unknown to transformers "
            f"{transformers.__version__}; upgrade transformers or fix the config."
        )
    for arch in raw.get("architectures") or []:
        if not hasattr(transformers, arch):
            raise HFError(
                f"{path}: architecture {arch!r} is unknown to transformers {transformers.__version__}; "
                'fix "architectures" in config.json or upgrade transformers.'
            )
    try:
        return transformers.AutoConfig.from_pretrained(folder, local_files_only=True)
    except Exception as e:  # transformers raises ValueError, KeyError, TypeError, OSError ...
        raise HFError(f"transformers could not read {path}: {type(e).__name__}: {e}") from e


def check_weights(folder: Path) -> None:
    """Raise :class:`HFError` when the folder has no weight file."""
    if not any(any(folder.glob(p)) for p in WEIGHT_PATTERNS):
        raise HFError(
            f"{folder} has no weights (*.safetensors or pytorch_model*.bin) beside config.json; "
            "save the model with model.save_pretrained(folder)."
        )


def read_pooling(folder: Path) -> dict[str, Any] | None:
    """Sentence-transformers pooling (mean, cls, max or lasttoken, and normalization) from
    ``modules.json`` / ``1_Pooling``; ``None`` without one, or with several modes at once."""
    pooling_config = folder / "1_Pooling" / "config.json"
    if not pooling_config.is_file():
        return None
    try:
        pooling = json.loads(pooling_config.read_text(encoding="utf-8"))
        modules = (
            json.loads((folder / "modules.json").read_text(encoding="utf-8"))
            if (folder / "modules.json").is_file()
            else []
        )
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise HFError(
            f"{folder}: sentence-transformers module config is not valid JSON ({e})."
        ) from e
    modes = [mode for key, mode in _POOLING_MODES.items() if pooling.get(key)]
    if len(modes) != 1:
        return None  # none, or several concatenated: last_hidden_state only
    normalize = any(str(m.get("type", "")).endswith(".Normalize") for m in modules)
    return {"mode": modes[0], "normalize": normalize}


# sentence-transformers ``1_Pooling/config.json`` flags → the pooling exported
# (sentence_transformers/models/Pooling.py): the masked mean, the first token (BGE, GTE), the
# masked max, the last unpadded token (decoder embedders: E5-Mistral, GTE-Qwen).
_POOLING_MODES = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
                  "pooling_mode_max_tokens": "max", "pooling_mode_lasttoken": "lasttoken"}  # fmt: skip


@contextlib.contextmanager
def _quiet(transformers: Any) -> Iterator[None]:
    logging = transformers.utils.logging
    enabled = logging.is_progress_bar_enabled()
    verbosity = logging.get_verbosity()
    logging.disable_progress_bar()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if enabled:
            logging.enable_progress_bar()


def load(folder: Path, task: str | None = None, dtype: torch.dtype | None = None) -> LoadedModel:
    """Load ``folder`` for ``task`` (inferred from the architecture when ``None``), in ``dtype``
    (``None``: the checkpoint's, transformers' ``dtype="auto"``).

    Raises:
        HFError: See :func:`read_config` and :func:`check_weights`; or transformers fails to load
            the weights (missing tensors, wrong shapes) or the model has no class for the task.
    """
    folder = Path(folder)
    config = read_config(folder)
    check_weights(folder)
    resolved = get_task(task, config) if task else infer_task(config)
    transformers = import_transformers()
    auto = model_class(transformers, resolved.auto_class, config)
    try:
        model = _from_pretrained(
            transformers, auto, folder, config, architecture_task=task is None, dtype=dtype
        )
    except ValueError as e:
        if "Unrecognized configuration class" in str(e):
            raise HFError(
                f"{type(config).__name__} ({config.model_type}) has no {resolved.auto_class} model: "
                f"task {resolved.name!r} is not available for it."
            ) from e
        raise HFError(f"transformers could not load {folder}: {type(e).__name__}: {e}") from e
    except Exception as e:
        raise HFError(f"transformers could not load {folder}: {type(e).__name__}: {e}") from e
    model.eval()
    pooling = read_pooling(folder) if resolved.name == "feature-extraction" else None
    return LoadedModel(model, resolved, folder, pooling)


def _from_pretrained(
    transformers: Any,
    auto: Any,
    folder: Path,
    config: Any,
    architecture_task: bool,
    dtype: torch.dtype | None = None,
) -> Any:
    """``auto.from_pretrained(folder)``; when that leaves model weights missing from the checkpoint
    (transformers initializes them at random and only logs it), the config's own architecture
    class instead if the task was inferred from it (``architecture_task``) and it loads them all,
    else the model with a ``UserWarning`` naming them.

    A DPR context encoder's checkpoint loaded by ``AutoModel`` (DPR's question encoder, whose keys
    are ``question_encoder.*`` where the checkpoint has ``ctx_encoder.*``) was every weight random,
    and the validation, run against that model, passed (session 31).
    """
    typed = {"dtype": dtype} if dtype is not None else {}
    with _quiet(transformers):
        model, info = auto.from_pretrained(folder, local_files_only=True, output_loading_info=True, **typed)
    missing = sorted(info.get("missing_keys") or ())
    if not missing:
        return model
    arch = getattr(transformers, (getattr(config, "architectures", None) or [""])[0], None)
    if architecture_task and isinstance(arch, type) and arch is not type(model) and hasattr(arch, "from_pretrained"):
        with _quiet(transformers):
            own, own_info = arch.from_pretrained(
                folder, local_files_only=True, output_loading_info=True, **typed
            )
        if not own_info.get("missing_keys"):
            return own
    warnings.warn(
        f"{len(missing)} weights of {type(model).__name__} are not in {folder} and were initialized at random "
        f"by transformers (first: {missing[:3]}); the export computes with them. Pass the task the "
        "checkpoint was trained for (task=, --task) if this is not intended.",
        UserWarning,
        stacklevel=3,
    )
    return model


def from_model(model: Any, task: str | None = None) -> LoadedModel:
    """Wrap an already loaded transformers model (the task inferred from its class when ``None``)."""
    if task:
        resolved = get_task(task, getattr(model, "config", None))
    else:
        config = getattr(model, "config", None)
        if config is None:
            raise HFError(
                f"{type(model).__name__} is not a transformers model (it has no .config)."
            )
        resolved = infer_task(_ArchConfig(config, type(model).__name__))
    model.eval()
    return LoadedModel(model, resolved, None, None)


class _ArchConfig:
    """A config view whose ``architectures`` is the model's own class name."""

    def __init__(self, config: Any, arch: str) -> None:
        self._config = config
        self.architectures = [arch]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._config, name)


def check_with_past(with_past: bool, task: Task, needs_cache: bool) -> None:
    """Refuse ``with_past=False`` where it means nothing: a task other than text-generation (an
    encoder-decoder's cache model also runs the first step) or options that need the cache
    (``needs_cache``: ``prune_lm_head``, ``kv_cache="shared"``).

    Raises:
        HFError: Naming the task or the options.
    """
    if with_past:
        return
    if task.kind != "causal-lm":
        raise HFError(
            f"with_past=False exports a text-generation decoder without its cache; task {task.name!r} "
            "has none to leave out (an encoder-decoder's cache model also runs the first step)."
        )
    if needs_cache:
        raise HFError("prune_lm_head and kv_cache='shared' need the decoder's cache: leave with_past on.")

