"""Exports (workflow/rules/store.smk, `afbench export`): paper tables, Every Eval Ever records
and the results store."""
