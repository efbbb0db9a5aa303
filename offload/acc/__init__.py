"""Accelerate-style collectives (fold, scan, permute, stencil) on the element-function core."""
