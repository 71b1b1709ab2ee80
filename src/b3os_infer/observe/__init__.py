"""Observability: Prometheus metrics, OpenTelemetry traces and ``server-timing``.

Below the node and the HTTP plumbing, above the engines: they note what they see into the
current request's ``Observation`` (``context.py``); the HTTP observer (``http.py``) turns it
into metrics (``metrics.py``), spans (``tracing.py``) and headers.
"""
