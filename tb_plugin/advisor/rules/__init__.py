"""One module per advisor rule; each exposes `RULE` (see `..core.Rule`)."""
