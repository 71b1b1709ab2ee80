"""Engines behind one small seam (``base.py``): llama.cpp in process (``llamacpp/``), an
engine over HTTP (``upstream/``), the scripted fake (``scripted/``) and sentence embeddings
(``embedding/``); the KV memory they plan with (``kv_cache.py``, ``memory_plan.py``)."""
