"""Server tools: web search and web fetch, run by the node inside the model's turn.

The model sees each as a function (``functions.py``); the node's loop (``loop.py``) runs
its calls (``tool_run.py``) through the operator's search backend (``search.py``,
``searxng.py``) or the guarded fetcher (``fetch.py``, ``addresses.py``) and continues the
reply with the result in the prompt.
"""
