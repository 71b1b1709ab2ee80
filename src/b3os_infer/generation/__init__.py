"""The one generation pipeline behind every generation route (``pipeline.py``)."""
