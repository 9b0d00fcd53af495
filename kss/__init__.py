"""kss's public Python API: what a scheduler plugin written outside this repository imports.

``kss.framework`` is the contract (documented in docs/plugins.md); everything under ``kss_sim`` is the simulator's
own code and may change between releases.
"""
