"""Finished benchmark experiments, kept frozen as they were when their figures were taken (README.md
here lists them); not maintained against later code. Run one as ``python -m bench.archive.<name>``."""
