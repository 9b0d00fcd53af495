"""Operations: export, import and reset of the virtual cluster, and the scheduler configuration over HTTP."""
