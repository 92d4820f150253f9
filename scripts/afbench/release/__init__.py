"""Release (workflow/rules/release.smk): the pinned files fetched and verified, the release's
identity, and the embedded demo release."""
