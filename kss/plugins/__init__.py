"""Out-of-tree plugins shipped with kss, written only against the public API (``kss.framework``).

Each is registered through an entry point of the group ``kss.plugins`` (pyproject.toml) and imported only when a
configuration names it, exactly as a plugin package of one's own would be (docs/plugins.md).
"""
