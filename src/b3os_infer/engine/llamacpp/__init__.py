"""The embedded engine: llama.cpp in process, through llama-cpp-python's low-level API.

One scheduler thread owns the llama contexts, one per lane (lanes.py): each step it
admits waiting requests into free slots, and for each lane builds one ``llama_batch``
holding the next token of every decoding sequence plus a chunk of pending prompt tokens,
decodes it, and samples each sequence from its own sampler chain. A request goes to the
shortest lane it fits with room to answer; a reply that outgrows its lane moves on to the
long one (its KV copied across). A finished or cancelled sequence leaves its KV in its slot
(a cancelled prefill keeps what it computed): the next request is seated in the free slot
that shares the longest prefix with its prompt, and only the rest is dropped
(``llama_memory_seq_rm``) and computed. When a running sequence shares a much longer
prefix, its KV is copied into the least recently used free slot instead. Long prefixes are
also written to disk (engine/llamacpp/disk_cache.py) and reloaded from there into any slot they fit,
after a restart too. The event loop only ever waits on queues.

The modules, one job each:

- ``engine``: ``LlamaCppEngine``, the Engine of engine/base.py, and its lifecycle;
- ``settings``: ``LlamaCppSettings``, what it is told;
- ``model``: the weights and the vocabulary (tokenize, token bytes, metadata);
- ``contexts``: the KV plan, a llama.cpp context per lane, the prefix cache on disk;
- ``scheduler``: the thread, admission and release of sequences;
- ``placement``: the lane and slot of a sequence, the prefix it reuses, outgrown replies;
- ``steps``: a lane's batch, its decode, drafts verified;
- ``sampling``: tokens from logits, and what they do to the reply;
- ``sequence``: one request inside the engine, and the outbox of its events;
- ``lanes``: a lane's context and slots, each slot's KV stream and the tokens it holds;
- ``seq_state``: a slot's saved state rewritten for a lane of another slot count;
- ``samplers``: a request's llama.cpp sampler chain, its grammar included;
- ``drafting``: the drafts of speculative decoding, from n-grams (no llama.cpp);
- ``prefill_log``: long prompts' progress in the log (as ``b3os_infer.engine.prefill``).

The others log as ``b3os_infer.engine.llamacpp``.
"""

from .engine import LlamaCppEngine
from .settings import LlamaCppSettings

__all__ = ["LlamaCppEngine", "LlamaCppSettings"]
