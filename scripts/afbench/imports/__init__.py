"""Imports (workflow/rules/imports.smk): the official results, validated, and their like-for-like
comparison."""
