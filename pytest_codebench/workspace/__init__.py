"""Where a model's answer is laid out: files written into a workspace, git checkouts, applied
diffs, and removing what a run left behind."""
