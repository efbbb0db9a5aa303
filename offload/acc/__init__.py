"""Accelerate-style collectives (fold, scan, permute, stencil) built on the element-function core."""
