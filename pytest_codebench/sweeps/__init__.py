"""Sweeps: several models' solution sets in one run, the verdict store that remembers what was
graded, the reuse of stored and duplicate verdicts, and CI shards."""
