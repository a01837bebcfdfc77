"""TensorBench, split by phase: ``load`` (tasks and predictions), ``environment`` (provisioning
and the baseline), ``cache`` (the compiler cache), ``suite`` (running the commands), ``rules``
(what their results mean), ``benchmark`` (the class the entry point names) and ``fixtures``
(``scorch_checkout``, a pytest plugin of its own)."""

from .benchmark import TensorBench

__all__ = ["TensorBench"]
