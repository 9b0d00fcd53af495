"""Golden scenario generators (see README.md)."""
