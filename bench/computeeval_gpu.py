"""On a GPU machine: the plugin's GPU scheduler and perf phase against NVIDIA's harness, side by side.

    python bench/computeeval_gpu.py [--dataset 2026-1|PATH] [-n N] [--only RUNS] [--state FILE] [--out FILE]
    python bench/computeeval_gpu.py --dry-run            # print the commands, run nothing

On the reference solutions of the groups cuda-kernels, cuda-runtime and cccl (223 problems in
2026-1), with the same worker count N (default: the CPU count), it times:

  default  the plugin, default GPU scheduler (tests share a GPU, --codebench-gpu-slots bound)
  share    the plugin with --codebench-gpu-share (no bound)
  nvidia   NVIDIA's harness (nvidia-compute-eval's evaluate_functional_correctness, what its
           CLI `compute_eval evaluate_functional_correctness --mode=local --n_workers=N` calls)
  correct  the plugin on cuda-kernels alone, correctness only
  perf     the same with --codebench-perf --codebench-profiler cupti

and prints the wall times, the ratios default/share (the issue wants <= 1.1), plugin/NVIDIA,
perf/correct (<= 1.3), the CPU-bound floor (the sum of build_seconds of the default run's
report over the cores), pass counts, and every reference whose speedup against itself is
outside 1.00 +- 0.05. Groups are chosen by writing a datapack of their problems (task ids do
not name groups, so -k cannot). An untimed warm-up perf run on one problem first builds what
is cached per toolkit (the main guard, the CUPTI library), so no timed run pays for it.

A device command runs at most 10 minutes: split the runs over calls with --only, keeping the
figures in --state (read, then updated) and carrying that file from one call to the next.

Preparation (no network on the device; wheels travel, as /work/.library/device/README.md says).
Here, in the repo's root:

    echo /.whl/ >> .git/info/exclude
    python3 -m pip wheel --no-deps -w .whl .                     # pytest-codebench itself
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \\
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \\
        -d .whl nvidia-compute-eval==2026.1 pydantic pydantic-core annotated-types typing-inspection \\
        typing-extensions tree-sitter tree-sitter-language-pack tree-sitter-c-sharp \\
        tree-sitter-embedded-template tree-sitter-yaml docker unidiff

(nvidia-compute-eval's evaluation imports pydantic, tree-sitter(-language-pack), docker, numpy
and tqdm; the image has numpy, tqdm, requests, pytest, pytest-xdist, pytest-timeout, filelock
and pyyaml. Its CLI also pulls in openai, anthropic and fire, which this script avoids by calling
the function the CLI calls.) Then each device call, with carry [".whl"]:

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \\
        --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit
    PYTHONUNBUFFERED=1 python3 bench/computeeval_gpu.py --only default,share \\
        --state bench/results/computeeval_gpu-state.json --out $OUT/computeeval_gpu.txt; \\
        cp bench/results/computeeval_gpu-state.json $OUT/

and commit the output as bench/results/computeeval_gpu-<gpu>.txt.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import shlex
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

GROUPS = ("cuda-kernels", "cuda-runtime", "cccl")
RUNS = ("default", "share", "nvidia", "correct", "perf")
PLUGIN_FLAGS = {
    "default": [],
    "share": ["--codebench-gpu-share"],
    "correct": [],
    "perf": ["--codebench-perf", "--codebench-profiler=cupti"],
}
SAMPLE = Path(__file__).resolve().parent.parent / "datasets" / "computeeval" / "sample-problems.tar.gz"
# NVIDIA's harness, through the function its CLI calls (see the docstring for why not the CLI).
NVIDIA = (
    "import sys\nfrom compute_eval.data.data_model import ReleaseVersion\n"
    "from compute_eval.evaluation import evaluate_functional_correctness as run\n"
    "run(release=ReleaseVersion(sys.argv[1]), solutions_datapack=sys.argv[2], problems_datapack_dir=sys.argv[3],"
    " mode='local', profile_mode=None, k=1, n_workers=int(sys.argv[4]))\n"
)


def problems_pack(dataset: str) -> Path:
    """The problems datapack of a path, or of a release name in the installed compute_eval."""
    if Path(dataset).exists():
        return Path(dataset).resolve()
    spec = importlib.util.find_spec("compute_eval")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"--dataset {dataset}: no such file, and no compute_eval package installed to find it in")
    pack = Path(list(spec.submodule_search_locations)[0]) / "releases" / f"{dataset}-problems.tar.gz"
    if not pack.exists():
        sys.exit(f"--dataset {dataset}: {pack} does not exist")
    return pack


def read_pack(path: Path) -> tuple[dict[str, Any], list[bytes]]:
    with tarfile.open(path) as archive:
        members = {m.name: archive.extractfile(m) for m in archive if m.isfile()}
        metadata = json.loads(members["metadata.json"].read())  # type: ignore[union-attr]
        lines = members["problems.jsonl"].read().splitlines()  # type: ignore[union-attr]
    return metadata, [line for line in lines if line.strip()]


def write_pack(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def select(pack: Path, groups: tuple[str, ...], folder: Path, limit: int | None = None) -> tuple[Path, Path, int]:
    """A problems datapack of ``groups`` alone (the lines as they are, their hashes kept; the
    first ``limit`` of them), and NVIDIA's solutions datapack of their references; and how many
    problems."""
    metadata, lines = read_pack(pack)
    chosen = [line for line in lines if json.loads(line).get("group") in groups][:limit]
    solutions = [json.loads(line)["baseline_solution"] for line in chosen]
    about = {"description": "the references, for bench/computeeval_gpu.py", "groups": list(groups)}
    problems, references = write_packs(folder / "+".join(groups), metadata, chosen, solutions, about)
    return problems, references, len(chosen)


def write_packs(
    stem: Path, metadata: dict[str, Any], chosen: list[bytes], solutions: list[Any], about: dict[str, Any]
) -> tuple[Path, Path]:
    """``stem``-problems.tar.gz of the ``chosen`` problem lines (``metadata`` narrowed to them)
    and ``stem``-solutions.tar.gz of ``solutions`` (its metadata: the release, ``about``)."""
    ids = [json.loads(line)["task_id"] for line in chosen]
    hashes = {i: h for i, h in (metadata.get("task_id_hashes") or {}).items() if i in ids}
    meta = {**metadata, "total_count": len(chosen), "task_id_hashes": hashes}
    problems = write_pack(
        stem.with_name(f"{stem.name}-problems.tar.gz"),
        {"metadata.json": json.dumps(meta).encode(), "problems.jsonl": b"\n".join(chosen) + b"\n"},
    )
    solution_meta = {"release": metadata.get("release"), "total_count": len(solutions), **about}
    answers = write_pack(
        stem.with_name(f"{stem.name}-solutions.tar.gz"),
        {
            "metadata.json": json.dumps(solution_meta).encode(),
            "solutions.jsonl": b"".join(json.dumps(s).encode() + b"\n" for s in solutions),
        },
    )
    return problems, answers


def plugin_command(dataset: Path, report: Path, args: argparse.Namespace, extra: list[str]) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rN",
        "--codebench=computeeval",
        "--codebench-store=off",
    ]
    command += [f"--codebench-dataset={dataset}", "--codebench-solutions=baseline", f"--codebench-report={report}"]
    command += [f"--codebench-cache-dir={args.cache_dir}", "-n", str(args.workers), *args.plugin_args, *extra]
    return command


def timed(command: list[str], cwd: Path, dry_run: bool) -> tuple[float, str]:
    print("$", shlex.join(command), flush=True)
    if dry_run:
        return 0.0, ""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - started
    print(f"  {seconds:.1f} s, exit {done.returncode}: {(done.stdout.strip().splitlines() or [''])[-1]}", flush=True)
    return seconds, done.stdout


def plugin_figures(report: Path, seconds: float, output: str) -> dict[str, Any]:
    """What a plugin run's JSON report tells: items, passes, builds, self-speedups."""
    if not report.exists():
        return {"seconds": seconds, "error": output[-2000:]}
    items = json.loads(report.read_text())["items"]
    figures = [item["figures"] for item in items]
    speedups = {item["task_id"]: f["speedup"] for item, f in zip(items, figures, strict=True) if "speedup" in f}
    return {
        "seconds": seconds,
        "items": len(items),
        "passed": sum(item["status"] == "passed" for item in items),
        "skipped": sum(item["status"] == "skipped" for item in items),
        "build_seconds": sum(float(f.get("build_seconds") or 0) for f in figures),
        "speedups": speedups,
        "perf": {key: sum(key in f for f in figures) for key in ("perf_skipped", "perf_failed", "perf_suspect")},
        "perf_reasons": sorted({str(f[key]) for f in figures for key in ("perf_skipped", "perf_failed") if key in f}),
        # The link check (guard.link) on NVIDIA's references: every refusal is a false positive.
        "linked_programs": sum(int(f.get("linked_programs") or 0) for f in figures),
        "link_refused": sorted(item["task_id"] for item in items if "tampered: " in (item.get("reason") or "")),
    }


def nvidia_figures(folder: Path, seconds: float, output: str) -> dict[str, Any]:
    graded = [json.loads(line) for path in folder.glob("*-graded-solutions.jsonl") for line in path.open()]
    if not graded:
        return {"seconds": seconds, "error": output[-2000:]}
    return {"seconds": seconds, "items": len(graded), "passed": sum(bool(g.get("passed")) for g in graded)}


def ratio(state: dict[str, Any], top: str, bottom: str) -> str:
    a, b = (state.get(name, {}).get("seconds") for name in (top, bottom))
    return f"{a / b:.2f}" if a and b else "n/a"


def summary(state: dict[str, Any], cores: int) -> list[str]:
    lines = [f"machine: {state.get('machine', '?')}; -n {state.get('workers')}; {cores} cores", ""]
    for name in RUNS:
        run = state.get(name)
        if run is None:
            lines.append(f"{name:8} not run")
        elif "error" in run:
            lines.append(f"{name:8} {run['seconds']:.1f} s, no result: {run['error'].splitlines()[-1:]}")
        else:
            skipped = f", skipped {run['skipped']}" if run.get("skipped") else ""
            lines.append(f"{name:8} {run['seconds']:7.1f} s  passed {run['passed']} / {run['items']}{skipped}")
            if "linked_programs" in run:
                refused = run["link_refused"]
                lines.append(
                    f"{'':8} link check: {run['linked_programs']} programs read, {len(refused)} refused {refused}"
                )
    floor = state.get("default", {}).get("build_seconds")
    lines += [
        "",
        f"default/share {ratio(state, 'default', 'share')} (issue: <= 1.1)",
        f"plugin/NVIDIA {ratio(state, 'default', 'nvidia')} (share/NVIDIA {ratio(state, 'share', 'nvidia')})",
        f"perf/correct  {ratio(state, 'perf', 'correct')} (issue: <= 1.3)",
        f"CPU-bound floor (builds {floor:.0f} s / {cores} cores): {floor / cores:.1f} s" if floor else "floor: n/a",
    ]
    perf = state.get("perf")
    if perf and "speedups" in perf:
        speedups = perf["speedups"]
        off = {task: s for task, s in speedups.items() if not 0.95 <= float(s) <= 1.05}
        median = statistics.median(map(float, speedups.values())) if speedups else float("nan")
        lines.append(f"self-speedups: {len(speedups)} measured, median {median:.3f}, {len(off)} outside 1.00 +- 0.05")
        lines += [f"  {task}: {float(s):.3f}" for task, s in sorted(off.items())]
        lines.append(f"perf not measured: {perf['perf']}")
        lines += [f"  {reason[:200]}" for reason in perf["perf_reasons"][:20]]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="2026-1", help="a release name in the installed compute_eval, or a path")
    parser.add_argument("-n", dest="workers", type=int, default=os.cpu_count() or 1, help="workers (default: cores)")
    parser.add_argument("--only", default=",".join(RUNS), help=f"runs, comma-separated (default: {','.join(RUNS)})")
    parser.add_argument("--state", type=Path, help="figures of earlier calls: read, then updated")
    parser.add_argument("--out", type=Path, help="also write the summary to this file")
    parser.add_argument("--cache-dir", type=Path, help="--codebench-cache-dir (default: a fresh temporary one)")
    parser.add_argument("--plugin-args", default="", help="more pytest arguments for every plugin run")
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    # A perf run holds the GPU alone for each problem's trials: all 114 of 2026-1 take longer
    # than one 10-minute device command.
    parser.add_argument("--kernels", type=int, help="correct and perf on the first N cuda-kernels problems only")
    args = parser.parse_args()
    args.plugin_args = shlex.split(args.plugin_args)
    only = [name for name in args.only.split(",") if name]
    unknown = set(only) - set(RUNS)
    if unknown:
        parser.error(f"--only: unknown runs {sorted(unknown)}; choose from {', '.join(RUNS)}")
    state: dict[str, Any] = json.loads(args.state.read_text()) if args.state and args.state.exists() else {}
    pack = SAMPLE if args.dry_run and not Path(args.dataset).exists() else problems_pack(args.dataset)
    with tempfile.TemporaryDirectory(prefix="computeeval-gpu-") as temporary:
        folder = Path(temporary)
        args.cache_dir = (args.cache_dir or folder / "cache").resolve()
        everything, references, count = select(pack, GROUPS, folder)
        kernels, _, kernel_count = select(pack, ("cuda-kernels",), folder, args.kernels)
        print(f"{pack.name}: {count} problems in {', '.join(GROUPS)}; {kernel_count} in cuda-kernels", flush=True)
        if {"correct", "perf"} & set(only) and kernel_count:
            first = json.loads(read_pack(kernels)[1][0])["task_id"]
            print("warm-up (untimed): the per-toolkit builds, on one problem")
            one = ["-k", f"{first}[0]"]
            warm = plugin_command(kernels, folder / "warm.json", args, [*PLUGIN_FLAGS["perf"], *one])
            timed(warm, folder, args.dry_run)
        for name in only:
            run_dir = folder / name
            run_dir.mkdir()
            if name == "nvidia":
                if importlib.util.find_spec("compute_eval") is None and not args.dry_run:
                    print("nvidia: compute_eval is not installed (see this script's docstring): skipped")
                    continue
                release = read_pack(pack)[0].get("release", "")
                (run_dir / "releases").mkdir()
                (run_dir / "releases" / f"{release}-problems.tar.gz").symlink_to(pack)
                command = [sys.executable, "-c", NVIDIA, release, str(references), str(run_dir / "releases")]
                seconds, output = timed([*command, str(args.workers)], run_dir, args.dry_run)
                figures = nvidia_figures(run_dir, seconds, output)
            else:
                dataset, report = (kernels if name in ("correct", "perf") else everything), run_dir / "report.json"
                seconds, output = timed(
                    plugin_command(dataset, report, args, PLUGIN_FLAGS[name]), run_dir, args.dry_run
                )
                figures = plugin_figures(report, seconds, output)
            if not args.dry_run:
                state[name] = figures
                save(args.state, state, args.workers)  # after each run: a killed call keeps the rest
    if args.dry_run:
        return
    lines = summary(state, os.cpu_count() or 1)
    print("\n".join(lines))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")


def save(path: Path | None, state: dict[str, Any], workers: int) -> None:
    state["workers"] = workers
    state["machine"] = machine()
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(state, indent=1) + "\n")


def machine() -> str:
    """The GPU's name, as nvidia-smi gives it, or "no GPU"."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True
        )
    except OSError:
        return "no GPU (no nvidia-smi)"
    return ", ".join(done.stdout.split("\n")).strip(", ") or "no GPU"


if __name__ == "__main__":
    main()
