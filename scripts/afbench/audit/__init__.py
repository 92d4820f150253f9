"""Audit (workflow/rules/audit.smk, report.smk): the artifact manifest and the audit of a
results directory as a whole."""
