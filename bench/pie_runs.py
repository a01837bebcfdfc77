"""Where ours spends its time on ``bench/pie_vs_official.py``'s config: every program run of one
serial ``pytest --codebench=pie``, counted and summed by program, its own time (the sandbox's
inner clock) beside the wall time of the run (the sandbox's start, the harness's work).

    python bench/pie_runs.py --pie-python /work/pievenv/bin/python [-k EXPR]

The program time is a floor: no harness that runs these programs as often, however little it
costs itself, takes less. It prints it beside the wall time of the whole run. ``--pie-python``
runs the programs (``--codebench-python``); PIE's checkout is not needed, and any interpreter
will do for a check that the bench runs. ``-k EXPR`` grades only the candidates pytest's ``-k``
selects (``-k 's0000001[0]'``: one row, one candidate).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from pie_vs_official import build_pack  # noqa: E402

# Loaded into the pytest run with -p: wraps Sandbox.run, and prints the sums at exit.
PLUGIN = textwrap.dedent(
    """
    import atexit, collections, time
    from pytest_codebench.benchmarks.pie import sandbox

    sums = collections.defaultdict(lambda: [0, 0.0, 0.0])
    names = {}
    run = sandbox.Sandbox.run

    def timed(self, program, test, counter=""):
        start = time.perf_counter()
        found = run(self, program, test, counter)
        wall = time.perf_counter() - start
        if program is None:
            name = "bare interpreter"
        else:
            count = sum(name.startswith(program.tag) for name in names.values())
            name = names.setdefault(program.code, f"{program.tag} {count}")
        entry = sums[name]
        entry[0] += 1
        entry[1] += found.result.seconds
        entry[2] += wall
        return found

    sandbox.Sandbox.run = timed

    @atexit.register
    def report():
        print(f"{'program':<18} {'runs':>5} {'own s':>7} {'wall s':>7} {'ms a run beyond the program':>28}")
        for name, (runs, own, wall) in sorted(sums.items()):
            print(f"{name:<18} {runs:>5} {own:>7.2f} {wall:>7.2f} {1000 * (wall - own) / runs:>28.1f}")
        runs, own, wall = (sum(entry[i] for entry in sums.values()) for i in range(3))
        print(f"{'all':<18} {runs:>5} {own:>7.2f} {wall:>7.2f} {1000 * (wall - own) / runs:>28.1f}")
    """
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pie-python", type=Path, required=True)
    parser.add_argument("-k", dest="keyword", help="grade only the candidates this pytest -k expression selects")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config = build_pack(folder)
        (folder / "plugin").mkdir()
        (folder / "plugin" / "pie_runs_plugin.py").write_text(PLUGIN)
        env = {
            **os.environ,
            "PATH": f"{args.pie_python.parent}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(folder / "plugin"),
        }
        command = [sys.executable, "-m", "pytest", "-p", "pie_runs_plugin", "-p", "no:cacheprovider", "-q"]
        command += ["--codebench=pie", "--codebench-config", str(config), "--codebench-store=off"]
        command += ["--codebench-python", str(args.pie_python)]
        command += ["-k", args.keyword] if args.keyword else []
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
        table = ("trials:", "outcomes:", "program ", "all ", "bare ", "input ", "reference ", "candidate ")
        lines = [line for line in done.stdout.splitlines() if line.startswith(table) or " passed in " in line]
        if done.returncode not in (0, 1) or not any(line.startswith("all ") for line in lines):
            sys.exit(
                f"pytest failed ({done.returncode}), or ran no program:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
            )
        print("\n".join(lines))


if __name__ == "__main__":
    main()
