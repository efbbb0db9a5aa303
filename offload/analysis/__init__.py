"""Restriction checks, type facts, call graph and range facts over the user code and the IR."""
