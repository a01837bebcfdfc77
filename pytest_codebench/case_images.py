"""The runner of a case whose task names an image of its own (``Case.image``, ComputeEval's
``base_image``): the run's runner in that image where it runs images (docker), skipped with
the ways to get an image that cannot be had; the local runner ignores it, as NVIDIA's local
evaluator does, and the run says so once (:func:`ignored_line`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .cases import Case
from .context import RunContext
from .runners import ImageUnavailable, Runner
from .verdict import Outcome, Verdict

IGNORED_KEY = "case-image-ignored"
# [REGISTRY/]NAME[:TAG][@DIGEST], lowercase path components as Docker names them; no spaces,
# nothing a shell or an option parser would read otherwise.
IMAGE_NAME = re.compile(r"[a-z0-9][a-z0-9._:/-]*(?:@sha256:[0-9a-f]{64})?", re.IGNORECASE)


def case_runner(
    case: Case, runner_class: type[Runner], runner: Callable[[], Runner], context: RunContext
) -> Runner | Verdict | None:
    """The runner for ``case`` where it is not the run's own (None), or its skip."""
    if case.image is None:
        return None
    if not runner_class.runs_images:
        image = case.image
        context.once(IGNORED_KEY, lambda: {"runner": runner_class.name, "image": image})
        return None
    try:
        return runner().for_image(case.image)
    except ImageUnavailable as exc:
        return Verdict(Outcome.SKIPPED, str(exc), excused=True)


def ignored_line(context: RunContext) -> str | None:
    """The run's one line on the images it ignored, if it did."""
    ignored = context.stored(IGNORED_KEY)
    if not ignored:
        return None
    return (
        f"the {ignored['runner']} runner ignores the images problems name (base_image, e.g. {ignored['image']}),"
        " as NVIDIA's local evaluator does: their commands ran on this machine (--codebench-runner docker runs them"
        " in their image)"
    )


def named_image(record: Mapping[str, Any], field: str) -> tuple[str | None, str | None]:
    """The image a task record's ``field`` names (None where it names none), and what is wrong
    with the field, if anything."""
    value = record.get(field)
    if value is None or value == "":
        return None, None
    if not isinstance(value, str) or not IMAGE_NAME.fullmatch(value):
        return None, f"{field}: expected an image name such as compute-eval:13.1.0, not {value!r}"
    return value, None
