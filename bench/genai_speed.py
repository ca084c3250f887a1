"""Generation speed through onnxruntime-genai itself: onnxport's export folder vs the model builder's.

``llm_speed.py`` times single graph runs in plain onnxruntime sessions; this benchmark times what
a user of onnxruntime-genai sees: ``og.Model(folder)``, a ``Generator`` with greedy search,
``append_tokens`` of the prompt (the prefill, the graph run on the whole prompt) and
``generate_next_token`` (one decode step each: the graph run on the last token, the cache
updated in place since both folders declare ``past_present_share_buffer: true``), with each
folder's own ``genai_config.json`` as written (one override for both: ``--threads`` intra-op
threads, one inter-op thread, so the machine's load is the only difference).

The checkpoint is ``llm_speed.py``'s random-weight Llama (``--family``, ``--small``; also
``--family lfm2``, LFM2-350M's shapes: short-convolution layers whose state genai feeds, which
``llm_speed.py``'s sessions do not) and the
folders are exported as there (onnxport's command line ``--target onnxruntime --kv-cache shared
[--quantize int4] --no-validate``; the builder ``-p fp32|int4 -e cpu``), or reused from an
``llm_speed.py --keep`` workdir (``--reuse DIR``: its ``op-shared``, ``op-shared-int4``, ``gb``,
``gb-int4``). Per precision and for each of ``--passes`` passes, the models are loaded in an
order that rotates from pass to pass (in one process the model created first ran slower, as
``llm_speed.py`` found for sessions), then for every prompt length and batch they take turns
(order rotating every repetition, a pause before each turn so that the other model's intra-op
threads are idle), each turn one generation: the prompt (random token ids, the same for both)
then ``--new-tokens`` greedy tokens. Reported per cell: the median prefill (milliseconds of
``append_tokens``) and the median decode step (milliseconds of one ``generate_next_token``
after the first, over all steps of all turns and passes), the ratios onnxport/builder and the
share of generated tokens the two agree on (random weights: fp32 logits agree to ~1e-6, so the
tokens match; the int4 graphs hold the same bytes but their float ops differ in the last bits,
which the int8 activations of ``accuracy_level`` 4 amplify, so int4 tokens part after a near
tie). ``--control`` adds ``builder-control``, a second model of the builder's folder timed like
the others: its ratio to the builder is the run's noise.

Usage::

    HF_HUB_OFFLINE=1 python bench/genai_speed.py [--json bench/results/genai_speed.json]
    HF_HUB_OFFLINE=1 python bench/genai_speed.py --small       # 2 small layers, smoke run
    HF_HUB_OFFLINE=1 python bench/genai_speed.py --reuse /tmp/onnxport-llm-speed
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

import llm_speed

BENCH = Path(__file__).resolve().parent
SETTLE_SECONDS = 0.05
#: exported folder per (exporter, precision), as ``llm_speed.py`` names them
FOLDERS = {
    ("onnxport", "fp32"): "op-shared",
    ("onnxport", "int4"): "op-shared-int4",
    ("builder", "fp32"): "gb",
    ("builder", "int4"): "gb-int4",
}


def export_all(work: Path, precisions: list[str], venv: Path) -> dict[str, Any]:
    """Export the checkpoint in ``work/ckpt`` with both exporters at ``precisions`` (each from the
    same page-cache state, :func:`llm_speed.settle_page_cache`); seconds and peak RSS of each."""
    python = llm_speed.ensure_genai(venv)
    llm_speed.compile_bytecode()
    ckpt = work / "ckpt"
    results: dict[str, Any] = {}
    for (exporter, precision), name in FOLDERS.items():
        if precision not in precisions:
            continue
        out = work / name
        quantize = "int4" if precision == "int4" else None
        if exporter == "onnxport":
            command = llm_speed.onnxport_command(ckpt, out, "onnxruntime", quantize, "shared")
        else:
            command = llm_speed.builder_command(python, ckpt, out, precision, work / "cache")
        shutil.rmtree(out, ignore_errors=True)
        llm_speed.settle_page_cache(work, ckpt)
        result = llm_speed.timed(command, work / f"{name}.log")
        shutil.rmtree(work / "cache", ignore_errors=True)
        print(f"export {exporter} {precision}: {result['seconds']} s, peak {result['peak_mb']:.0f} MB, "
              f"rc {result['returncode']}", flush=True)  # fmt: skip
        if result["returncode"]:
            raise SystemExit(result["error"])
        results[f"{exporter} {precision}"] = result
    return results


def load(folder: Path, threads: int) -> Any:
    """``og.Model`` of ``folder`` with its own config, ``threads`` intra-op threads overlaid."""
    import onnxruntime_genai as og  # the test extra; imported here so --help works without it

    config = og.Config(str(folder))
    options = {"intra_op_num_threads": threads, "inter_op_num_threads": 1}
    config.overlay(json.dumps({"model": {"decoder": {"session_options": options}}}))
    return og.Model(config)


def generate(model: Any, prompt: np.ndarray, new_tokens: int) -> tuple[float, list[float], np.ndarray]:
    """One greedy generation of ``new_tokens`` after ``prompt`` (``[batch, length]`` int32):
    seconds of the prefill, seconds of each later decode step, the generated ids
    ``[batch, new_tokens]``.

    ``append_tokens`` runs the graph on the prompt; the first ``generate_next_token`` only picks
    a token from those logits, every later one runs the graph on the previous token first
    (onnxruntime-genai's ``Generator``), so the decode steps are the later calls.
    """
    import onnxruntime_genai as og

    params = og.GeneratorParams(model)
    total = prompt.shape[1] + new_tokens
    params.set_search_options(max_length=total, min_length=total, do_sample=False, batch_size=prompt.shape[0])
    generator = og.Generator(model, params)
    start = time.perf_counter()
    generator.append_tokens(prompt)
    prefill = time.perf_counter() - start
    steps = []
    for step in range(new_tokens):
        start = time.perf_counter()
        generator.generate_next_token()
        if step:
            steps.append(time.perf_counter() - start)
    ids = np.stack([generator.get_sequence(i)[prompt.shape[1] :] for i in range(prompt.shape[0])])
    return prefill, steps, ids


def measure(
    models: dict[str, Any], prompt: np.ndarray, new_tokens: int, repeats: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, np.ndarray]]:
    """One cell of one pass: the models take turns ``repeats`` times (after one warm-up each).
    Seconds of every prefill and of every decode step per model, and each model's generated ids."""
    names = list(models)
    prefill: dict[str, list[float]] = {n: [] for n in names}
    steps: dict[str, list[float]] = {n: [] for n in names}
    ids: dict[str, np.ndarray] = {}
    for name in names:  # warm-up
        time.sleep(SETTLE_SECONDS)
        ids[name] = generate(models[name], prompt, new_tokens)[2]
    for turn in range(repeats):
        for name in llm_speed.rotated(names, turn):
            time.sleep(SETTLE_SECONDS)
            seconds, each, _ = generate(models[name], prompt, new_tokens)
            prefill[name].append(seconds)
            steps[name].extend(each)
    return prefill, steps, ids


def summary(runs: list[tuple[dict[str, list[float]], dict[str, list[float]], dict[str, np.ndarray]]]) -> dict[str, Any]:
    """A cell over its passes: median prefill and decode-step milliseconds per model (over every
    run of every pass), onnxport/builder ratios, the share of generated ids the two agree on."""
    names = list(runs[0][0])
    prefill = {n: statistics.median([t for run in runs for t in run[0][n]]) * 1000 for n in names}
    decode = {n: statistics.median([t for run in runs for t in run[1][n]]) * 1000 for n in names}
    return {
        "prefill_ms": prefill,
        "decode_ms": decode,
        "runs": min(len(run[0][n]) for n in names for run in runs) * len(runs),
        "ratio_prefill": prefill["onnxport"] / prefill["builder"],
        "ratio_decode": decode["onnxport"] / decode["builder"],
        "same_tokens": float(np.mean(runs[0][2]["onnxport"] == runs[0][2]["builder"])),
        **({"control_prefill": prefill["builder-control"] / prefill["builder"],
            "control_decode": decode["builder-control"] / decode["builder"]} if "builder-control" in names else {}),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/onnxport-genai-speed"))
    parser.add_argument("--reuse", type=Path, help="an llm_speed.py --keep workdir to measure")
    parser.add_argument("--venv", type=Path, default=Path("/tmp/genai-venv"))
    parser.add_argument("--json", type=Path, default=BENCH / "results" / "genai_speed.json")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="generations per model, cell and pass")
    parser.add_argument("--passes", type=int, default=2, help="model loads, creation order rotated")
    parser.add_argument("--prompts", default="128,1024", help="comma list of prompt lengths")
    parser.add_argument("--batches", default="1,4", help="comma list of batch sizes")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--precisions", default="fp32,int4")
    parser.add_argument("--family", choices=list(llm_speed.FAMILIES), default="llama")
    parser.add_argument("--small", action="store_true", help="2 small layers (smoke run)")
    parser.add_argument(
        "--control", action="store_true",
        help="also time a second model of the builder's folder (builder-control): the ratio of a "
        "folder to itself, i.e. the run's noise",
    )  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the checkpoint and folders")
    args = parser.parse_args()

    precisions = args.precisions.split(",")
    sizes = llm_speed.SMALL if args.small else llm_speed.FAMILIES[args.family][2]
    report: dict[str, Any] = {"family": args.family, "sizes": sizes, "threads": args.threads}
    work = args.reuse or args.workdir
    try:
        if args.reuse is None:
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            tied = llm_speed.FAMILIES[args.family][3]
            report["parameters"] = llm_speed.make_checkpoint(work / "ckpt", sizes, tied=tied, family=args.family)
            report["exports"] = export_all(work, precisions, args.venv)
        report["load_before"] = llm_speed.uptime()
        rng = np.random.default_rng(0)
        vocab = sizes["vocab_size"]
        report["cells"] = {}
        for precision in precisions:
            cells = [
                (f"{precision} prompt {length} b{batch}", rng.integers(3, vocab, (batch, length), dtype=np.int32))
                for length in (int(p) for p in args.prompts.split(","))
                for batch in (int(b) for b in args.batches.split(","))
            ]
            runs: dict[str, list[Any]] = {key: [] for key, _ in cells}
            for turn in range(args.passes):  # creation order rotated: the first made ran slower
                order = llm_speed.rotated(["onnxport", "builder", *(["builder-control"] if args.control else [])], turn)
                models = {n: load(work / FOLDERS[n.removesuffix("-control"), precision], args.threads) for n in order}
                print(f"{precision}: models created in the order {', '.join(order)}", flush=True)
                for key, prompt in cells:
                    runs[key].append(measure(models, prompt, args.new_tokens, args.repeats))
                del models
                gc.collect()
            for key, _ in cells:
                cell = report["cells"][key] = summary(runs[key])
                print(f"{key:24s} prefill {cell['prefill_ms']['onnxport']:8.1f} / "
                      f"{cell['prefill_ms']['builder']:8.1f} ms ({cell['ratio_prefill']:.3f})  decode "
                      f"{cell['decode_ms']['onnxport']:7.2f} / {cell['decode_ms']['builder']:7.2f} ms "
                      f"({cell['ratio_decode']:.3f})  same tokens {cell['same_tokens']:.2f}"
                      + (f"  control {cell['control_prefill']:.3f} / {cell['control_decode']:.3f}"
                         if "control_decode" in cell else ""),
                      flush=True)  # fmt: skip
        ratios = [c[k] for c in report["cells"].values() for k in ("ratio_prefill", "ratio_decode")]
        report["geomean"] = float(np.exp(np.mean(np.log(ratios))))
        report["load_after"] = llm_speed.uptime()
        print(f"onnxport/builder geomean {report['geomean']:.3f}; load {report['load_before']} -> "
              f"{report['load_after']}", flush=True)  # fmt: skip
    finally:
        if args.reuse is None and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
