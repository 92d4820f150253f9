"""Plans (workflow/rules/plans.smk, power.smk, preregister.smk): Harbor run plans, power, and
the sealed analysis and run plans."""
