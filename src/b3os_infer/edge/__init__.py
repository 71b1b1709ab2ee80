"""The edge, as pure ASGI: who is asking (``access/``), whether it may run now
(``admission/``), what is kept (``storage/``), which node serves it (``fleet/``), the admin
API (``admin/``), and the request id, body and shutdown layers beside them."""
