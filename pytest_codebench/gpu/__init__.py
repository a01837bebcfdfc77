"""GPUs: what this machine's CUDA can do (probes), and which item holds which GPU (the scheduler)."""
