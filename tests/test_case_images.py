"""A problem's own image (ComputeEval's ``base_image``): the docker runner runs the problem's
commands in it, keys its verdicts by it, and skips (never fails) a problem whose image cannot
be had, naming it and the ways to get it; --codebench-registry names where to look; the local
runner ignores it and says so once."""

from __future__ import annotations

import io

import docker
import packs
import pytest
from test_docker import DOCKER, FORCE, categories, dataset

from pytest_codebench.case_images import named_image
from pytest_codebench.runners.docker_case_images import in_registry, names_registry, parse_registry

MARKED = "codebench-test/problem-image:1"
# The build tells which image it ran in (then fails: the base image has no compiler).
BUILD = 'echo "image=$CODEBENCH_PROBLEM_IMAGE"; exit 1'


def test_a_registry_prefixes_only_names_without_one_of_their_own():
    assert in_registry("compute-eval:13.1.0", "mirror.example:5000") == "mirror.example:5000/compute-eval:13.1.0"
    assert in_registry("nvidia/cuda:13.0", "mirror:5000/hub") == "mirror:5000/hub/nvidia/cuda:13.0"
    for qualified in ("nvcr.io/nvidia/cuda:13.0", "localhost/compute-eval:13.1.0", "127.0.0.1:9/x:1"):
        assert names_registry(qualified)
        assert in_registry(qualified, "mirror:5000") is None
    assert in_registry("compute-eval:13.1.0", None) is None
    assert parse_registry(" mirror:5000/ ") == "mirror:5000"
    for bad in ("https://mirror", "", "a b"):
        with pytest.raises(ValueError, match="HOST"):
            parse_registry(bad)


def test_an_image_field_is_a_name_or_one_clear_error():
    assert named_image({"base_image": "compute-eval:13.1.0"}, "base_image") == ("compute-eval:13.1.0", None)
    assert named_image({"base_image": None}, "base_image") == (None, None)
    assert named_image({}, "base_image") == (None, None)
    for bad in (13, "compute eval", "--privileged"):
        image, error = named_image({"base_image": bad}, "base_image")
        assert image is None and error is not None and error.startswith("base_image: expected an image name")


def _tag(engine: docker.DockerClient, mark: str) -> None:
    """MARKED, an image FROM the base whose variable says ``mark`` (no RUN: built at once)."""
    dockerfile = f"FROM {packs.DOCKER_BASE}\nENV CODEBENCH_PROBLEM_IMAGE={mark}\n"
    engine.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=MARKED, rm=True)


@pytest.mark.parametrize("xdist_args", [[]], ids=["serial"])  # two runs around a rebuilt image
def test_the_docker_runner_runs_a_problem_in_its_image_and_keys_its_verdicts_by_it(pytester, codebench, engine):
    _tag(engine, "one")
    problems = [
        packs.problem("I/1", base_image=MARKED, build_command=BUILD, baseline_solution=None),
        packs.problem("I/2", build_command=BUILD, baseline_solution=None),
    ]
    solutions = [packs.solution("I/1"), packs.solution("I/2")]
    cache = str(pytester.path / "cache")
    args = [*dataset(pytester, *problems, solutions=solutions), FORCE, *DOCKER, "--codebench-store", "on"]
    args += ["--codebench-cache-dir", cache]
    first = codebench(*args)
    # The problem that names the image builds there; its neighbour in the run's image.
    assert "image=one" in first.items["I/1[0]"]["message"]
    assert "image=\n" in first.items["I/2[0]"]["message"] + "\n" and "image=one" not in first.items["I/2[0]"]["message"]
    # The same name, another image: the stored verdict is not reused, the problem is graded again.
    _tag(engine, "two")
    again = codebench(*args)
    assert "image=two" in again.items["I/1[0]"]["message"]
    assert again.items["I/1[0]"]["properties"].get("cached") != "true"
    assert again.items["I/2[0]"]["properties"].get("cached") == "true", again.items["I/2[0]"]


def test_a_problem_whose_image_cannot_be_had_is_skipped_with_the_ways_to_get_it(pytester, codebench, engine):
    problems = [packs.problem("I/1", base_image="compute-eval:13.1.0"), packs.problem("I/2")]
    # A registry on a loopback port that refuses: the pull is tried, and fails at once.
    run = codebench(*dataset(pytester, *problems), FORCE, *DOCKER, "--codebench-registry", "127.0.0.1:9")
    item = run.items["I/1[0]"]
    assert item["status"] == "skipped", item
    for words in ("compute-eval:13.1.0", "127.0.0.1:9/compute-eval:13.1.0", "docker pull", "docker load"):
        assert words in item["message"], item["message"]
    assert run.items["I/2[0]"]["status"] == "passed"
    assert "left out of pass@k" in run.output  # the machine's trouble, not the model's


def test_the_local_runner_ignores_a_problems_image_and_says_so_once(pytester, codebench):
    problems = [packs.problem(f"I/{n}", base_image="compute-eval:13.1.0", min_cuda_toolkit=None) for n in (1, 2)]
    run = codebench(*dataset(pytester, *problems), FORCE)
    assert categories(run) == {"I/1[0]": "passed", "I/2[0]": "passed"}
    lines = [line for line in run.output.splitlines() if "ignores the images problems name" in line]
    assert lines == [
        "the local runner ignores the images problems name (base_image, e.g. compute-eval:13.1.0), as NVIDIA's"
        " local evaluator does: their commands ran on this machine (--codebench-runner docker runs them in their image)"
    ]
