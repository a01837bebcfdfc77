"""Proof that a test really passed, taken where the solution cannot write it: the main guard, the
link check of the built programs, canary runs, and the Python tests' runner."""
