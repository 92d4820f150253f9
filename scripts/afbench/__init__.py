"""afbench: a reproducible, auditable pipeline for the AutoformBench benchmark."""

__version__ = "0.1.0"

LICENSE_NOTE = (
    "Derived from AutoformBench release files, licensed CC BY-NC 4.0 by their authors: "
    "for research and evaluation only, not as training data. The cited books have their own "
    "licences and are never downloaded."
)
