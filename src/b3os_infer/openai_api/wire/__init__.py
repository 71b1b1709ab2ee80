"""The OpenAI wire as typed models, named and shaped after the official SDK's types.

Requests (``chat``, ``completions``, with ``messages``, ``content``, ``tools``) are
validated by ``b3os_infer.wire_models.decode``; every field carries its policy marker, and
``kinds`` holds the tagged unions' kind tables. Responses (``responses``) are built as
models and serialised once. ``content``, ``tools`` and ``responses.CompletionUsage`` are
written to be shared with the Responses API.
"""
