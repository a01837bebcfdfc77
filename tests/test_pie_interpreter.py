"""The interpreter PIE's Python programs run with: by default a clean one of the same version,
without the harness's site hooks, named in the header with its start-up; and the warning for a
row whose slow program is mostly that start-up."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from conftest import PieRun

SLOW = "n = int(input())\ntotal = 0\nfor i in range(n):\n    total += i\nprint(total)\n"
# Right, and only where it runs in an interpreter that is not the harness's own environment,
# where no .pth hook of that environment ran (an editable install's finder), and that still has
# site's exit() (CodeNet's programs call it; ``python -S`` has none) and the environment's
# packages (pyyaml, a dependency of the plugin).
CLEAN = (
    "import sys\n"
    f"assert sys.prefix != {sys.prefix!r}, 'the harness environment'\n"
    "assert not [name for name in sys.modules if name.startswith('__editable__')], 'a .pth hook ran'\n"
    "import yaml\n"
    "n = int(input())\nprint(n * (n - 1) // 2)\nexit()\n"
)
# Almost nothing to do: the interpreter's start-up is nearly all of its time.
TRIVIAL = "print(int(input()) * 0)\n"


def write_pack(root: pytest.Pytester, slow: str, candidates: list[str], sizes: tuple[int, ...]) -> str:
    cases = root.path / "cases" / "p1"
    cases.mkdir(parents=True)
    for index, n in enumerate(sizes):
        (cases / f"input.{index}.txt").write_text(f"{n}\n")
        answer = 0 if slow == TRIVIAL else n * (n - 1) // 2
        (cases / f"output.{index}.txt").write_text(f"{answer}\n")
    reference = {"problem_id": "p1", "submission_id_v0": "s1", "language": "python", "input": slow, "target": slow}
    (root.path / "ref.jsonl").write_text(json.dumps(reference) + "\n")
    (root.path / "gen.jsonl").write_text(json.dumps({"input": slow, "generated_answers": candidates}) + "\n")
    settings = {
        "model_generated_outputs_path": "gen.jsonl",
        "inputs_outputs_basepath": "cases",
        "reference_file_path": "ref.jsonl",
        "output_report_file_path": "report.jsonl",
        "num_trials": 6,
        "ignore_first_k": 1,
        "max_time_per_run": 20,
    }
    (root.path / "eval_config.yaml").write_text(yaml.safe_dump(settings))
    return str(root.path / "eval_config.yaml")


@pytest.mark.parametrize("xdist_args", [[]], ids=["serial"])
def test_the_default_interpreter_is_clean_and_named_with_its_start_up(pytester: pytest.Pytester, pie: PieRun) -> None:
    """Without --codebench-python, a program runs in a clean environment of the interpreter
    behind pytest's (site on, no harness environment), which the header names with its start-up."""
    config = write_pack(pytester, SLOW, [CLEAN], (200_000, 300_000))
    run = pie(config)
    assert run.outcome("p1/s1[0]") in ("passed", "not_faster"), run.output
    version = ".".join(map(str, sys.version_info[:3]))
    run.result.stdout.fnmatch_lines(
        [
            f"codebench: PIE's Python programs run with */pie-python/{version}-*/bin/python (Python {version}, a clean "
            "environment of * without the harness's site hooks); start-up *.* ms a start (median of 9, where the "
            "programs run), counted in every time as PIE counts it"
        ]
    )
    # The harness's own, named: its environment is the one the program refuses.
    run = pie(config, "--codebench-python", sys.executable, "--codebench-store=off")
    assert run.outcome("p1/s1[0]") == "runtime_error"
    run.result.stdout.fnmatch_lines(
        [f"codebench: PIE's Python programs run with {sys.executable} (--codebench-python)*"]
    )


@pytest.mark.parametrize("xdist_args", [[]], ids=["serial"])
def test_a_row_of_mostly_start_up_is_warned_of(pytester: pytest.Pytester, pie: PieRun) -> None:
    """A slow program that does next to nothing: start-up is most of its time, and the summary
    says so for its row, with the most PIE's speedup could be there."""
    config = write_pack(pytester, TRIVIAL, ["x = int(input())\nprint(0 * x)\n"], (1, 2))
    run = pie(config, "--codebench-store=off")
    run.result.stdout.fnmatch_lines(
        [
            "start-up warning: the interpreter's start-up is at least 50% of the slow program's time on 1 of 1 timed "
            "rows, where PIE's speedup (start-up counted) is at most what a program doing nothing would reach: "
            "p1/s1 (*%, at most *x); net_speedup leaves start-up out"
        ]
    )
    properties = run.items["p1/s1[0]"]["properties"]
    assert float(properties["startup_share"]) >= 0.5
