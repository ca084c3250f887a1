"""The output folder of an hf export: checked before the export, filled in a staging sibling, then
moved into place, so that a failed or killed export leaves nothing and never touches what the
folder held (a killed export's staging folder is removed by the next export to the same place).

A folder that exists and is not empty is refused unless ``overwrite`` is given (the CLI's
``--overwrite``); with it, the previous folder is replaced only once the new one is complete and
validated: it is renamed aside (``.<name>.previous.onnxport-<pid>-<random>``), the staging folder
renamed into place, and the old one deleted (restored when the second rename fails). An export
killed between those steps leaves the aside folder; the next export to the same place puts it back
when the destination is missing (the kill came between the two renames) and deletes it when the
destination holds the new export (:func:`recover_previous`), before anything else. Optimum's ``optimum-cli export onnx`` writes into an
existing folder; onnxport asks first, since an export folder is replaced whole (stale files of the
previous export, ``model.onnx.data`` of another layout, are not left beside the new ones).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from onnxport.data_file import stale_entries
from onnxport.errors import HFError
from onnxport.weights.save import TEMP_TAG, sweep_stale

_PREVIOUS = ".{name}.previous"  # the aside folder of a replaced export: + TEMP_TAG + <pid>-<random>


def check_output_dir(output_dir: str | Path, overwrite: bool = False) -> Path:
    """``output_dir`` as a ``Path`` after checking that the export may write it, once what a
    killed export set aside there is settled (:func:`recover_previous`: an old export put back
    counts as the folder's content).

    Raises:
        HFError: It exists and is not a folder, or is a non-empty folder and ``overwrite`` is
            false, or its parent folder does not exist.
    """
    path = Path(output_dir)
    if path.parent.is_dir():
        recover_previous(path)
    if path.exists() and not path.is_dir():
        raise HFError(f"Output folder {path} exists and is a file; remove it or choose another.")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise HFError(
            f"Output folder {path} exists and is not empty; remove it, choose another, or pass "
            "overwrite=True (CLI: --overwrite) to replace it once the new export is complete."
        )
    if not path.parent.is_dir():
        raise HFError(f"Cannot write to {path}: folder {path.parent} does not exist.")
    return path


def recover_previous(destination: Path) -> list[str]:
    """Settle the folders :func:`publish` set aside for ``destination`` in processes that are gone
    (killed between its steps): the newest is renamed back to ``destination`` when that is
    missing, every other one is deleted. Folders of live processes are left alone.

    Returns:
        The names of the aside folders settled (restored or deleted).
    """
    prefix = f"{_PREVIOUS.format(name=destination.name)}{TEMP_TAG}"
    stale = [entry for entry in stale_entries(destination.parent, prefix) if entry.is_dir()]
    stale.sort(key=lambda entry: entry.stat().st_mtime, reverse=True)
    for entry in stale:
        if not destination.exists() and not destination.is_symlink():
            entry.rename(destination)
        else:
            shutil.rmtree(entry, ignore_errors=True)
    return [entry.name for entry in stale]


@contextlib.contextmanager
def staged(destination: Path) -> Iterator[Path]:
    """A new hidden sibling folder of ``destination`` to write the export into; moved into place
    (:func:`publish`) when the block ends without an error, deleted when it raises.

    Its name carries the process id (``.<name>.onnxport-<pid>-<random>``, the tag of
    :mod:`onnxport.weights.save`): a killed export cannot delete it, so the next export to the
    same destination removes the staging folders of processes that are gone
    (:func:`onnxport.weights.save.sweep_stale`) before it starts its own.
    """
    sweep_stale(destination.parent, destination.name, keep=set())
    prefix = f".{destination.name}{TEMP_TAG}{os.getpid()}-"
    staging = Path(tempfile.mkdtemp(prefix=prefix, dir=destination.parent))
    try:
        yield staging
        publish(staging, destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def publish(staging: Path, destination: Path) -> None:
    """Move the complete ``staging`` folder to ``destination``, replacing what it held (see the
    module doc); its permissions become a new folder's (``mkdtemp`` made it private)."""
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)
    if destination.is_dir() and not any(destination.iterdir()):
        destination.rmdir()
    if not destination.exists():
        staging.rename(destination)
        return
    prefix = f"{_PREVIOUS.format(name=destination.name)}{TEMP_TAG}{os.getpid()}-"
    previous = Path(tempfile.mkdtemp(prefix=prefix, dir=destination.parent))
    previous.rmdir()
    destination.rename(previous)
    try:
        staging.rename(destination)
    except BaseException:
        previous.rename(destination)
        raise
    shutil.rmtree(previous, ignore_errors=True)


__all__ = ["check_output_dir", "publish", "recover_previous", "staged"]
