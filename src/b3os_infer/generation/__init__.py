"""The one generation service behind every generation route (``service.py``)."""
