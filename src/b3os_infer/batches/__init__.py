"""Batches: Anthropic's Message Batches and OpenAI's Files + Batch API on the local engine.

- ``BatchSettings`` (``config/sections.py``, ``[batches]``): how many batch sequences run,
  file and batch limits, expiry;
- ``tables`` and ``store``: batches, their requests and uploaded files in the edge database,
  read and written through ``async_store`` on the edge's database threads;
- ``runner``: runs pending requests in the engine's spare capacity, below interactive ones
  (``gate``), each through the node's own route (``execute``), counted under a batch class
  (``budget``); resumes after a restart; ``service`` holds the store and the runner;
- ``anthropic/`` and ``openai_api/`` (files, input lines, output files): each API's routes
  and wire models, peers that do not import each other; ``apis`` builds the service with
  them and gives their routes; ``policy`` renders their field tables into docs/batches.md.
"""
