"""Task analysis (workflow/rules/task_analysis.smk): why tasks fail, and the task table."""
