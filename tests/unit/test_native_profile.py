"""The native profile (templates that render tools and reasoning themselves, as Qwen3's do),
shown on a template of that style written for this test: no such GGUF is available here, so
this covers the node's side — detection, rendering, and reading the reply back."""

from __future__ import annotations

import json

from b3os_infer.core import (
    ChatRequest,
    Message,
    TextDelta,
    TextPart,
    Thinking,
    ThinkingDelta,
    ThinkingEnd,
    ThinkingPart,
    Tool,
    ToolCallEnd,
    ToolCallPart,
    ToolCallStart,
    ToolResultPart,
)
from b3os_infer.node.cards import ModelCard
from b3os_infer.node.chat_model import ChatModel
from b3os_infer.node.chat_template import ChatTemplate
from b3os_infer.node.profiles import detect_profile
from b3os_infer.node.reply import ReplyParser
from b3os_infer.node.signatures import Signer

# ChatML with tools in the system turn, calls as <tool_call> JSON, results as <tool_response>
# in a user turn, earlier reasoning as <think>, and an empty reasoning section when
# enable_thinking is false: the conventions of Qwen3-style templates.
NATIVE = """
{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'user' %}<|im_start|>user
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{% if message.reasoning_content %}<think>
{{ message.reasoning_content }}
</think>

{% endif %}{{ message.content }}
{%- for call in message.tool_calls or [] %}
<tool_call>
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking is false %}<think>

</think>

{% endif %}{% endif %}"""

WEATHER = Tool("get_weather", "Weather in a city",
               {"type": "object", "properties": {"city": {"type": "string"}}})


def model() -> ChatModel:
    profile = detect_profile(NATIVE)
    card = ModelCard(id="native", display_name="native", kind="chat", context_window=4096,
                     max_output_tokens=1024, profile=profile.name)
    return ChatModel(card=card, engine=None, template=ChatTemplate(NATIVE),  # type: ignore[arg-type]
                     profile=profile, signer=Signer(b"s"))


def test_the_profile_is_read_off_the_template():
    profile = detect_profile(NATIVE)
    assert profile.native_tools and profile.native_reasoning and profile.name == "native"


def test_tools_calls_and_results_render_the_templates_way():
    request = ChatRequest(model="native", system="Be brief.", tools=[WEATHER], messages=[
        Message("user", [TextPart("Weather in Paris?")]),
        Message("assistant", [ThinkingPart("I should ask the tool."),
                              ToolCallPart("toolu_1", "get_weather", {"city": "Paris"})]),
        Message("user", [ToolResultPart("toolu_1", "18 C")])])
    text, opens_thinking = model().render(request)
    assert not opens_thinking
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools\n<tools>\n")
    assert json.loads(text.split("<tools>\n")[1].split("\n")[0])["function"]["name"] == \
        "get_weather"
    assert "<think>\nI should ask the tool.\n</think>" in text
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n' \
        "</tool_call>" in text
    assert "<|im_start|>user\n<tool_response>\n18 C\n</tool_response>" in text
    # no thinking asked: the template closes an empty reasoning section itself
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")


def test_thinking_leaves_the_section_to_the_model_and_the_reply_is_read_back():
    request = ChatRequest(model="native", thinking=Thinking(512),
                          messages=[Message("user", [TextPart("Hi")])])
    text, opens_thinking = model().render(request)
    assert opens_thinking and text.endswith("<|im_start|>assistant\n")
    parser = ReplyParser(thinking=True, tools=True, sign=lambda t: "sig")
    reply = ('<think>\nThe user greets me.\n</think>\n\nHello!\n<tool_call>\n'
             '{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>')
    events = [e for i in range(0, len(reply), 3) for e in parser.feed(reply[i:i + 3])]
    events += parser.finish()
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    assert thinking == "The user greets me."
    assert any(isinstance(e, ThinkingEnd) for e in events)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello!"
    (start,) = [e for e in events if isinstance(e, ToolCallStart)]
    (end,) = [e for e in events if isinstance(e, ToolCallEnd)]
    assert (start.name, end.input) == ("get_weather", {"city": "Oslo"})
