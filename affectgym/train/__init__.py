"""Training: flattened datasets, TRL reward functions, environment_factory, GRPO entry."""
