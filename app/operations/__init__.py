"""Operations: export, import and reset of the virtual cluster, and the server plumbing around them."""
