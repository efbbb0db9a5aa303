"""Shared corpora of element functions (valid programs; see ``valid.py``)."""
