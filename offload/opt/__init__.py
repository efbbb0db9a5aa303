"""The optimiser: passes over the IR and the pass manager."""
