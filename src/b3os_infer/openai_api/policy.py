"""The field policy of the OpenAI routes (/chat/completions, /completions): one table.

Every request field, message field, content-part type and tool type is in exactly one
list: supported, accepted and ignored, or refused (400 ``unsupported_parameter`` naming
the field as a path). Anything not in the table is refused the same way.
``docs/openai.md`` is rendered from this module (``python -m b3os_infer.openai_api.policy``)
and a test keeps them equal.
"""

from __future__ import annotations

from ..policy import Rule, names, render_tables, rule, rules

CHAT_FIELDS = rules(
    ("model", "supported", "required; a model this node serves, never mapped to another"),
    ("messages", "supported", "required; roles system, developer, user, assistant, tool"),
    ("max_completion_tokens", "supported", "at most the model's output limit (larger values "
     "are lowered to it); reasoning counts against it"),
    ("max_tokens", "supported", "the older spelling of `max_completion_tokens`"),
    ("stream", "supported", "`data:` chunks, `role` in the first chunk only, then `[DONE]`"),
    ("stream_options", "supported", "`include_usage`: `usage: null` on every chunk, then one "
     "chunk with `choices: []` and the usage; `include_obfuscation` ignored"),
    ("stop", "supported", "a string or up to 4; also across token boundaries and in streams"),
    ("temperature", "supported", "0 to 2; 0 is greedy"),
    ("top_p", "supported", "0 to 1"),
    ("top_k", "supported", "an extension (as vLLM's): >= 0, 0 = off"),
    ("presence_penalty", "supported", "-2 to 2, over the tokens generated so far"),
    ("frequency_penalty", "supported", "-2 to 2, over the tokens generated so far"),
    ("logit_bias", "supported", "token ids of the model's own vocabulary, -100 to 100"),
    ("seed", "supported", "the same seed, prompt and settings give the same reply"),
    ("logprobs", "supported", "log-probabilities of the reply's text tokens, under the model's "
     "distribution before sampling settings"),
    ("top_logprobs", "supported", "0 to 20; needs `logprobs: true`"),
    ("n", "supported", "1 to 8 choices, generated side by side in the batch; seeds `seed`, "
     "`seed + 1`, ..."),
    ("tools", "supported", "`function` tools; arguments valid against `parameters` by "
     "construction (grammar-constrained decoding)"),
    ("tool_choice", "supported", "none, auto, required, or a named function"),
    ("parallel_tool_calls", "supported", "false: at most one call per reply"),
    ("response_format", "supported", "text, json_object, json_schema (always strict here), "
     "enforced by grammar"),
    ("reasoning_effort", "supported", "none, minimal, low, medium, high, xhigh: the thinking "
     "budget (none or absent: no reasoning)"),
    ("user", "ignored", "an opaque end-user id; nothing here is billed per user"),
    ("safety_identifier", "ignored", "an opaque end-user id"),
    ("metadata", "ignored", "stored completions are not kept"),
    ("store", "ignored", "stored completions are not kept"),
    ("service_tier", "ignored", "one tier here"),
    ("prompt_cache_key", "ignored", "the prefix cache is automatic; reuse is reported in "
     "`usage.prompt_tokens_details.cached_tokens`"),
    ("prompt_cache_retention", "ignored", "the prefix cache is automatic"),
    ("verbosity", "ignored", "not a control these models have"),
    ("modalities", "ignored", "text is the only output; asking for `audio` is refused"),
    ("prediction", "ignored", "predicted outputs only change speed, not the reply"),
    ("audio", "refused", "no audio output"),
    ("web_search_options", "refused", "no server-side web search"),
    ("functions", "refused", "deprecated: declare them in `tools`"),
    ("function_call", "refused", "deprecated: use `tool_choice`"),
)

COMPLETIONS_FIELDS = rules(
    ("model", "supported", "required"),
    ("prompt", "supported", "required: a string, a list of strings, a list of token ids or a "
     "list of such lists; each prompt gets `n` choices"),
    ("max_tokens", "supported", "default 16, as OpenAI's"),
    ("stream", "supported", "`data:` chunks, then `[DONE]`"),
    ("stream_options", "supported", "`include_usage`, as on chat completions"),
    ("stop", "supported", "as on chat completions"),
    ("temperature", "supported", "as on chat completions"),
    ("top_p", "supported", "as on chat completions"),
    ("top_k", "supported", "as on chat completions"),
    ("presence_penalty", "supported", "as on chat completions"),
    ("frequency_penalty", "supported", "as on chat completions"),
    ("logit_bias", "supported", "as on chat completions"),
    ("seed", "supported", "as on chat completions"),
    ("logprobs", "supported", "0 to 5: `tokens`, `token_logprobs`, `top_logprobs`, "
     "`text_offset`"),
    ("n", "supported", "1 to 8 per prompt"),
    ("best_of", "supported", "only equal to `n` (every candidate is returned)"),
    ("echo", "supported", "the prompt text before the completion (not with `logprobs`)"),
    ("user", "ignored", "as on chat completions"),
    ("suffix", "refused", "no fill-in-the-middle"),
)

MESSAGE_FIELDS = rules(
    ("role", "supported", "system, developer, user, assistant, tool"),
    ("content", "supported", "a string or content parts; may be null on an assistant "
     "message with `tool_calls`"),
    ("tool_calls", "supported", "assistant messages: `function` calls, `arguments` a JSON "
     "object as text; each answered by a `tool` message"),
    ("tool_call_id", "supported", "tool messages: the call answered"),
    ("reasoning_content", "supported", "assistant messages: earlier reasoning, rendered back "
     "the way the template expects"),
    ("reasoning", "supported", "the other spelling of `reasoning_content`"),
    ("name", "ignored", "participant names are not shown to the model"),
    ("refusal", "ignored", "assistant messages: not shown to the model"),
    ("audio", "refused", "no audio"),
    ("function_call", "refused", "deprecated: use `tool_calls`"),
)

CONTENT_PARTS = rules(
    ("text", "supported", "in every role"),
    ("refusal", "ignored", "assistant messages: not shown to the model"),
    ("image_url", "refused", "the served models read text only"),
    ("input_audio", "refused", "the served models read text only"),
    ("file", "refused", "the served models read text only"),
)

TOOL_TYPES = rules(
    ("function", "supported", "`name` (1-64 of letters, digits, `_`, `-`), `description`, "
     "`parameters` (a JSON Schema object; absent means no arguments), `strict` (always so)"),
    ("custom", "refused", "free-form custom tools are not served"),
    ("allowed_tools", "refused", "as a `tool_choice`: name one function or use `required`"),
)

HEADERS = rules(
    ("authorization", "supported", "`Bearer <B3OS key>`"),
    ("x-api-key", "supported", "the B3OS key, as on the Anthropic routes"),
    ("openai-organization", "ignored", "one organisation here"),
    ("openai-project", "ignored", "one project here"),
    ("x-stainless-*", "ignored", "the SDKs' telemetry headers"),
)

_TABLES = (
    ("Request fields of `POST /v1/infer/chat/completions`", CHAT_FIELDS),
    ("Request fields of `POST /v1/infer/completions`", COMPLETIONS_FIELDS),
    ("Fields of a message in `messages[]`", MESSAGE_FIELDS),
    ("Content parts in `messages[].content`", CONTENT_PARTS),
    ("Tool types in `tools[]`", TOOL_TYPES),
    ("Headers", HEADERS),
)


def render_markdown() -> str:
    """The tables as they appear in docs/openai.md."""
    return render_tables(_TABLES)


__all__ = ["Rule", "names", "render_markdown", "rule"]

if __name__ == "__main__":
    print(render_markdown())
