"""Device memory (unified and device modes), pool, transfers, streams."""
