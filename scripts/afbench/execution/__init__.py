"""Execution (workflow/rules/execute.smk): trials run under a ceiling, the cost ledger, the
sequential decision, and the live view."""
