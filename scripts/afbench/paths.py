"""Where every artifact lives under results/<revision>/: one answer for the CLI and Snakemake."""

from __future__ import annotations

from pathlib import Path

from .budget import budget_label
from .config import revision_dir


def release_file(config: dict, rel: str) -> Path:
    return revision_dir(config) / "release" / rel


def receipt(config: dict) -> Path:
    return revision_dir(config) / "release" / "receipt.json"


def catalog(config: dict) -> Path:
    return revision_dir(config) / "tasks" / "catalog.json"


def selection(config: dict, name: str) -> Path:
    return revision_dir(config) / "tasks" / "selections" / f"{name}.json"


def plan(config: dict, selection_name: str, agent: str) -> Path:
    return revision_dir(config) / "plans" / selection_name / f"{agent}.json"


def imports_dir(config: dict, condition: str, budget_usd: float) -> Path:
    return revision_dir(config) / "imports" / condition / budget_label(budget_usd)


def model_import(config: dict, condition: str, budget_usd: float, slug: str) -> Path:
    return imports_dir(config, condition, budget_usd) / f"{slug}.json"


def run_dir(config: dict, name: str) -> Path:
    return revision_dir(config) / "runs" / name


def report_dir(config: dict) -> Path:
    return revision_dir(config) / "report"


def audit(config: dict) -> Path:
    return revision_dir(config) / "audit.json"
