"""afbench: a reproducible, auditable pipeline for the AutoformBench benchmark."""

__version__ = "0.1.0"
