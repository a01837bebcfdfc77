"""ComputeEval's perf phase: timed runs against the reference, timing modes, profilers (with their
C++ source) and the scores over a run."""
