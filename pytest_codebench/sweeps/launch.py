"""``codebench launch slurm|k8s [--submit] --plan plan.json --out OUT -- PYTEST_ARGS``: writes
into OUT what the cluster runs to grade every part of a plan (see :mod:`.plan`), one part per
element of its own array job, and the merge after them:

- Slurm: ``OUT/parts.sbatch``, an array ``--array=0-N%P`` (``--requeue``), and
  ``OUT/merge.sbatch``, submitted as a job that depends on the array (``afterany``);
- Kubernetes: ``OUT/job.yaml``, an Indexed Job (``completionMode: Indexed``), and
  ``OUT/merge-job.yaml``, a Job applied once the first has ended.

Element I writes ``OUT/parts/I.json`` (its report), ``I.xml`` (JUnit), ``I.logs.tar.gz`` (its
run folder) and, under Slurm, ``I.out``; the merge writes ``OUT/report.json`` and, from the
JUnit files, ``OUT/report.xml``. The plan is copied to ``OUT/plan.json``, so the run's folder
holds what it was graded from. Without ``--submit`` nothing is submitted: the command prints
what to run. No scheduler of ours runs: the cluster's engine starts the elements.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ..once import write_atomically
from .plan import PlanError, plan_digest, read_plan

DESCRIPTION = """\
Writes into OUT the array job that grades each part of PLAN (codebench plan) on a cluster,
and the merge after it; --submit also submits them (sbatch, or kubectl apply).
Every option after -- is pytest's, passed unchanged to each element, whose runner it names
(--codebench-runner local with bubblewrap where the nodes have no Docker).

examples:
  codebench launch slurm --plan plan.json --out run1 --gpus 1 --parallel 8 --submit -- \\
      --codebench=computeeval --codebench-dataset data.tar.gz --codebench-solutions sets/
  codebench launch k8s --plan plan.json --out run1 --image registry/codebench:1 -- ...
"""

#: Where a pod mounts the data volume (its working directory) and the results volume (OUT).
DATA_MOUNT, RESULTS_MOUNT = "/data", "/results"

# An element's whole command, for sh: a run of its own (whatever pytest launched it, as a test
# does), it grades part $I into $OUT/parts, keeps its run folder
# as a tarball beside it, and counts as done when pytest graded the part, whatever the models'
# verdicts (pytest's 1: some items failed); anything else (interrupted, a usage or internal
# error) fails the element, so that the engine retries it and the merge names it.
ELEMENT = """\
unset PYTEST_XDIST_WORKER PYTEST_XDIST_WORKER_COUNT PYTEST_XDIST_TESTRUNUID PYTEST_CURRENT_TEST
mkdir -p "$OUT/parts"
"$PYTHON" -m pytest {args} --codebench-plan "$OUT/plan.json" --codebench-part env \\
    --codebench-report "$OUT/parts/$I.json" --junitxml "$OUT/parts/$I.xml" --codebench-run-dir "$OUT/parts/$I.run"
status=$?
tar -czf "$OUT/parts/$I.logs.tar.gz" -C "$OUT/parts" "$I.run" || echo "element $I: no logs tarball" >&2
if [ "$status" -le 1 ]; then exit 0; fi
exit "$status"
"""

# The merge of whatever parts reported: `codebench merge --plan` names any missing or failed
# part with its tasks, and exits 3 (incomplete) rather than score a smaller run.
MERGE = """\
set --
for report in "$OUT"/parts/[0-9]*.json; do [ -e "$report" ] && set -- "$@" "$report"; done
if [ $# -eq 0 ]; then
    echo "merge: error: no part of $OUT/plan.json reported (nothing in $OUT/parts): the run is incomplete" >&2
    exit 3
fi
for junit in "$OUT"/parts/[0-9]*.xml; do
    if [ -e "$junit" ]; then set -- "$@" --junit "$OUT"/parts/[0-9]*.xml --junitxml "$OUT/report.xml"; fi
    break
done
exec "$PYTHON" -m pytest_codebench merge --plan "$OUT/plan.json" -o "$OUT/report.json" PAGE"$@"
"""


@dataclasses.dataclass(frozen=True)
class Launch:
    """What the user asked for, paths made absolute (an element starts in the submit folder)."""

    engine: str
    plan: Path
    out: Path
    parts: int
    pytest_args: list[str]
    gpus: int = 0
    parallel: int | None = None
    partition: str | None = None
    time: str | None = None
    image: str | None = None
    data_claim: str = "codebench-data"
    results_claim: str = "codebench-results"
    #: ``--codebench-html DIR`` of the run: drawn once, by the merge, from every part's report
    #: and logs tarball (each element drawing its own into one folder would race).
    page: str | None = None

    @property
    def name(self) -> str:
        """The jobs' name: one per plan, so two launches of one plan are the same job."""
        return f"codebench-{plan_digest(self.out / 'plan.json')[:10]}"


def add_command(commands: Any) -> None:
    launch = commands.add_parser(
        "launch",
        help="write (and --submit) a Slurm job array or a Kubernetes Indexed Job that grades a plan's parts",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # One parser per engine, its options first and pytest's after --, as the plan command's.
    engines = launch.add_subparsers(dest="engine", required=True, metavar="slurm|k8s")
    for engine, said in (("slurm", "a Slurm job array (sbatch)"), ("k8s", "a Kubernetes Indexed Job")):
        command = engines.add_parser(engine, help=said, description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
        _add_options(command, engine)


def _add_options(command: argparse.ArgumentParser, engine: str) -> None:
    command.add_argument("--plan", required=True, type=Path, metavar="PLAN.json", help="from codebench plan")
    command.add_argument("--out", required=True, type=Path, metavar="OUT", help="the run's folder (parts, report)")
    command.add_argument("--submit", action="store_true", help="submit (sbatch, kubectl apply); else print how")
    command.add_argument("--gpus", type=int, default=0, metavar="G", help="GPUs per element (default: 0)")
    command.add_argument("--parallel", type=int, metavar="P", help="at most P elements at once (default: all)")
    if engine == "slurm":
        command.add_argument("--partition", metavar="P", help="the partition")
        command.add_argument("--time", metavar="T", help="each element's time limit (sbatch --time)")
        command.set_defaults(image=None, data_claim="codebench-data", results_claim="codebench-results")
    else:
        command.add_argument("--image", required=True, metavar="IMG", help="the image: python with the plugin")
        command.add_argument("--data-claim", default="codebench-data", metavar="PVC", help="the data volume")
        results = "the volume that holds OUT (its files at the volume's root)"
        command.add_argument("--results-claim", default="codebench-results", metavar="PVC", help=results)
        command.set_defaults(partition=None, time=None)
    command.add_argument("pytest_args", nargs=argparse.REMAINDER, metavar="-- PYTEST_ARGS")


def run(args: argparse.Namespace) -> tuple[int, list[str]]:
    """(exit status, lines to print): 2 for a usage error, one line naming what is wrong."""
    pytest_args, page = _without_page(args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args)
    tool = {"slurm": "sbatch", "k8s": "kubectl"}[args.engine]
    if args.submit and shutil.which(tool) is None:
        return 2, [
            f"launch: error: --submit needs {tool}, which is not on PATH (without --submit, the files are written)"
        ]
    if args.gpus < 0 or (args.parallel is not None and args.parallel < 1):
        return 2, ["launch: error: --gpus must be 0 or more, and --parallel 1 or more"]
    try:
        parts = len(read_plan(args.plan)["parts"])
    except PlanError as exc:
        return 2, [f"launch: error: {exc}"]
    out = args.out.resolve()
    if (stale := _other_plans_parts(args.plan, out)) is not None:
        return 2, [f"launch: error: {stale}"]
    (out / "parts").mkdir(parents=True, exist_ok=True)
    if args.plan.resolve() != out / "plan.json":
        shutil.copyfile(args.plan, out / "plan.json")  # byte for byte: the parts' reports name its sha256
    launch = Launch(
        args.engine, out / "plan.json", out, parts, pytest_args, args.gpus, args.parallel,
        args.partition, args.time, args.image, args.data_claim, args.results_claim, page,
    )  # fmt: skip
    written = write_slurm(launch) if args.engine == "slurm" else write_k8s(launch)
    lines = [f"launch: {parts} parts of {args.plan} -> {out}", *(f"written: {path}" for path in written)]
    if not args.submit:
        return 0, [*lines, "to submit:", *(f"  {step}" for step in how_to_submit(launch))]
    return submit(launch, lines)


def _other_plans_parts(plan: Path, out: Path) -> str | None:
    """Why OUT cannot take this plan: it holds part reports of another plan, which the merge
    would refuse (launching the same plan again, to grade its missing parts, is welcome)."""
    placed = out / "plan.json"
    reports = sorted((out / "parts").glob("[0-9]*.json")) if placed.is_file() else []
    if not reports or placed.read_bytes() == plan.read_bytes():
        return None
    return (
        f"{out} holds {len(reports)} part reports of another plan ({placed}, sha256 {plan_digest(placed)}; "
        f"{plan} is {plan_digest(plan)}): launch into a new folder"
    )


def sbatch_scripts(launch: Launch) -> tuple[str, str]:
    """(the array's script, the merge's script)."""
    common = [f"--chdir={Path.cwd()}"]
    common += [f"--partition={launch.partition}"] if launch.partition else []
    array = f"0-{launch.parts - 1}" + (f"%{launch.parallel}" if launch.parallel else "")
    element = [
        "--job-name=" + launch.name, f"--array={array}", *common,
        *([f"--time={launch.time}"] if launch.time else []),
        *([f"--gres=gpu:{launch.gpus}"] if launch.gpus else []),
        # A requeued element (preempted, a node failure, scontrol requeue) grades its part again,
        # what it graded before served from the verdict store; its output keeps both tries.
        "--requeue", "--open-mode=append", f"--output={launch.out}/parts/%a.out",
    ]  # fmt: skip
    merge = ["--job-name=" + launch.name + "-merge", *common, f"--output={launch.out}/merge.out"]
    head = f"OUT={shlex.quote(str(launch.out))}\nPYTHON={shlex.quote(sys.executable)}\n"
    return (
        _script(element, head + "I=$SLURM_ARRAY_TASK_ID\n" + element_command(launch.pytest_args)),
        _script(merge, head + merge_command(launch)),
    )


def _without_page(pytest_args: list[str]) -> tuple[list[str], str | None]:
    """The run's arguments without ``--codebench-html DIR`` (or ``=DIR``), and DIR."""
    kept, page, skip = [], None, False
    for index, arg in enumerate(pytest_args):
        if skip:
            skip = False
        elif arg == "--codebench-html" and index + 1 < len(pytest_args):
            page, skip = pytest_args[index + 1], True
        elif arg.startswith("--codebench-html="):
            page = arg.partition("=")[2]
        else:
            kept.append(arg)
    return kept, page


def merge_command(launch: Launch) -> str:
    """The merge step's script: with the run's page, drawn from the parts' logs tarballs."""
    return MERGE.replace("PAGE", f"--html {shlex.quote(launch.page)} " if launch.page else "")


def element_command(pytest_args: Sequence[str]) -> str:
    """The shell lines of one element ($OUT, $PYTHON and $I set): every pytest option as given."""
    return ELEMENT.format(args=shlex.join(pytest_args))


def write_slurm(launch: Launch) -> list[Path]:
    element, merge = sbatch_scripts(launch)
    written = [launch.out / "parts.sbatch", launch.out / "merge.sbatch"]
    for path, text in zip(written, (element, merge), strict=True):
        write_atomically(path, text)
        path.chmod(0o755)
    return written


def k8s_jobs(launch: Launch) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the Indexed Job of the parts, the merge's Job), as Kubernetes' API objects."""
    env = [{"name": "OUT", "value": RESULTS_MOUNT}, {"name": "PYTHON", "value": "python"}]
    element = {
        "name": "element",
        "image": launch.image,
        "workingDir": DATA_MOUNT,
        "command": ["sh", "-c", "I=$JOB_COMPLETION_INDEX\n" + element_command(launch.pytest_args)],
        "env": env,
        **({"resources": {"limits": {"nvidia.com/gpu": str(launch.gpus)}}} if launch.gpus else {}),
        "volumeMounts": [{"name": "data", "mountPath": DATA_MOUNT}, {"name": "results", "mountPath": RESULTS_MOUNT}],
    }
    volumes = [
        {"name": "data", "persistentVolumeClaim": {"claimName": launch.data_claim}},
        {"name": "results", "persistentVolumeClaim": {"claimName": launch.results_claim}},
    ]
    labels = {"app.kubernetes.io/name": "codebench", "codebench/plan": launch.name}
    parts = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": launch.name, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": launch.parts,
            "parallelism": launch.parallel or launch.parts,
            # Each index retried on its own (an evicted pod, a node lost): its part again, what
            # was graded before served from the store. Needs restartPolicy Never.
            "backoffLimitPerIndex": 2,
            "template": {
                "metadata": {"labels": labels},
                "spec": {"restartPolicy": "Never", "containers": [element], "volumes": volumes},
            },
        },
    }
    merger = {**element, "name": "merge", "command": ["sh", "-c", merge_command(launch)]}
    merger.pop("resources", None)
    merge = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": launch.name + "-merge", "labels": labels},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {"restartPolicy": "Never", "containers": [merger], "volumes": volumes},
            },
        },
    }
    return parts, merge


def write_k8s(launch: Launch) -> list[Path]:
    written = [launch.out / "job.yaml", launch.out / "merge-job.yaml"]
    for path, job in zip(written, k8s_jobs(launch), strict=True):
        write_atomically(path, yaml.dump(job, Dumper=_Dumper, sort_keys=False, width=1000))
    return written


class _Dumper(yaml.SafeDumper):
    """Kubernetes' YAML as a person writes it: no anchors, a script as a literal block."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_Dumper.add_representer(str, _text)


def how_to_submit(launch: Launch) -> list[str]:
    out = shlex.quote(str(launch.out))
    if launch.engine == "slurm":
        return [
            f"job=$(sbatch --parsable {out}/parts.sbatch) && "
            f"sbatch --dependency=afterany:${{job%%;*}} {out}/merge.sbatch",
            f"(or again: codebench launch slurm --submit ...); the merged report will be {out}/report.json",
        ]
    return [
        f"copy {out}'s files to the root of the volume {launch.results_claim}, then: kubectl apply -f {out}/job.yaml",
        f"once job/{launch.name} has ended (kubectl wait --for=condition=complete job/{launch.name}, or failed): "
        f"kubectl apply -f {out}/merge-job.yaml",
    ]


def submit(launch: Launch, lines: list[str]) -> tuple[int, list[str]]:
    if launch.engine == "k8s":
        done = _call(["kubectl", "apply", "-f", str(launch.out / "job.yaml")])
        if done.returncode:
            return 1, [*lines, f"launch: error: kubectl apply failed: {done.stderr.strip()}"]
        return 0, [*lines, done.stdout.strip(), "then:", f"  {how_to_submit(launch)[1]}"]
    parts = _call(["sbatch", "--parsable", str(launch.out / "parts.sbatch")])
    if parts.returncode:
        return 1, [*lines, f"launch: error: sbatch failed: {parts.stderr.strip()}"]
    job = parts.stdout.strip().split(";")[0]
    merge = _call(["sbatch", "--parsable", f"--dependency=afterany:{job}", str(launch.out / "merge.sbatch")])
    if merge.returncode:
        return 1, [*lines, f"submitted: array job {job}", f"launch: error: sbatch of the merge failed: {merge.stderr}"]
    merge_job = merge.stdout.strip().split(";")[0]
    write_atomically(launch.out / "jobs.json", json.dumps({"parts": job, "merge": merge_job}) + "\n")
    return 0, [*lines, f"submitted: array job {job} ({launch.parts} elements), merge job {merge_job} after it"]


def _script(directives: Sequence[str], body: str) -> str:
    head = "".join(f"#SBATCH {_directive(directive)}\n" for directive in directives)
    return f"#!/bin/sh\n{head}# Written by codebench launch slurm.\n{body}"


def _directive(directive: str) -> str:
    """``--output="/a b/%a.out"``: sbatch reads a directive's value in double quotes."""
    name, _, value = directive.partition("=")
    return f'{name}="{value}"' if any(char.isspace() for char in value) else directive


def _call(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, env=os.environ.copy())
