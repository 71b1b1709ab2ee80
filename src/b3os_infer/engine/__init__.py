"""Engines behind one small seam (see ``base.py``)."""
