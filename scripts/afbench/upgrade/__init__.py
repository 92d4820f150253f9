"""Upgrades (workflow/rules/diff.smk): what a new release changes, task by task, and results
across revisions."""
