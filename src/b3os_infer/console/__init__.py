"""The web console: static files (``static/``) that the edge serves at ``/console``."""
