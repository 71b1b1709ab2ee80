"""Batches: Anthropic's Message Batches and OpenAI's Files + Batch API on the local engine.

- ``BatchSettings`` (``config/sections.py``, ``[batches]``): how many batch sequences run,
  file and batch limits, expiry;
- ``tables`` and ``store``: batches, their requests and uploaded files in the edge database,
  read and written through ``async_store`` on the edge's database threads;
- ``runner``: runs pending requests in the engine's spare capacity, below interactive ones
  (``gate``), each through the node's own route (``execute``), counted under a batch class
  (``accounting``); resumes after a restart;
- ``anthropic_routes`` and ``openai_routes`` (with ``openai_files``): the two APIs' routes,
  their wire models in ``anthropic_wire`` and ``openai_wire``; ``policy`` renders their field
  tables into docs/batches.md.
"""
