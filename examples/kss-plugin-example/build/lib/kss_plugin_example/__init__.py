"""Example kss scheduler plugins (see docs/plugins.md in the kss repository)."""
