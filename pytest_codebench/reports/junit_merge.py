"""The JUnit XML files of a run's shards (pytest's ``--junitxml``) as one file, for the CI tools
that read JUnit: every test case of every part, in one ``testsuite`` whose counts are computed
again from those cases (tests, failures, errors, skipped, time)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

# What a test case's child says of it, as the testsuite counts it (pytest's own attributes).
COUNTED = {"failure": "failures", "error": "errors", "skipped": "skipped"}


class JUnitMergeError(Exception):
    """JUnit files that cannot be merged, and why (naming the files)."""


def _suites(path: Path) -> list[ET.Element]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise JUnitMergeError(f"{path}: cannot read a JUnit XML file ({exc})") from None
    if root.tag == "testsuite":
        return [root]
    if root.tag != "testsuites":
        raise JUnitMergeError(f"{path}: not a JUnit XML file (its root is <{root.tag}>, not <testsuites>)")
    return list(root.iter("testsuite"))


def merge_junit(paths: Sequence[Path], output: Path) -> dict[str, int]:
    """Writes the test cases of the JUnit files at ``paths`` to ``output`` as one suite, and
    returns its counts. A test case in two files is refused, as merge refuses an item in two
    reports: the parts would not be of one run."""
    suites = [(path, suite) for path in paths for suite in _suites(path)]
    if not suites:
        raise JUnitMergeError(f"{paths[0]}: holds no <testsuite>")
    merged = ET.Element("testsuite", {"name": suites[0][1].get("name", "pytest")})
    properties = ET.SubElement(merged, "properties")
    seen_properties: set[tuple[str | None, str | None]] = set()
    owner: dict[tuple[str | None, str | None], Path] = {}
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seconds = 0.0
    for path, suite in suites:
        for prop in suite.iterfind("properties/property"):
            pair = (prop.get("name"), prop.get("value"))
            if pair not in seen_properties:
                seen_properties.add(pair)
                properties.append(prop)
        for case in suite.iterfind("testcase"):
            name = (case.get("classname"), case.get("name"))
            if name in owner:
                raise JUnitMergeError(
                    f"{owner[name]} and {path} both hold {name[0]}::{name[1]}: each test must be in one file alone"
                )
            owner[name] = path
            merged.append(case)
            counts["tests"] += 1
            for tag, count in COUNTED.items():
                counts[count] += len(case.findall(tag))
            seconds += float(case.get("time") or 0)
    if not len(properties):
        merged.remove(properties)
    starts = sorted(stamp for _, suite in suites if (stamp := suite.get("timestamp")))
    merged.attrib.update({name: str(value) for name, value in counts.items()})
    merged.set("time", f"{seconds:.3f}")
    if starts:
        merged.set("timestamp", starts[0])  # the earliest part's start (ISO 8601 sorts as text)
    if hostname := suites[0][1].get("hostname"):
        merged.set("hostname", hostname)
    root = ET.Element("testsuites", {"name": "pytest tests"})
    root.append(merged)
    output.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(output, encoding="utf-8", xml_declaration=True)
    return counts
