"""What the first xdist worker writes for the others: a dataset that reads back the same, each
task's record written once however many samples it has."""

from __future__ import annotations

import json

from pytest_codebench.cases import Case, Dataset


def test_a_dataset_reads_back_the_same_with_each_record_written_once() -> None:
    records = [{"task_id": f"T/{n}", "test_command": "true", "files": ["x" * 1000]} for n in range(3)]
    cases = [
        Case(id=f"T/{n}[{s}]", task_id=f"T/{n}", sample=s, record=records[n], solution={"files": [s]}, line=s)
        for n in range(3)
        for s in range(50)
    ]
    broken = Case(id="problems.jsonl:9", task_id="", sample=0, error="not JSON", line=8)
    dataset = Dataset("p.jsonl", "0" * 64, "r1", [broken, *cases])
    text = json.dumps(dataset.to_json())
    assert text.count("x" * 1000) == 3  # not 150
    again = Dataset.from_json(json.loads(text))
    assert again == dataset
    # The samples of a task share its record again (one copy in each worker, not one a sample).
    assert again.cases[1].record is again.cases[50].record
