"""mlc: a small machine-learning compiler for teaching."""
