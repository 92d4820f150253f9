"""Runs (workflow/rules/runs.smk): verifier verdicts and Harbor job folders imported, their
conformance to the plan, and pass@k over their attempts."""
