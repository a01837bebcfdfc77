"""TensorBench against real git repositories (built here: scorchlet, from the bundled sample's
pack.py), a real C++ extension build and the repository's own pytest suite. The compiler
cache: test_tensorbench_cache.py; the decision rules on made-up inputs: test_tensorbench_rules.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import packs
import pytest
from tensorbench_data import SAMPLE, categories, pack, prediction, sample_rows, task, write_dataset

# Environments and compiler caches are shared across these tests, as across a user's runs.
pytestmark = pytest.mark.usefixtures("tensorbench_cache_dir")


def _add_up(reason: str, pytest_output: str) -> None:
    """The reason's counts (the repository's tests) and the canary tests it names make pytest's
    own summary line, in the output or log beside it."""
    ours = re.search(r"(\d+) of (\d+) tests failed|(\d+) tests passed", reason)
    canaries = re.search(r"the harness's (\d+) canary tests \(\S+: (\d+) fails? by design\)", reason)
    theirs = re.findall(r"=+ (?:(\d+) failed, )?(\d+) passed in ", pytest_output)
    assert ours and canaries and theirs, (reason, pytest_output[-300:])
    failed, tests = (int(ours[1]), int(ours[2])) if ours[1] else (0, int(ours[3]))
    pytest_failed, pytest_passed = (int(count or 0) for count in theirs[-1])
    assert (failed + int(canaries[2]), tests + int(canaries[1])) == (pytest_failed, pytest_failed + pytest_passed)


def test_the_bundled_sample_gives_every_outcome(pytester, codebench):
    run = codebench("-p", "no:cacheprovider", "--codebench-report", "r.json", benchmark="tensorbench")
    expected = json.loads((SAMPLE / "expected.json").read_text())
    assert categories(run) == expected
    items = run.items
    # The verdict comes from the suite's JUnit XML: failing ids in the text and the properties.
    assert items["scorchlet__feature_sub[2]"]["properties"]["failed_tests"] == "tests/test_ops.py::test_sub"
    assert "1 of 6 tests failed: tests/test_ops.py::test_sub" in items["scorchlet__feature_sub[2]"]["message"]
    # Those 6 are the repository's tests; pytest's own counts, shown beside them (the output's
    # tail, the test log), also hold the harness's canary tests: the reason says how many.
    _add_up(items["scorchlet__feature_sub[2]"]["message"], items["scorchlet__feature_sub[2]"]["message"])
    report = {item["id"]: item for item in json.loads((pytester.path / "r.json").read_text())["items"]}
    passed = report["scorchlet__feature_sub[0]"]
    _add_up(passed["reason"], Path(passed["logs"]["test"]).read_text())
    assert items["scorchlet__feature_sub[0]"]["properties"]["tests"] == "6"
    assert items["scorchlet__feature_sub[5]"]["properties"]["patch_method"] == "patch --fuzz"
    assert items["scorchlet__feature_sub[6]"]["properties"]["vacuous_tests"] == "tests/test_ops.py::test_sub_runs"
    assert "vacuous_tests" not in items["scorchlet__feature_sub[0]"]["properties"]
    # A compiler cache served the suite's kernels (filled by the baseline run); what [0] compiled
    # for its patch was not kept for [5], which builds the same source: items only read.
    assert int(items["scorchlet__feature_sub[0]"]["properties"]["compiler_cache_hits"]) >= 2
    assert int(items["scorchlet__feature_sub[5]"]["properties"]["compiler_cache_misses"]) >= 1
    assert items["scorchlet__feature_unknown[0]"]["status"] == "error"
    assert "unknown instance_id 'scorchlet__feature_unknown'" in items["scorchlet__feature_unknown[0]"]["message"]
    assert "ran past the task's test_timeout (10 s)" in items["scorchlet__feature_wait[0]"]["message"]
    assert "added tests that assert nothing: scorchlet__feature_sub[6]: tests/test_ops.py::test_sub_runs" in run.output
    # Work trees go with their items, the failing ones too.
    assert not any((pytester.path / ".codebench" / "runs").glob("*/work/*"))


def test_fail_vacuous_fails_tests_that_assert_nothing(pytester, codebench, scorchlet):
    repo, shas = scorchlet
    b = pack.commit_b()
    asserting = pack.diff(
        b,
        pack._with_sub(
            b, test="\n\ndef check(x):\n    assert x == 5\n\n\ndef test_sub():\n    check(scorchlet.sub(7, 2))\n"
        ),
    )
    vacuous = pack.diff(b, pack._with_sub(b, test="\n\ndef test_sub():\n    scorchlet.sub(7, 2)\n"))
    args = write_dataset(
        pytester.path,
        repo,
        [task(shas, repo)],
        [prediction("feature_sub", asserting), prediction("feature_sub", vacuous)],
    )
    run = codebench(*args, "--codebench-fail-vacuous", benchmark="tensorbench")
    assert categories(run) == {"scorchlet__feature_sub[0]": "passed", "scorchlet__feature_sub[1]": "vacuous_tests"}
    assert "tests/test_ops.py::test_sub" in run.items["scorchlet__feature_sub[1]"]["message"]


def test_a_suite_that_runs_nothing_or_crashes_is_an_error(pytester, codebench, scorchlet):
    repo, shas = scorchlet
    b = pack.commit_b()
    no_tests = pack.diff(b, {name: text for name, text in b.items() if not name.startswith("tests/test_")})
    crash = pack.diff(b, {**b, "tests/conftest.py": "import os\nos._exit(3)\n"})
    args = write_dataset(
        pytester.path, repo, [task(shas, repo)], [prediction("feature_sub", no_tests), prediction("feature_sub", crash)]
    )
    run = codebench(*args, benchmark="tensorbench")
    assert categories(run) == {"scorchlet__feature_sub[0]": "error", "scorchlet__feature_sub[1]": "error"}
    assert "the suite ran no test (0 collected" in run.items["scorchlet__feature_sub[0]"]["message"]
    assert "the suite wrote no JUnit XML (exit 3)" in run.items["scorchlet__feature_sub[1]"]["message"]


def test_the_datasets_own_run_tests_sh(pytester, codebench, scorchlet):
    """The official script names /testbed: it runs against the item's work tree."""
    repo, shas = scorchlet
    script = pytester.path / "run_tests.sh"
    script.write_text(
        "#!/bin/bash\nset -e\ncd /testbed\npip install --no-deps --no-build-isolation -e . -q\npytest -v\n"
    )
    good = json.loads((SAMPLE / "predictions.jsonl").read_text().splitlines()[0])["model_patch"]
    broken = good.replace("return PyLong_FromLong(a - b);", "return PyLong_FromLong(a - b)")
    args = write_dataset(
        pytester.path, repo, [task(shas, repo)], [prediction("feature_sub", good), prediction("feature_sub", broken)]
    )
    run = codebench(*args, "--codebench-run-tests", str(script), benchmark="tensorbench")
    assert categories(run) == {"scorchlet__feature_sub[0]": "passed", "scorchlet__feature_sub[1]": "error"}
    assert "wrote no JUnit XML" in run.items["scorchlet__feature_sub[1]"]["message"]


def test_local_environments_use_the_python_the_setting_names(pytester, codebench, scorchlet):
    """--codebench-tensorbench-python names a Python of this machine, asked for its version
    where the commands run: one they cannot run is harness trouble, never the model's failure."""
    repo, shas = scorchlet
    args = write_dataset(pytester.path, repo, [task(shas, repo)], sample_rows(0))
    missing = pytester.path / "no-such-python"
    run = codebench(*args, "--codebench-tensorbench-python", str(missing), benchmark="tensorbench")
    item = run.items["scorchlet__feature_sub[0]"]
    assert item["status"] == "error"
    assert f"--codebench-tensorbench-python: cannot run {missing} where the commands run" in item["message"]


def test_bad_tasks_and_predictions_are_errors_naming_the_place(pytester, codebench, scorchlet):
    repo, shas = scorchlet
    tasks = [task(shas, repo), task(shas, repo, name="feature_twice", base="A", base_commit="not-a-sha")]
    args = write_dataset(pytester.path, repo, tasks, [prediction("feature_sub", ""), prediction("feature_twice", "")])
    (pytester.path / "predictions.jsonl").write_text((pytester.path / "predictions.jsonl").read_text() + "{not json\n")
    run = codebench(*args, benchmark="tensorbench")
    assert categories(run)["scorchlet__feature_sub[0]"] == "empty_patch"
    twice = run.items["scorchlet__feature_twice[0]"]
    assert twice["status"] == "error"
    assert "tensorbench.json:19: field 'base_commit': not a commit SHA" in twice["message"]
    assert "predictions.jsonl:3: not valid JSON" in run.items["predictions.jsonl:3[0]"]["message"]


def test_a_commit_the_mirror_lacks_is_fetched_once_then_a_clear_error(pytester, codebench, tmp_path):
    repo = tmp_path / "repo"
    shas = pack.build_repo(repo)
    cache = pytester.path / "cache"
    args = write_dataset(pytester.path, repo, [task(shas, repo)], [prediction("feature_sub", "")])
    assert categories(codebench(*args, "--codebench-cache-dir", str(cache), benchmark="tensorbench")) == {
        "scorchlet__feature_sub[0]": "empty_patch"
    }
    # Upstream moves on: the mirror has no C until it fetches again.
    c = pack.commit(repo, {**pack.commit_b(), "NEWS": "sub() is coming\n"}, "news", "2026-01-03T00:00:00Z")
    tasks = [task(shas, repo, base=c), task(shas, repo, name="feature_twice", base="0" * 40)]
    args = write_dataset(pytester.path, repo, tasks, [prediction("feature_sub", ""), prediction("feature_twice", "")])
    run = codebench(*args, "--codebench-cache-dir", str(cache), benchmark="tensorbench")
    assert categories(run) == {"scorchlet__feature_sub[0]": "empty_patch", "scorchlet__feature_twice[0]": "error"}
    assert (
        f"commit {'0' * 40} is not in {repo} (fetched it again to make sure)"
        in run.items["scorchlet__feature_twice[0]"]["message"]
    )


def test_workers_racing_for_one_mirror_fetch_it_once(pytester, scorchlet):
    """Both xdist workers need the mirror at once; a git that logs its calls counts the clones."""
    repo, shas = scorchlet
    log = pytester.path / "git.log"
    shim = pytester.path / "bin" / "git"
    shim.parent.mkdir()
    real_git = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    shim.write_text(f'#!/bin/sh\necho "$*" >> {log}\nsleep 0.2\nexec {real_git} "$@"\n')
    shim.chmod(0o755)
    # Four different answers (empty, and a bare newline): identical ones would be graded once.
    rows = [
        prediction("feature_sub", ""),
        prediction("feature_twice", ""),
        prediction("feature_sub", "\n"),
        prediction("feature_twice", "\n"),
    ]
    args = write_dataset(
        pytester.path, repo, [task(shas, repo), task(shas, repo, name="feature_twice", base="A")], rows
    )
    env_path = f"{shim.parent}{os.pathsep}{os.environ['PATH']}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", env_path)
        result = pytester.runpytest_subprocess(
            "--codebench=tensorbench", "-n", "2", *args, "--codebench-cache-dir", str(pytester.path / "cache")
        )
    result.assert_outcomes(failed=4)  # four empty patches, each on a fresh work tree
    calls = log.read_text().splitlines()
    assert sum("clone --mirror" in call for call in calls) == 1
    assert sum("clone --shared" in call for call in calls) == 4


def test_codebench_checkout_in_a_users_own_test(pytester, codebench, scorchlet):
    repo, shas = scorchlet
    pytester.makepyfile(
        f"""
        import subprocess
        import pytest

        @pytest.mark.codebench_repo({str(repo)!r}, {shas["A"]!r})
        def test_checkout(codebench_checkout):
            assert codebench_checkout.commit == {shas["A"]!r}
            assert (codebench_checkout.path / "setup.py").exists()
            git = ["git", "rev-parse", "HEAD"]
            head = subprocess.run(git, cwd=codebench_checkout.path, capture_output=True, text=True)
            assert head.stdout.strip() == {shas["A"]!r}
            assert "mul" not in (codebench_checkout.path / "csrc" / "ops.cpp").read_text()

        @pytest.mark.codebench_repo({str(repo)!r})
        def test_default_branch(codebench_checkout):
            assert codebench_checkout.commit == {shas["B"]!r}

        def test_scorch_url_is_overridable(scorch_checkout):
            assert scorch_checkout.commit == {shas["B"]!r}
        """
    )
    run = codebench("--codebench-repo", str(repo), benchmark="")
    run.result.assert_outcomes(passed=3)


def test_items_of_a_base_commit_share_an_xdist_group(pytester, scorchlet):
    repo, shas = scorchlet
    rows = [prediction("feature_sub", ""), prediction("feature_twice", "")]
    args = write_dataset(
        pytester.path, repo, [task(shas, repo), task(shas, repo, name="feature_twice", base="A")], rows
    )
    result = pytester.runpytest_subprocess("--codebench=tensorbench", *args, "-n", "2", "--dist", "loadgroup", "-v")
    result.stdout.fnmatch_lines(
        [f"*scorchlet__feature_sub?0?@{shas['B'][:12]}*", f"*scorchlet__feature_twice?0?@{shas['A'][:12]}*"]
    )


def test_groups_are_named_by_the_tasks_category_in_every_output(pytester, codebench, scorchlet):
    """A task's group is the top level of its first category (a base commit, named as one,
    where it has none), in the terminal, JUnit, the JSON report, the markdown and the page;
    the scheduling still groups items by base commit (the test above)."""
    repo, shas = scorchlet
    tasks = [
        task(shas, repo, categories=["Runtime/Caching & dispatch", "API/Arithmetic"]),
        task(shas, repo, name="feature_twice", base="A"),  # the sample's own: API/Arithmetic
        task(shas, repo, name="feature_checked", categories=[]),
    ]
    rows = [prediction("feature_sub", ""), prediction("feature_twice", ""), prediction("feature_checked", "")]
    args = write_dataset(pytester.path, repo, tasks, rows)
    outputs = ["--codebench-report", "r.json", "--codebench-markdown", "r.md", "--codebench-html", "html"]
    run = codebench(*args, *outputs, benchmark="tensorbench")
    base = f"base-{shas['B'][:12]}"
    expected = {"scorchlet__feature_sub[0]": "Runtime", "scorchlet__feature_twice[0]": "API"}
    expected["scorchlet__feature_checked[0]"] = base
    assert {name: item["properties"]["group"] for name, item in run.items.items()} == expected, run.output
    report = json.loads((pytester.path / "r.json").read_text())
    assert {item["id"]: item["group"] for item in report["items"]} == expected
    assert sorted(report["metrics"]["groups"]) == sorted({"Runtime", "API", base})
    run.result.stdout.fnmatch_lines(["all tasks: pass@1 0.00%*", "  API: pass@1 0.00%*", f"  {base}: pass@1 0.00%*"])
    header = (pytester.path / "r.md").read_text().splitlines()[2]
    assert "| API pass@1 |" in header and "| Runtime pass@1 |" in header
    overview = (pytester.path / "html" / "data" / "overview.js").read_text()
    table = json.loads(overview[overview.index("(") + 1 : overview.rindex(")")].split(",", 1)[1])["groups"]
    assert (table["metric"], sorted(row["group"] for row in table["rows"])) == ("pass@1", sorted(expected.values()))


def test_the_sample_is_reproducible():
    result = subprocess.run(
        [sys.executable, str(SAMPLE / "pack.py"), "--check"], check=False, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.usefixtures("engine")
def test_the_docker_runner_grades_like_the_local_one(pytester, codebench):
    run = codebench(
        "--codebench-runner", "docker", "--codebench-docker-base", packs.DOCKER_BASE, benchmark="tensorbench"
    )
    assert categories(run) == json.loads((SAMPLE / "expected.json").read_text())
    # The image brings ccache: the items' kernels come from the cache the baseline filled.
    assert run.items["scorchlet__feature_sub[0]"]["properties"]["compiler_cache"] == "ccache"
    assert int(run.items["scorchlet__feature_sub[0]"]["properties"]["compiler_cache_hits"]) >= 2


DATASET_DOCKERFILE = """\
ARG BASE=python:3.11-slim
FROM ${BASE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
    python3 python3-dev python3-venv python3-pip python3-pytest python3-setuptools python3-wheel g++ \\
    && rm -rf /var/lib/apt/lists/*
"""


@pytest.mark.usefixtures("engine")
def test_the_datasets_own_dockerfile(pytester, codebench, scorchlet):
    """The official image's way: the environment is the image's system Python."""
    repo, shas = scorchlet
    dockerfile = pytester.path / "Dockerfile"
    dockerfile.write_text(DATASET_DOCKERFILE)
    rows = [json.loads(line) for line in (SAMPLE / "predictions.jsonl").read_text().splitlines()[:3]]
    args = write_dataset(pytester.path, repo, [task(shas, repo)], rows)
    docker = ["--codebench-runner", "docker", "--codebench-docker-base", packs.DOCKER_BASE]
    run = codebench(*args, *docker, "--codebench-tensorbench-dockerfile", str(dockerfile), benchmark="tensorbench")
    assert categories(run) == {
        "scorchlet__feature_sub[0]": "passed",
        "scorchlet__feature_sub[1]": "empty_patch",
        "scorchlet__feature_sub[2]": "test_failed",
    }
    # That image has no compiler cache (and the plugin's sccache is not in it): said, not hidden.
    assert run.items["scorchlet__feature_sub[0]"]["properties"]["compiler_cache"] == "none"
    assert "compiler cache: NONE for 2 item(s)" in run.output


def test_failed_tests_run_again_and_the_flaky_ones_are_named(pytester, codebench, scorchlet):
    repo, shas = scorchlet
    b = pack.commit_b()
    flaky = (
        "import os\nimport pathlib\n\n\ndef test_flaky():\n    seen = pathlib.Path(os.environ['TMPDIR']) / 'seen'\n"
        "    first = not seen.exists()\n    seen.touch()\n    assert not first\n"
    )
    broken = "def test_broken():\n    assert 1 == 2\n"
    rows = [
        prediction("feature_sub", pack.diff(b, {**b, "tests/test_flaky.py": flaky, "tests/test_broken.py": broken}))
    ]
    args = write_dataset(pytester.path, repo, [task(shas, repo)], rows)
    run = codebench(*args, benchmark="tensorbench")
    item = run.items["scorchlet__feature_sub[0]"]
    # The verdict stands (the suite did not pass), and the rerun tells which failure was flaky.
    assert item["properties"]["category"] == "test_failed"
    if list(pytester.path.glob(".codebench/runs/*/logs/*/canary.log")):
        # The item drew the canary run first (as half of them do): the flaky test failed there
        # (and left its mark), so the verdict run found only the broken test failing.
        assert "flaky_tests" not in item["properties"]
        assert "1 of 7 tests failed" in item["message"]
        return
    assert item["properties"]["flaky_tests"] == "tests/test_flaky.py::test_flaky"
    assert "passed when run again (flaky): tests/test_flaky.py::test_flaky" in item["message"]
    assert "2 of 7 tests failed" in item["message"]


# -- the repository's own pytest configuration ---------------------------------------------------

# The caller's configuration, above the run directory (as the plugin's own checkout is when a
# user grades from it): the graded suite must never read it.
HOSTILE_INI = "[pytest]\naddopts = -p no:python\n"
ROOTDIR_TEST = """\
from pathlib import Path


def test_the_suite_runs_from_its_own_tree(request):
    tree = Path(__file__).resolve().parents[1]
    assert request.config.rootpath == tree
    assert "no:python" not in request.config.getini("addopts")
"""
# The repository's own configuration, in a file pytest reads only for its [pytest] section.
OWN_INI = (
    '[tox]\nenvlist = py311\n\n[pytest]\nmarkers =\n    slow: takes long\naddopts = -m "not slow" --strict-markers\n'
)
SLOW_TEST = (
    "import pytest\n\n\n@pytest.mark.slow\ndef test_slow():\n"
    '    assert False, "the repository\'s own addopts deselect this"\n'
)


def test_the_suite_runs_under_its_own_rootdir_and_configuration(pytester, codebench, scorchlet):
    repo, shas = scorchlet
    (pytester.path / "pytest.ini").write_text(HOSTILE_INI)
    b = pack.commit_b()
    # setup.cfg without [tool:pytest] is no pytest configuration: the search must not go on up.
    plain = pack.diff(
        b,
        {**pack._with_sub(b), "setup.cfg": "[flake8]\nmax-line-length = 120\n", "tests/test_rootdir.py": ROOTDIR_TEST},
    )
    own = pack.diff(b, {**pack._with_sub(b), "tox.ini": OWN_INI, "tests/test_slow.py": SLOW_TEST})
    args = write_dataset(
        pytester.path, repo, [task(shas, repo)], [prediction("feature_sub", plain), prediction("feature_sub", own)]
    )
    # The repository's own configuration is read, which is why a patch may not change it by default
    # (its addopts can deselect tests): the item fails naming the edit, unless it is allowed.
    run = codebench(*args, benchmark="tensorbench")
    assert categories(run) == {"scorchlet__feature_sub[0]": "passed", "scorchlet__feature_sub[1]": "test_failed"}
    assert run.items["scorchlet__feature_sub[0]"]["properties"]["tests"] == "7"
    assert (
        run.items["scorchlet__feature_sub[1]"]["properties"]["harness_edits"]
        == "tox.ini (pytest configuration: [pytest])"
    )
    run = codebench(*args, "--codebench-allow-harness-edits", benchmark="tensorbench")
    assert categories(run) == {"scorchlet__feature_sub[0]": "passed", "scorchlet__feature_sub[1]": "passed"}
    assert run.items["scorchlet__feature_sub[1]"]["properties"]["tests"] == "6"  # test_slow deselected
