"""What running a command in a container costs, beside the local runner, in one run.

    python bench/docker_overhead.py [--commands 40] [--base codebench-base:bookworm]

Times the same trivial command (``true``) through the local runner and the Docker runner,
interleaved, then splits one container's life into its API calls (create, attach + start,
wait, remove) to show what dominates. Needs a Docker engine (scripts/docker-setup.sh).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from pytest_codebench.context import RunContext
from pytest_codebench.options import Settings
from pytest_codebench.runners.docker import DockerRunner
from pytest_codebench.runners.local import LocalRunner


def settings(base: str) -> Settings:
    # Every other option keeps its default.
    return Settings({"benchmark": "computeeval", "docker-base": base})


def per_command(runner: object, workspace: Path, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        assert runner.run("true", cwd=workspace, timeout=60).ok  # type: ignore[attr-defined]
    return (time.perf_counter() - started) / count


def phases(runner: DockerRunner, workspace: Path, count: int) -> dict[str, float]:
    """Median seconds of each API call in a container's life, as the runner makes them."""
    spent: dict[str, list[float]] = {"create": [], "attach + start": [], "wait": [], "remove": []}
    for _ in range(count):
        mark = time.perf_counter()
        container = runner.client.containers.create(
            runner.image,
            ["/bin/sh", "-c", "true"],
            working_dir="/workspace",
            network_mode="none",
            volumes={str(workspace): {"bind": "/workspace", "mode": "rw"}},
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            **runner.limits,
        )
        spent["create"].append(time.perf_counter() - mark)
        mark = time.perf_counter()
        stream = container.attach(stdout=True, stderr=True, stream=True, logs=True)
        container.start()
        spent["attach + start"].append(time.perf_counter() - mark)
        mark = time.perf_counter()
        container.wait()
        list(stream)
        spent["wait"].append(time.perf_counter() - mark)
        mark = time.perf_counter()
        container.remove(force=True)
        spent["remove"].append(time.perf_counter() - mark)
    return {name: statistics.median(values) for name, values in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commands", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", default="codebench-base:bookworm")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run_dir = root / "run"
        run_dir.mkdir()
        # Outside pytest there is no config; the runners never read it.
        context = RunContext(None, settings(args.base), run_dir, root / "locks", 1)  # type: ignore[arg-type]
        docker_runner = DockerRunner(context)  # builds the image if missing
        local_runner = LocalRunner(context)
        workspace = root / "ws"
        workspace.mkdir()
        per_command(docker_runner, workspace, 3)  # warm the image's layers and the client
        local, docker = [], []
        for _ in range(args.rounds):  # interleaved, so drift hits both alike
            local.append(per_command(local_runner, workspace, args.commands))
            docker.append(per_command(docker_runner, workspace, args.commands))
        local_s, docker_s = statistics.median(local), statistics.median(docker)
        print(f"{args.commands} x 'true', median of {args.rounds} rounds; an item runs two commands (build, test)")
        print(f"  local runner per command:   {1000 * local_s:8.2f} ms")
        print(f"  docker runner per command:  {1000 * docker_s:8.2f} ms")
        print(f"  docker per item overhead:   {2000 * (docker_s - local_s):8.2f} ms")
        print(f"  ratio docker / local:       {docker_s / local_s:8.1f} x")
        print("  one container's life (median):")
        for name, seconds in phases(docker_runner, workspace, args.commands).items():
            print(f"    {name:16s} {1000 * seconds:8.2f} ms")


if __name__ == "__main__":
    main()
