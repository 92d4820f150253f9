"""The foundation every stage stands on: errors, files, the config and its settings, statistics,
Harbor's folders, locks and processes."""
