"""`--codebench-dataset 2026-1`: a ComputeEval release name resolved to NVIDIA's datapack, from an
installed compute_eval package, a cached wheel, or a wheel pip downloads. No internet: the
wheels and the package index are built here (pip reads them through --find-links)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import packs
import pytest

from pytest_codebench.benchmarks.computeeval.loading.releases import looks_like_release, versions_to_try
from pytest_codebench.benchmarks.computeeval.loading.wheel import check_member, record_digest, record_entry
from pytest_codebench.errors import DatasetError

FORCE = "--codebench-run-without-gpu"
MEMBER = "compute_eval/releases/2026-1-problems.tar.gz"


def datapack(tmp: Path) -> bytes:
    """A one-problem release that builds with cc and passes."""
    return packs.write_problems(tmp / "pack.tar.gz", [packs.problem("CUDA/1")], release="2026-1").read_bytes()


def write_wheel(directory: Path, version: str, members: dict[str, bytes], tamper: str | None = None) -> Path:
    """An nvidia-compute-eval wheel with a valid RECORD; ``tamper`` names a member whose
    bytes change after RECORD was written."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"nvidia_compute_eval-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in distribution(version, members, tamper).items():
            archive.writestr(name, data)
    return path


def install(site: Path, version: str, members: dict[str, bytes], tamper: str | None = None) -> None:
    """The distribution as pip installs it: its files and dist-info under ``site``."""
    for name, data in distribution(version, members, tamper).items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)


def distribution(version: str, members: dict[str, bytes], tamper: str | None) -> dict[str, bytes]:
    info = f"nvidia_compute_eval-{version}.dist-info"
    files = {
        "compute_eval/__init__.py": b"raise RuntimeError('compute_eval was imported')\n",
        **members,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: nvidia-compute-eval\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},sha256={record_digest(data)},{len(data)}\n" for name, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    if tamper:
        files[tamper] = files[tamper] + b"\0"
    return files


@pytest.fixture
def local_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pip's only source is a folder of wheels (what PyPI holds, in small): a newest version
    with no wheel at all, a newer one without releases, the other package line, and 2026.1
    with the release."""
    links = tmp_path / "index"
    links.mkdir()
    (links / "nvidia_compute_eval-2028.0.tar.gz").write_bytes(b"an sdist, never built")
    write_wheel(links, "2027.0", {"compute_eval/harness.py": b""})
    write_wheel(links, "26.3", {"compute_eval/harness.py": b""})
    write_wheel(links, "2026.1", {MEMBER: datapack(tmp_path)})
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    return links


def report(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "report.json").read_text())


def release_args(pytester: pytest.Pytester, cache: Path, name: str = "2026-1") -> list[str]:
    report_path = pytester.path / "report.json"
    return [
        "--codebench-dataset",
        name,
        "--codebench-cache-dir",
        str(cache),
        f"--codebench-report={report_path}",
        FORCE,
    ]


# -- pure rules ---------------------------------------------------------------------------------


def test_a_release_name_is_told_from_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert looks_like_release("2026-1") and looks_like_release("2025-12")
    for text in ("26-1", "2026-1-problems.tar.gz", "2026.1", "2026-", "x2026-1", "sample.jsonl"):
        assert not looks_like_release(text), text
    (tmp_path / "2025-3").write_text("")  # an existing path always wins
    assert not looks_like_release("2025-3")


def test_versions_are_tried_newest_first_in_pep440_order():
    # The real list (2026-11): 2026.2 dropped the bundled releases, 26.x is another package line.
    real = ["2026.2", "2026.1", "26.3", "26.1", "25.11", "25.10", "25.9.1", "25.9"]
    assert versions_to_try(real) == ["2026.2", "2026.1", "26.3", "26.1", "25.11"]
    assert versions_to_try(["26.3", "2026.3rc1", "not-a-version", "2026.1.dev2", "2025.10", "2026.1"]) == [
        "2026.1",
        "2025.10",
        "26.3",
    ]
    assert versions_to_try([]) == []


def test_record_hashes_are_checked_for_the_member_used():
    data = b"problems"
    # RECORD's form: sha256, urlsafe base64 without padding.
    assert record_digest(b"") == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record = f"compute_eval/__init__.py,sha256=xyz,0\n{MEMBER},sha256={digest},{len(data)}\nx.dist-info/RECORD,,\n"
    entry = record_entry(record, MEMBER)
    assert entry == ("sha256", digest)
    check_member("w.whl", MEMBER, data, entry)  # intact: no error
    with pytest.raises(DatasetError, match=rf"w\.whl: {MEMBER} does not match the wheel's RECORD"):
        check_member("w.whl", MEMBER, data + b"\0", entry)
    assert record_entry(record, "x.dist-info/RECORD") is None
    with pytest.raises(DatasetError, match="has no hash in the wheel's RECORD"):
        check_member("w.whl", MEMBER, data, record_entry(record, "compute_eval/releases/2025-1-problems.tar.gz"))


# -- through the plugin ---------------------------------------------------------------------------


@pytest.mark.parametrize("with_record", [True, False], ids=["dist-info", "bare"])
def test_a_release_resolves_from_an_installed_package_without_importing_it(
    pytester, codebench, dead_index, monkeypatch, with_record
):
    site = pytester.path / "site"
    install(site, "2026.1", {MEMBER: datapack(pytester.path)})  # its __init__ raises if imported
    if not with_record:  # a copy of the package without its distribution's metadata
        for path in sorted((site / "nvidia_compute_eval-2026.1.dist-info").iterdir()):
            path.unlink()
    monkeypatch.setenv("PYTHONPATH", str(site))
    cache = pytester.path / "cache"
    run = codebench(*release_args(pytester, cache))
    run.result.assert_outcomes(passed=1)
    assert "compute_eval was imported" not in run.output
    assert "downloading" not in run.output and not (cache / "computeeval" / "wheels").exists()
    release = report(pytester)["environment"]["release"]
    assert release["source"] == "installed package" and release["release"] == "2026-1"
    assert release["version"] == ("2026.1" if with_record else None)
    assert release["origin"] == str(site / MEMBER)


def test_an_installed_datapack_that_fails_its_record_is_an_error(pytester, codebench, dead_index, monkeypatch):
    install(pytester.path / "site", "2026.1", {MEMBER: datapack(pytester.path)}, tamper=MEMBER)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path / "site"))
    run = codebench(*release_args(pytester, pytester.path / "cache"))
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{pytester.path / 'site' / MEMBER}: {MEMBER} does not match the wheel's RECORD" in run.output
    assert "Traceback" not in run.output


def test_a_release_resolves_from_a_cached_wheel(pytester, codebench, dead_index):
    cache = pytester.path / "cache"
    wheel = write_wheel(cache / "computeeval" / "wheels", "2026.1", {MEMBER: datapack(pytester.path)})
    run = codebench(*release_args(pytester, cache))
    run.result.assert_outcomes(passed=1)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    release = report(pytester)["environment"]["release"]
    assert (release["source"], release["version"], release["wheel_sha256"]) == ("cached wheel", "2026.1", sha)
    assert report(pytester)["dataset"]["release"] == "2026-1"
    assert (
        f"ComputeEval release 2026-1 from nvidia-compute-eval 2026.1 (cached wheel, wheel sha256 {sha})" in run.output
    )
    assert "downloading" not in run.output


def test_a_tampered_cached_wheel_is_an_error_naming_the_file(pytester, codebench, dead_index):
    cache = pytester.path / "cache"
    wheel = write_wheel(cache / "computeeval" / "wheels", "2026.1", {MEMBER: datapack(pytester.path)}, tamper=MEMBER)
    run = codebench(*release_args(pytester, cache))
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{wheel}: {MEMBER} does not match the wheel's RECORD" in run.output
    assert "Traceback" not in run.output and not run.items


def test_offline_without_a_cache_gives_one_error_with_both_ways_out(pytester, codebench, dead_index):
    cache = pytester.path / "cache"
    run = codebench(*release_args(pytester, cache))
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    assert "codebench: asking the package index (pip) for nvidia-compute-eval" in run.output  # said so
    assert f"pip download --no-deps nvidia-compute-eval==2026.1 -d {cache}/computeeval/wheels" in run.output
    assert "or pass the path of a *-problems.tar.gz" in run.output
    assert "Traceback" not in run.output and run.output.count("ERROR: --codebench-dataset") == 1


def test_pip_downloads_the_newest_version_that_holds_releases_once(pytester, codebench, local_index):
    cache = pytester.path / "cache"
    first = codebench(*release_args(pytester, cache))
    first.result.assert_outcomes(passed=1)
    # 2028.0 has no wheel and 2027.0 holds no releases; 26.3 is older than 2026.1, never tried.
    assert "downloading nvidia-compute-eval==2028.0" in first.output
    assert "downloading nvidia-compute-eval==2027.0" in first.output
    assert "downloading nvidia-compute-eval==2026.1" in first.output
    assert "==26.3" not in first.output
    release = report(pytester)["environment"]["release"]
    assert (release["source"], release["version"]) == ("downloaded wheel", "2026.1")
    wheels = cache / "computeeval" / "wheels"
    assert sorted(p.name for p in wheels.iterdir()) == [
        "2027.0.no-releases",
        "nvidia_compute_eval-2026.1-py3-none-any.whl",
    ]

    second = codebench(*release_args(pytester, cache))
    second.result.assert_outcomes(passed=1)
    assert "downloading" not in second.output and "asking the package index" not in second.output
    assert report(pytester)["environment"]["release"]["source"] == "cached wheel"


def test_an_unknown_release_lists_the_releases_the_wheel_holds(pytester, codebench, local_index):
    run = codebench(*release_args(pytester, pytester.path / "cache", name="2031-1"))
    assert run.result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown ComputeEval release '2031-1': nvidia-compute-eval 2026.1 holds 2026-1" in run.output
    assert "Traceback" not in run.output


def test_processes_resolving_at_once_download_once(tmp_path, local_index):
    script = (
        "import sys; from pathlib import Path\n"
        "from pytest_codebench.benchmarks.computeeval.loading.releases import resolve\n"
        "print(resolve('2026-1', Path(sys.argv[1]), lambda line: print(line, file=sys.stderr)).path)\n"
    )
    cache = tmp_path / "cache"
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(cache)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outputs = [process.communicate(timeout=300) for process in processes]
    assert all(process.returncode == 0 for process in processes), outputs
    assert len({stdout for stdout, _ in outputs}) == 1
    assert sum(stderr.count("downloading nvidia-compute-eval==2026.1") for _, stderr in outputs) == 1
    # The datapack the index's 2026.1 wheel holds (local_index wrote it there).
    assert packs.read_archive(Path(outputs[0][0].strip())) == packs.read_archive(tmp_path / "pack.tar.gz")
