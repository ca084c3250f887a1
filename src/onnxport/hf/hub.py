"""A Hugging Face Hub model id (``owner/name``, ``owner/name@revision``) as a local model folder.

``onnxport export --hf`` and :func:`onnxport.hf.export` take a local folder; a string that names
no existing path but has a Hub id's form is resolved to its snapshot in the Hugging Face cache
(``HF_HUB_CACHE``, default ``~/.cache/huggingface/hub``) through huggingface_hub's
``snapshot_download``, as Optimum's ``optimum-cli export onnx --model owner/name`` does
(``optimum/exporters/onnx/__main__.py`` hands the id to ``TasksManager.get_model_from_task``, which
calls ``from_pretrained``). The snapshot is downloaded when it is missing unless the hub is
switched off (``HF_HUB_OFFLINE=1``: then only the cache is read). Weights of other frameworks and
exports are not fetched (:data:`IGNORED`).

onnxport switches the hub off when it imports transformers (:func:`switch_off`, called by
:func:`onnxport.hf.loading.import_transformers`: ``HF_HUB_OFFLINE=1`` unless set), so nothing later
downloads behind the user's back. A Hub id is resolved by the user's own setting: :func:`offline`
does not count onnxport's, and a download after it (a second export in the same process) runs
with huggingface_hub's offline flag, read from the environment when huggingface_hub was imported,
lifted for the call (:func:`_hub_on`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from onnxport.errors import HFError

# owner/name[@revision]: the Hub's repo id rules (letters, digits, '-', '_', '.'; no '--' or '..')
_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95})(?:@(?P<revision>[\w./-]+))?$")

#: Files of a repository not fetched: other frameworks' weights and other exports.
IGNORED = (
    "*.h5", "*.msgpack", "*.ot", "*.tflite", "*.mlmodel", "*.gguf", "*.onnx", "*.onnx_data", "*.onnx.data",
    "onnx/*", "openvino/*", "coreml/*", "tf_model*", "flax_model*", "rust_model*",
)  # fmt: skip


def hub_id(text: str) -> tuple[str, str | None] | None:
    """``(repo_id, revision)`` when ``text`` has a Hub model id's form, else ``None``."""
    found = _ID.match(text)
    if found is None or "--" in found["repo"] or ".." in found["repo"]:
        return None
    return found["repo"], found["revision"]


_SWITCHED_OFF: set[str] = set()  # "HF_HUB_OFFLINE" once switch_off set it (not the user)


def switch_off() -> None:
    """Set ``HF_HUB_OFFLINE=1`` for the process unless it is set, remembering that onnxport did."""
    if "HF_HUB_OFFLINE" not in os.environ:
        os.environ["HF_HUB_OFFLINE"] = "1"
        _SWITCHED_OFF.add("HF_HUB_OFFLINE")


def offline() -> bool:
    """Whether the user's ``HF_HUB_OFFLINE`` switches the hub off (huggingface_hub's truthy
    values); the one :func:`switch_off` set does not count."""
    if "HF_HUB_OFFLINE" in _SWITCHED_OFF and os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}


@contextlib.contextmanager
def _hub_on(constants: Any) -> Iterator[None]:
    """huggingface_hub's offline flag (``constants.HF_HUB_OFFLINE``, what ``is_offline_mode()``
    returns) false within the block when only onnxport's :func:`switch_off` had set it."""
    saved = constants.HF_HUB_OFFLINE
    lift = saved and not offline()
    if lift:
        constants.HF_HUB_OFFLINE = False
    try:
        yield
    finally:
        if lift:
            constants.HF_HUB_OFFLINE = saved


def resolve(model: str | Path) -> Path:
    """The local folder of ``model``: the path itself when it exists or is not a Hub id, else the
    Hub id's snapshot folder (module docstring).

    Raises:
        HFError: The id is not in the cache and the hub is off; the repository, revision or
            a file does not exist or is gated; the download failed. The message says how to fix it.
    """
    path = Path(model)
    found = None if path.exists() else hub_id(str(model))
    if found is None:
        return path
    repo, revision = found
    try:
        import huggingface_hub  # optional dependency (onnxport[hf]), as transformers is
    except ImportError as e:  # pragma: no cover - installed with the hf extra
        raise HFError(f"{model} is not a folder; a Hub id needs onnxport[hf] (pip install 'onnxport[hf]': {e}).") from e
    try:
        with _hub_on(huggingface_hub.constants):
            return Path(
                huggingface_hub.snapshot_download(
                    repo, revision=revision, ignore_patterns=list(IGNORED), local_files_only=offline()
                )
            )
    except Exception as e:  # every failure of the download becomes an HFError naming the fix
        raise HFError(_failure(e, repo, revision, huggingface_hub.constants.HF_HUB_CACHE)) from e


def _failure(error: Exception, repo: str, revision: str | None, cache: str) -> str:
    """The message of :func:`resolve`'s ``HFError`` for huggingface_hub's ``error``."""
    shown = f"{repo}@{revision}" if revision else repo
    kinds = {cls.__name__ for cls in type(error).__mro__}  # huggingface_hub.errors' classes and bases
    if "LocalEntryNotFoundError" in kinds:
        why = (
            "the hub is off (HF_HUB_OFFLINE=1): unset HF_HUB_OFFLINE to let onnxport download it, or"
            if offline() else f"the hub could not be reached ({_first_line(error)}):"
        )
        return (
            f"{shown} is neither a local folder nor in the Hugging Face cache ({cache}), and {why} "
            f"download it first (hf download {repo}), or give the model's local folder."
        )
    if "GatedRepoError" in kinds:
        return (
            f"{shown} is a gated repository: accept its terms on huggingface.co and log in (hf auth login) "
            f"or set HF_TOKEN, then export again ({_first_line(error)})."
        )
    if "RepositoryNotFoundError" in kinds:
        return (
            f"{shown}: no such model on the Hugging Face Hub, or it is private (log in with hf auth login) "
            f"({_first_line(error)}). A local folder must exist: check the path."
        )
    if "RevisionNotFoundError" in kinds:
        return f"{shown}: the repository has no revision {revision!r} ({_first_line(error)})."
    return (
        f"Could not download {shown} from the Hugging Face Hub ({type(error).__name__}: {_first_line(error)}); "
        "check the network, or download it first and give its local folder."
    )


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


__all__ = ["IGNORED", "hub_id", "offline", "resolve", "switch_off"]
