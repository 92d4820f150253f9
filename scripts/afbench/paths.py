"""Where every artifact lives under results/<revision>/: one answer for the CLI and Snakemake."""

from __future__ import annotations

from pathlib import Path

from .budget import budget_label
from .config import revision_dir
from .fsutil import check_name


def release_file(config: dict, rel: str) -> Path:
    return revision_dir(config) / "release" / rel


def receipt(config: dict) -> Path:
    return revision_dir(config) / "release" / "receipt.json"


def catalog(config: dict) -> Path:
    return revision_dir(config) / "tasks" / "catalog.json"


def selection(config: dict, name: str) -> Path:
    return revision_dir(config) / "tasks" / "selections" / f"{name}.json"


def plan_label(agent: str, model: str | None) -> str:
    """A plan's file name: the agent, or agent__provider__model for a real model."""
    return check_name(
        agent if model is None else f"{agent}__{model.replace('/', '__')}", "plan name"
    )


def plan(config: dict, selection_name: str, label: str) -> Path:
    return revision_dir(config) / "plans" / selection_name / f"{label}.json"


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
