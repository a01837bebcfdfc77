"""What a run tells: per-item results, JUnit properties, the JSON report and its merge, markdown
tables, pass@k and its intervals, and models compared."""
