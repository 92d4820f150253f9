"""The report (workflow/rules/report.smk): its analysis, its figures and its HTML page."""
