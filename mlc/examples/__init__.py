"""Runnable end-to-end examples (``python -m mlc.examples.mlp``)."""
