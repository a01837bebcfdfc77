"""Reading ComputeEval's problems and solutions: datapacks, records, releases by name and NVIDIA's
wheels."""
