"""Tasks (workflow/rules/tasks.smk): the source-free catalog and task selections."""
