"""Chat templates for the scripted engine, which has no model file to take one from.

- ``NATIVE``: ChatML that renders ``tools`` itself and understands ``enable_thinking`` and
  ``reasoning_content`` (the Qwen way), so the node uses its native profile; tool results
  go back to the model inside the user turn, in ``<tool_response>`` tags.
- ``PLAIN``: ChatML knowing neither (the SmolLM2 way), so the node uses its generic tool
  prompt and reasoning profile.
"""

from __future__ import annotations

NATIVE = """\
{%- set rest = messages[1:] if messages and messages[0].role == 'system' else messages %}
{%- if tools or messages[0].role == 'system' %}
<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}{% endif %}
{% if tools %}

# Tools

Call functions with <tool_call>{"name": ..., "arguments": {...}}</tool_call>. They are:
<tools>
{% for tool in tools %}
{{ tool | tojson }}
{% endfor %}
</tools>
{% endif %}
<|im_end|>
{% endif %}
{%- for message in rest %}
{%- if message.role == 'tool' %}
{%- if loop.first or loop.previtem.role != 'tool' %}
<|im_start|>user
{% endif %}
<tool_response>
{{ message.content }}
</tool_response>
{% if loop.last or loop.nextitem.role != 'tool' %}
<|im_end|>
{% endif %}
{%- elif message.role == 'assistant' %}
<|im_start|>assistant
{% if message.reasoning_content %}
<think>
{{ message.reasoning_content }}
</think>

{% endif %}
{{ message.content }}
{%- for call in message.tool_calls or [] %}

<tool_call>
{{ {"name": call.function.name, "arguments": call.function.arguments} | tojson }}
</tool_call>
{%- endfor %}
<|im_end|>
{% else %}
<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}
<|im_start|>assistant
{% if enable_thinking is defined and not enable_thinking %}
<think>

</think>

{% endif %}
{%- endif %}
"""

PLAIN = """\
{%- for message in messages %}
<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}
<|im_start|>assistant
{% endif %}
"""

TEMPLATES = {"native": NATIVE, "plain": PLAIN}
