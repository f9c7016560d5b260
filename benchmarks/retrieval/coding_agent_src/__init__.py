"""Hand-written content of the coding-agent retrieval dataset (see ../README.md)."""
