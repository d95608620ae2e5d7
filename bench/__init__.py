"""Benchmarks of the pipeline: one script per question, run from the repository root as
``python -m bench.<name>`` (bench/README.md says what each answers and prints)."""
