"""Project-level pytest configuration.

The sample problems' held-out tests (datasets/computeeval/problems/*/test_files/test_*.py)
import torch and a solution that only exists in a grading workspace: they are data, not
tests of this project.
"""

collect_ignore = ["datasets"]
