"""LLM decode/prefill speed on CPU: onnxport vs onnxruntime-genai's model builder, one run.

Generates a random-weight Llama checkpoint (float32 safetensors shards, ~0.9B parameters by
default: hidden 2048, intermediate 5632, 16 layers, 32 heads / 8 KV heads, vocab 32000;
``--tie-word-embeddings`` shares the LM head with the embedding table; ``--family smollm2`` is
SmolLM2-135M's shapes (30 small layers: the fixed per-step cost of a graph shows); ``--family qwen3`` is
Qwen3-0.6B's shapes instead: q/k RMS norms, head size 128, 28 layers, tied head; ``--family phi3``
4 layers of Phi-3.5-mini's shapes with its LongRoPE: head size 96, 131072 positions), exports
it with onnxport (standard ONNX, ``target="onnxruntime"``, ``quantize="int4"``) and with
onnxruntime-genai 0.18's model builder (fp32 and int4, installed by this script into a separate
virtual environment), then measures, alternating between exporters inside every cell:

- prefill of 128 tokens (empty past), and one decode step with a past of 128 and 1024 tokens,
- batch 1 and 4, fp32 and int4, onnxruntime CPU with ``--threads`` (2) intra-op threads;
- the first logits (prefill, batch 1): fp32 relative difference between onnxport and the builder
  (max |a - b| / max |b|), int4 error of each against the fp32 logits (relative L2) and its ratio;
- export time and peak RSS of every export, each through its command line in its own child process
  (``/usr/bin/time``; onnxport with ``--no-validate``, as the builder validates nothing).

Both graphs are run with plain ``onnxruntime.InferenceSession`` and numpy feeds (the builder's
GroupQueryAttention runs without a shared buffer there: past and present are distinct tensors).
The ``*-shared`` rows run as onnxruntime-genai does with ``past_present_share_buffer: true``:
``past_key_values.*`` are ``(batch, kv_heads, 2048, head_size)`` buffers bound (IOBinding) as
both the input and the ``present.*`` output, updated in place; ``builder-shared`` is the builder's
graph run that way, ``onnxport-ort-shared`` onnxport's ``kv_cache="shared"`` export.
Latency is the median of at least ``--repeats`` runs after one warm-up, each run after a short
pause so that the previous session's spinning threads are idle, the models taking turns in an
order that rotates (see :func:`measure`). The runs are split over one pass per session, each
creating the sessions in a rotated order (every graph created once at every position), and the
main thread and the session's workers are pinned to one
processor each (:func:`pin_threads`): both of these moved single sessions by more than the
differences measured. Export time
is the best of ``--export-repeats`` runs, the variants taking turns, each started from the same
page-cache state (:func:`settle_page_cache`). The machine's load
(``uptime``) is recorded before and after, since other processes share the cores.

Usage::

    HF_HUB_OFFLINE=1 python bench/llm_speed.py [--json bench/results/llm_speed.json]
    HF_HUB_OFFLINE=1 python bench/llm_speed.py --small       # 2-layer smoke run (~1 min)

The checkpoint and the ONNX folders live in ``--workdir`` and are deleted at the end unless
``--keep``.
"""

from __future__ import annotations

import argparse
import compileall
import gc
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from llm_checkpoint import (  # noqa: F401 (genai_speed and the tests read them here)
    FAMILIES,
    FAMILY_CONFIG,
    LLAMA_1B,
    PHI35_MINI_4L,
    QWEN3_06B,
    SMALL,
    SMOLLM2_135M,
    STATE_FAMILIES,
    make_checkpoint,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

BENCH = Path(__file__).resolve().parent
GENAI_VERSION = "0.18.0"
MARKER = "LLM_SPEED_RESULT "

# -- exports (each in a child process, measured by /usr/bin/time) ------------------------------
def settle_page_cache(work: Path, checkpoint: Path) -> None:
    """The same start for every export: no dirty pages, the earlier exports' files out of the page
    cache, the checkpoint in it.

    An export writes ~3.4 GB. Started while the previous export's writes are still dirty, it is
    throttled by the kernel (``vm.dirty_ratio``) at disk speed; started with the page cache full
    of earlier exports' files, every page it writes must first be reclaimed. Measured on this
    machine: the same onnxport export took 12.2 s after a few others and 5.0 s after their files
    left the cache, so without this an export's time depends on which ran before it. Each
    earlier output file is flushed (``os.sync``) and dropped (``posix_fadvise(DONTNEED)``), and
    the checkpoint is read through once so that no exporter pays for reading it from the disk.
    """
    os.sync()
    for path in work.rglob("*"):
        if path.is_file() and checkpoint not in path.parents:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    for path in checkpoint.iterdir():
        with path.open("rb") as f:
            while f.read(64 << 20):
                pass


def compile_bytecode() -> None:
    """Write onnxport's bytecode caches (``__pycache__``) before the exports, as ``pip install``
    of a wheel does and an editable install does not.

    With ``PYTHONDONTWRITEBYTECODE=1`` (set on this machine) an editable onnxport compiled its
    ~190 modules from source in every export, ~0.2 s of a 5 s SmolLM2 export (cProfile,
    ``builtins.compile`` under importlib, session 31), while the builder's package, installed by
    pip into the venv, has its caches. :func:`compileall.compile_dir` writes them whatever that
    variable says.
    """
    spec = importlib.util.find_spec("onnxport")
    if spec is not None and spec.origin is not None:
        compileall.compile_dir(Path(spec.origin).parent, quiet=1)


def timed(command: list[str], log: Path) -> dict[str, Any]:
    """Run ``command`` under ``/usr/bin/time -v``: wall seconds, peak RSS (MB), return code."""
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.run(
            ["/usr/bin/time", "-v", *command], stdout=out, stderr=subprocess.STDOUT, check=False
        )
    seconds = time.perf_counter() - start
    peak = None
    for line in log.read_text(errors="replace").splitlines():
        if "Maximum resident set size" in line:
            peak = int(line.split(":")[-1]) / 1024
    result = {"seconds": round(seconds, 2), "peak_mb": peak, "returncode": proc.returncode}
    if proc.returncode:
        result["error"] = log.read_text(errors="replace")[-2000:]
    return result


def onnxport_command(
    checkpoint: Path, out: Path, target: str | None, quantize: str | None, kv_cache: str = "concat",
    prune: bool = False,
) -> list[str]:
    """onnxport's command line, as the builder's is run: the streamed export of a safetensors
    folder, without the validation against eager (the builder has none). ``prune``:
    ``--prune-lm-head``."""
    command = [sys.executable, "-m", "onnxport", "export", "--hf", str(checkpoint), "-o", str(out)]
    if target is not None:
        command += ["--target", target, "--kv-cache", kv_cache]
    if quantize is not None:
        command += ["--quantize", quantize]
    if prune:
        command.append("--prune-lm-head")
    return [*command, "--no-validate"]


def ensure_genai(venv: Path) -> Path:
    """A venv (with the system site packages) holding onnxruntime-genai==0.18.0; its python."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import onnxruntime_genai as g; print(g.__version__)"]
    if (
        python.exists()
        and subprocess.run(probe, capture_output=True, text=True).stdout.strip() == GENAI_VERSION
    ):
        return python
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", f"onnxruntime-genai=={GENAI_VERSION}"],
        check=True,
    )
    return python


def builder_command(
    python: Path, checkpoint: Path, out: Path, precision: str, cache: Path, prune: bool = False
) -> list[str]:
    """The model builder's command line; ``prune``: ``--extra_options prune_lm_head=true`` (the
    LM head on the last position only, ``builders/base.py: make_lm_head``)."""
    return [
        str(python), "-m", "onnxruntime_genai.models.builder",
        "-i", str(checkpoint), "-o", str(out), "-p", precision, "-e", "cpu", "-c", str(cache),
        *(["--extra_options", "prune_lm_head=true"] if prune else []),
    ]  # fmt: skip


# -- measurement --------------------------------------------------------------------------------
def model_file(folder: Path) -> Path:
    """The decoder of an export folder: ``model.onnx`` (builder, flat) or ``onnx/model.onnx`` (hub)."""
    flat = folder / "model.onnx"
    return flat if flat.is_file() else folder / "onnx" / "model.onnx"


def pin_threads(threads: int) -> str | None:
    """Pins the calling (main) thread to the first processor and returns onnxruntime's
    ``session.intra_op_thread_affinities`` for the ``threads - 1`` workers: one processor each,
    the next ones (ids 1-based). None, and nothing pinned, when there are fewer processors.

    Unpinned, the scheduler sometimes left a session's worker on the main thread's core between
    the timed runs: that session then ran about 2x slower for the whole cell (SmolLM2 int4 decode,
    4 passes of 3 sessions: 10.1 ms instead of 5 ms, a different session each time); pinned, no
    session did.
    """
    processors = sorted(os.sched_getaffinity(0))
    if threads < 2 or len(processors) < threads:
        return None
    os.sched_setaffinity(0, {processors[0]})
    return ";".join(str(cpu + 1) for cpu in processors[1:threads])


def session(path: Path, threads: int, affinities: str | None = None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if affinities:
        options.add_session_config_entry("session.intra_op_thread_affinities", affinities)
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


SHARED_LENGTH = 2048  # the in-place buffers' max_length (the builder's default context)


class SharedBuffer:
    """Runs a session as onnxruntime-genai does with ``past_present_share_buffer: true``: each
    ``past_key_values.*`` is copied once into a ``SHARED_LENGTH`` buffer bound as both that input
    and its ``present.*`` output (IOBinding), so the kernel writes the new rows in place."""

    def __init__(self, sess: Any) -> None:
        self.sess = sess
        self.bound: tuple[Any, ...] | None = None  # the current inputs, binding and buffers

    def get_inputs(self) -> Any:
        return self.sess.get_inputs()

    def _binding(self, inputs: dict[str, np.ndarray]) -> Any:
        import onnxruntime as ort

        io = self.sess.io_binding()
        keep = []
        for name, array in inputs.items():
            if name.startswith("past_key_values."):
                b, h, past, d = array.shape
                buffer = np.zeros((b, h, max(SHARED_LENGTH, past + 1), d), array.dtype)
                buffer[:, :, :past] = array
                value = ort.OrtValue.ortvalue_from_numpy(buffer)
                keep.append(value)
                io.bind_ortvalue_input(name, value)
                io.bind_ortvalue_output(name.replace("past_key_values.", "present."), value)
            else:
                io.bind_cpu_input(name, array)
        io.bind_output("logits")
        return io, keep

    def run(self, outputs: list[str], inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Bind ``inputs`` on their first run (a new cell), releasing the previous cell's buffers
        first (kept, every cell's 2048-row buffers added up to ~7 GB per session at batch 4)."""
        if self.bound is None or self.bound[0] is not inputs:
            self.bound = None
            self.bound = (inputs, *self._binding(inputs))
        io = self.bound[1]
        self.sess.run_with_iobinding(io)
        return [io.get_outputs()[-1].numpy()]  # logits, bound last


def feeds(
    sess: Any, batch: int, sequence: int, past: int, head_dim: int, seed: int = 0
) -> dict[str, np.ndarray]:
    """Inputs for any graph with ``input_ids``, ``attention_mask``, optional ``position_ids`` and
    ``past_key_values.{i}.key/value`` ([batch, kv_heads, past, head_dim])."""
    rng = np.random.default_rng(seed)
    result: dict[str, np.ndarray] = {}
    for value in sess.get_inputs():
        name = value.name
        if name == "input_ids":
            result[name] = rng.integers(3, 1000, (batch, sequence), dtype=np.int64)
        elif name == "attention_mask":
            result[name] = np.ones((batch, past + sequence), dtype=np.int64)
        elif name == "position_ids":
            result[name] = np.tile(np.arange(past, past + sequence, dtype=np.int64), (batch, 1))
        elif name.startswith("past_key_values"):
            heads = value.shape[1]
            dim = value.shape[3] if isinstance(value.shape[3], int) else head_dim
            result[name] = (0.5 * rng.standard_normal((batch, heads, past, dim))).astype(np.float32)
        else:
            raise SystemExit(f"unexpected input {name} {value.shape}")
        if name in ("input_ids", "attention_mask", "position_ids") and "int32" in value.type:
            result[name] = result[name].astype(np.int32)
    return result


SETTLE_SECONDS = 0.05  # pause before every timed run (see measure)


CELL_SECONDS = 2.0  # timed runs per model, cell and pass: up to this long ...
MOST_RUNS = 26  # ... and at most this many per model and cell over all passes


def rotated(items: list[str], turn: int) -> list[str]:
    """``items`` starting at ``turn`` (mod its length), wrapping around."""
    k = turn % len(items)
    return items[k:] + items[:k]


def measure(
    sessions: dict[str, Any],
    cases: list[tuple[str, int, int, int]],
    repeats: int,
    head_dim: int,
    passes: int = 1,
) -> dict[str, dict[str, list[float]]]:
    """Seconds of every timed run per (case, model); models take turns inside every repetition.

    Every timed run follows a ``SETTLE_SECONDS`` pause: onnxruntime's intra-op threads keep
    spinning for a while after a run, and a session started right after another one shares the
    two cores with those spinning threads (measured: two int4 decode sessions alternating
    back to back both took ~31 ms a step, ~15 ms each with the pause). The order of the turns
    rotates with every repetition, so no model always runs first. This call is one of ``passes``
    (see ``main``): it takes its share of at least ``repeats`` runs per cell, more for short cells
    (up to ``CELL_SECONDS`` per model, its share of at most ``MOST_RUNS``), since a 20 ms step is
    noisier than a 2 s prefill.
    """
    out: dict[str, dict[str, list[float]]] = {}
    names = list(sessions)
    for label, batch, sequence, past in cases:
        inputs = {name: feeds(s, batch, sequence, past, head_dim) for name, s in sessions.items()}
        warm = []
        for name, s in sessions.items():  # warm-up
            time.sleep(SETTLE_SECONDS)
            start = time.perf_counter()
            s.run(["logits"], inputs[name])
            warm.append(time.perf_counter() - start)
        share = max(-(-repeats // passes), min(-(-MOST_RUNS // passes), int(CELL_SECONDS / max(min(warm), 1e-3))))
        times: dict[str, list[float]] = {name: [] for name in sessions}
        for turn in range(share):
            for name in rotated(names, turn):
                time.sleep(SETTLE_SECONDS)
                start = time.perf_counter()
                sessions[name].run(["logits"], inputs[name])
                times[name].append(time.perf_counter() - start)
        out[f"{label} b{batch}"] = times
    return out


def medians(passes: list[dict[str, dict[str, list[float]]]]) -> dict[str, dict[str, float]]:
    """Median milliseconds per (case, model) over the timed runs of every pass, printed a row a
    case."""
    out: dict[str, dict[str, float]] = {}
    for cell in passes[0]:
        merged: dict[str, list[float]] = {}
        for times in passes:
            for name, runs in times[cell].items():
                merged.setdefault(name, []).extend(runs)
        out[cell] = {name: statistics.median(runs) * 1000 for name, runs in merged.items()}
        count = min(len(runs) for runs in merged.values())
        row = "  ".join(f"{n} {v:8.1f} ms" for n, v in out[cell].items())
        print(f"  {cell:18s} (x{count}): {row}", flush=True)
    return out


def open_sessions(
    names: list[str], folders: dict[str, Path], threads: int, affinities: str | None = None
) -> dict[str, Any]:
    """Sessions of ``names``, created in that order (``<builder>-control``: a second session of
    the builder's graph, the A/A control), and the in-place runs (:class:`SharedBuffer`) of the
    shared-buffer graphs and of the builder's graph (``builder-shared``: the builder's session,
    run that way)."""
    sessions: dict[str, Any] = {
        n: session(model_file(folders[n.removesuffix("-control")]), threads, affinities)
        for n in names
    }
    shared = any(n.startswith("onnxport-ort-shared") for n in names)
    for n in list(sessions):
        if n.startswith("builder") and not n.endswith("-control") and shared:
            sessions[f"{n}-shared"] = SharedBuffer(sessions[n])
        elif n.startswith("onnxport-ort-shared"):
            sessions[n] = SharedBuffer(sessions[n])
    return sessions


def first_logits(sess: Any, head_dim: int) -> np.ndarray:
    return sess.run(["logits"], feeds(sess, 1, 128, 0, head_dim, seed=1))[0].astype(np.float64)


def rel_max(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


def rel_l2(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# -- main ---------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/onnxport-llm-speed"))
    parser.add_argument("--venv", type=Path, default=Path("/tmp/genai-venv"))
    parser.add_argument("--json", type=Path, default=BENCH / "results" / "llm_speed.json")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="least timed runs per cell")
    parser.add_argument(
        "--export-repeats", type=int, default=3, help="exports per variant (best time kept)"
    )
    parser.add_argument("--small", action="store_true", help="2 small layers (smoke run)")
    parser.add_argument("--keep", action="store_true", help="keep the checkpoint and ONNX folders")
    parser.add_argument(
        "--measure-only",
        action="store_true",
        help="reuse the ONNX folders of a --keep run in --workdir",
    )
    parser.add_argument(
        "--cases",
        default="prefill128,decode128,decode1024",
        help="comma list of prefill128, decode128, decode1024",
    )
    parser.add_argument("--batches", default="1,4", help="comma list of batch sizes")
    parser.add_argument("--skip", default="", help="comma list of variants not to export/run")
    parser.add_argument(
        "--tie-word-embeddings", action="store_true", help="the LM head shares the embedding table"
    )
    parser.add_argument(
        "--family", choices=[f for f in FAMILIES if f not in STATE_FAMILIES], default="llama",
        help="llama: the ~1B Llama; qwen3: Qwen3-0.6B's shapes (q/k norms, tied head); "
        "smollm2: SmolLM2-135M's shapes (30 small layers, tied head: per-step overhead shows); "
        "phi3: 4 layers of Phi-3.5-mini's shapes with LongRoPE (two rotary caches of 131072 positions)",
    )  # fmt: skip
    parser.add_argument(
        "--control",
        action="store_true",
        help="also time a second session of the builder's graph (builder-control): the ratio "
        "of a graph to itself, i.e. the run's noise (fp32: one more 3.4 GB session in RAM)",
    )
    parser.add_argument(
        "--prune-lm-head",
        action="store_true",
        help="add the last-position-logits exports: onnxport-ort-shared-pruned (--prune-lm-head) "
        "and builder-pruned (prune_lm_head=true), fp32 and int4 (skip others to save RAM)",
    )
    args = parser.parse_args()

    _, _, family_sizes, family_tied = FAMILIES[args.family]
    sizes = SMALL if args.small else family_sizes
    tied = args.tie_word_embeddings or family_tied
    work = args.workdir
    if work.exists() and not args.measure_only:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "family": args.family, "sizes": sizes, "tied": tied, "threads": args.threads, "load_before": uptime(),
    }  # fmt: skip
    print(report["load_before"], flush=True)
    try:
        start = time.perf_counter()
        if not args.measure_only:
            report["parameters"] = make_checkpoint(work / "ckpt", sizes, tied=tied, family=args.family)
        report["checkpoint_seconds"] = round(time.perf_counter() - start, 1)
        print(
            f"checkpoint: {report.get('parameters', 0) / 1e9:.3f} B parameters, {report['checkpoint_seconds']} s",
            flush=True,
        )
        python = ensure_genai(args.venv)
        compile_bytecode()
        ckpt = work / "ckpt"
        variants: dict[str, tuple[list[str], str]] = {
            "onnxport": (onnxport_command(ckpt, work / "op", None, None), "fp32"),
            "onnxport-ort": (onnxport_command(ckpt, work / "op-ort", "onnxruntime", None), "fp32"),
            "builder": (builder_command(python, ckpt, work / "gb", "fp32", work / "cache"), "fp32"),
            "onnxport-ort-int4": (
                onnxport_command(ckpt, work / "op-ort-int4", "onnxruntime", "int4"),
                "int4",
            ),
            "builder-int4": (
                builder_command(python, ckpt, work / "gb-int4", "int4", work / "cache"),
                "int4",
            ),
            "onnxport-ort-shared": (
                onnxport_command(ckpt, work / "op-shared", "onnxruntime", None, "shared"),
                "fp32",
            ),
            "onnxport-ort-shared-int4": (
                onnxport_command(ckpt, work / "op-shared-int4", "onnxruntime", "int4", "shared"),
                "int4",
            ),
        }
        folders = {
            "onnxport": work / "op", "onnxport-ort": work / "op-ort", "builder": work / "gb",
            "onnxport-ort-int4": work / "op-ort-int4", "builder-int4": work / "gb-int4",
            "onnxport-ort-shared": work / "op-shared",
            "onnxport-ort-shared-int4": work / "op-shared-int4",
        }  # fmt: skip
        if args.prune_lm_head:
            for precision, suffix, quantize in (("fp32", "", None), ("int4", "-int4", "int4")):
                ours, theirs = f"onnxport-ort-shared-pruned{suffix}", f"builder-pruned{suffix}"
                folders[ours], folders[theirs] = work / f"op-shared-pruned{suffix}", work / f"gb-pruned{suffix}"
                variants[ours] = (
                    onnxport_command(ckpt, folders[ours], "onnxruntime", quantize, "shared", prune=True), precision
                )
                variants[theirs] = (
                    builder_command(python, ckpt, folders[theirs], precision, work / "cache", prune=True), precision
                )
        skip = {s for s in args.skip.split(",") if s}
        report["exports"] = {}
        for attempt in range(1 if args.measure_only else args.export_repeats):
            for name, (command, _) in variants.items():
                if name in skip:
                    continue
                if args.measure_only:
                    if model_file(folders[name]).is_file():
                        report["exports"][name] = {"seconds": 0.0, "peak_mb": 0.0, "returncode": 0}
                    continue
                if report["exports"].get(name, {}).get("returncode"):
                    continue  # failed once: not retried
                shutil.rmtree(folders[name], ignore_errors=True)  # onnxport wants a new folder
                settle_page_cache(work, ckpt)
                result = timed(command, work / f"{name}.log")
                print(
                    f"export {name} (run {attempt + 1}): {result['seconds']} s, "
                    f"peak {result['peak_mb']:.0f} MB, rc {result['returncode']}",
                    flush=True,
                )
                if result["returncode"]:
                    print(result["error"][-1500:], flush=True)
                best = report["exports"].get(name)
                if best is not None:  # best time of the runs, highest peak
                    result["runs"] = [*best.get("runs", [best["seconds"]]), result["seconds"]]
                    result["peak_mb"] = max(best["peak_mb"] or 0, result["peak_mb"] or 0)
                    result["seconds"] = min(result["runs"])
                report["exports"][name] = result
                shutil.rmtree(work / "cache", ignore_errors=True)
        head_dim = sizes.get("head_dim", sizes["hidden_size"] // sizes["num_attention_heads"])
        ok = [n for n, r in report["exports"].items() if r["returncode"] == 0]
        batches = [int(b) for b in args.batches.split(",")]
        wanted = set(args.cases.split(","))
        cases = [("prefill 128", b, 128, 0) for b in batches if "prefill128" in wanted]
        cases += [
            (f"decode past {p}", b, 1, p)
            for p in (128, 1024)
            for b in batches
            if f"decode{p}" in wanted
        ]
        report["latency_ms"] = {}
        report["load_measure_start"] = uptime()
        affinities = pin_threads(args.threads)  # after the exports: their processes would inherit it
        report["thread_affinities"] = affinities
        logits: dict[str, np.ndarray] = {}
        for precision in ("fp32", "int4"):
            names = [n for n in ok if variants[n][1] == precision]
            if not names:
                continue
            print(f"{precision}: {', '.join(names)}", flush=True)
            # One pass per session, each creating the sessions in a rotated order, so that every
            # graph is created once at every position: the session created first ran 1-4% slower
            # than later sessions of the same graph in one process (the builder's 4-layer fp32
            # graph in three sessions, decode past 128, turns rotating; a session created after
            # the first was released was slow in its place), and two passes in opposite orders
            # still left one graph in the middle both times (SmolLM2 fp32: the builder's control
            # session, created last twice, at 1.04-1.08 of the builder's).
            builder = "builder" if precision == "fp32" else "builder-int4"
            created = names + ([f"{builder}-control"] if args.control and builder in names else [])
            passes = []
            for turn in range(len(created)):
                order = rotated(created, turn)
                sessions = open_sessions(order, folders, args.threads, affinities)
                for n in names:
                    if n not in logits:
                        logits[n] = first_logits(getattr(sessions[n], "sess", sessions[n]), head_dim)
                print(f" sessions created in the order {', '.join(order)}", flush=True)
                passes.append(measure(sessions, cases, args.repeats, head_dim, len(created)))
                del sessions
                gc.collect()
            report["latency_ms"][precision] = medians(passes)
        report["accuracy"] = accuracy(logits)
        for key, value in report["accuracy"].items():
            print(f"{key}: {value:.4g}", flush=True)
        report["load_after"] = uptime()
        print(report["load_after"], flush=True)
        report["ratios"] = ratios(report)
        print_tables(report)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1))
    print(f"wrote {args.json}")


def accuracy(logits: dict[str, np.ndarray]) -> dict[str, float]:
    result: dict[str, float] = {}
    reference = logits.get("builder")
    if reference is None:
        return result
    for name in ("onnxport", "onnxport-ort", "onnxport-ort-shared", "onnxport-ort-shared-pruned", "builder-pruned"):
        if name in logits:  # a pruned graph's one row against the last of the builder's 128
            result[f"{name} vs builder fp32 (rel max)"] = rel_max(logits[name], reference[:, -logits[name].shape[1] :])
    for name in ("onnxport-ort-int4", "onnxport-ort-shared-int4", "builder-int4", "onnxport-ort-shared-pruned-int4",
                 "builder-pruned-int4"):  # fmt: skip
        if name in logits:
            last = reference[:, -logits[name].shape[1] :]
            result[f"{name} vs fp32 (rel L2)"] = rel_l2(logits[name], last)
            result[f"{name} vs fp32 (rel max)"] = rel_max(logits[name], last)
    for label, ours_name, theirs_name in (
        ("int4 error ratio", "onnxport-ort-int4", "builder-int4"),
        ("pruned int4 error ratio", "onnxport-ort-shared-pruned-int4", "builder-pruned-int4"),
    ):
        ours, theirs = result.get(f"{ours_name} vs fp32 (rel L2)"), result.get(f"{theirs_name} vs fp32 (rel L2)")
        if ours is not None and theirs:
            result[f"{label} (onnxport / builder)"] = ours / theirs
    return result


PAIRS = {
    "fp32": [
        ("onnxport", "builder"),
        ("onnxport-ort", "builder"),
        ("onnxport-ort-shared", "builder-shared"),
        ("onnxport-ort-shared-pruned", "builder-pruned-shared"),
        ("onnxport-ort-shared-pruned", "builder-shared"),
        ("builder-control", "builder"),
    ],
    "int4": [
        ("onnxport-ort-int4", "builder-int4"),
        ("onnxport-ort-shared-int4", "builder-int4-shared"),
        ("onnxport-ort-shared-pruned-int4", "builder-pruned-int4-shared"),
        ("onnxport-ort-shared-pruned-int4", "builder-int4-shared"),
        ("builder-int4-control", "builder-int4"),
    ],
}


def ratios(report: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for precision, cells in report.get("latency_ms", {}).items():
        for ours, theirs in PAIRS[precision]:
            pair = [row[ours] / row[theirs] for row in cells.values() if ours in row and theirs in row]
            for cell, row in cells.items():
                if ours in row and theirs in row:
                    out[f"{ours}/{theirs} {cell}"] = row[ours] / row[theirs]
            if pair:  # one figure per pair: cells vary by a few percent from run to run
                out[f"{ours}/{theirs} latency geomean"] = statistics.geometric_mean(pair)
    exports = report.get("exports", {})
    for precision in PAIRS:
        for ours, theirs in PAIRS[precision]:
            theirs = theirs.removesuffix("-shared")  # the same builder export
            if ours.endswith("-control"):
                continue
            if ours in exports and theirs in exports and exports[theirs]["seconds"]:
                out[f"{ours}/{theirs} export time"] = (
                    exports[ours]["seconds"] / exports[theirs]["seconds"]
                )
    return out


def print_tables(report: dict[str, Any]) -> None:
    for precision, cells in report.get("latency_ms", {}).items():
        names = list(next(iter(cells.values())))
        print(f"\n| {precision} (ms) | " + " | ".join(names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for cell, row in cells.items():
            print(f"| {cell} | " + " | ".join(f"{row[n]:.1f}" for n in names) + " |")
    print("\n| export | seconds | peak MB |\n|---|---|---|")
    for name, r in report.get("exports", {}).items():
        print(f"| {name} | {r['seconds']} | {r['peak_mb']:.0f} |")
    print()
    for key, value in {**report.get("accuracy", {}), **report.get("ratios", {})}.items():
        print(f"{key}: {value:.4g}")


if __name__ == "__main__":
    main()
