"""The one generation service behind every generation route (``pipeline.py``)."""
