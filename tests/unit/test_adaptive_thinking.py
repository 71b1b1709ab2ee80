"""Adaptive thinking on a model whose template renders tools but knows no reasoning
(Qwen2.5-Coder's): the model decides, and such a model answers directly.

Measured live (docs/agents.md): Claude Code sends ``thinking: {"type": "adaptive"}`` on
every request; with the ``<think>`` scaffold opened after the generation prompt, the
Qwen2.5-Coder 0.5B pack wrote its whole answer inside it and ended its turn there, so
Claude Code saw no visible output and no tool call could be read.
"""

from __future__ import annotations

from b3os_infer.anthropic.decode import decode_messages_request
from b3os_infer.core import ChatRequest, Message, TextPart, Thinking, Tool
from b3os_infer.engine.scripted.templates import NATIVE
from b3os_infer.node.cards import ModelCard
from b3os_infer.node.chat_model import ChatModel
from b3os_infer.node.chat_template import ChatTemplate
from b3os_infer.node.profiles import detect_profile
from b3os_infer.node.signatures import Signer

# the shape of Qwen2.5-Coder-Instruct's template: tools in the system turn, calls as
# <tool_call> JSON, and nothing about reasoning
CODER = """
{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}{% endif %}
# Tools
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>
For each function call, return a json object within <tool_call></tool_call> XML tags.<|im_end|>
{% endif %}
{%- for message in messages %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

READ = Tool("Read", "Read a file", {"type": "object", "properties": {
    "file_path": {"type": "string"}}, "required": ["file_path"]})


# a template that knows neither tools nor reasoning (SmolLM2's kind)
PLAIN = """{%- for message in messages %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


def model(source: str = CODER) -> ChatModel:
    profile = detect_profile(source)
    card = ModelCard(id="coder", display_name="coder", kind="chat", context_window=4096,
                     max_output_tokens=1024, profile=profile.name)
    return ChatModel(card=card, engine=None, template=ChatTemplate(source),  # type: ignore[arg-type]
                     profile=profile, signer=Signer(b"s"))


def request(thinking: Thinking | None) -> ChatRequest:
    return ChatRequest(model="coder", tools=[READ], thinking=thinking,
                       messages=[Message("user", [TextPart("Read notes.txt")])])


def test_the_template_renders_tools_but_knows_no_reasoning():
    profile = detect_profile(CODER)
    assert profile.native_tools and not profile.native_reasoning


def test_adaptive_thinking_opens_no_reasoning_section():
    text, opens_thinking = model().render(request(Thinking(2048, "omitted", adaptive=True)))
    assert not opens_thinking
    assert text.endswith("<|im_start|>assistant\n") and "<think>" not in text
    # the same prompt as without thinking: one cached prefix for both
    assert text == model().render(request(None))[0]


def test_thinking_with_a_budget_still_gets_the_reasoning_scaffold():
    text, opens_thinking = model().render(request(Thinking(2048)))
    assert opens_thinking and text.endswith("<|im_start|>assistant\n<think>\n")


def test_a_template_that_knows_neither_keeps_the_scaffold_for_adaptive_thinking():
    assert not detect_profile(PLAIN).native_tools
    text, opens_thinking = model(PLAIN).render(
        request(Thinking(2048, "omitted", adaptive=True)))
    assert opens_thinking and text.endswith("<|im_start|>assistant\n<think>\n")


def test_the_anthropic_adaptive_type_is_adaptive_and_enabled_is_not():
    body = {"model": "m", "max_tokens": 8000, "messages": [{"role": "user", "content": "Hi"}]}
    adaptive, _ = decode_messages_request({**body, "thinking": {"type": "adaptive"}})
    enabled, _ = decode_messages_request(
        {**body, "thinking": {"type": "enabled", "budget_tokens": 2048}})
    assert adaptive.thinking is not None and adaptive.thinking.adaptive
    assert enabled.thinking is not None and not enabled.thinking.adaptive


# a template that knows reasoning (Qwen3's kind) and one that opens the section itself
OPENS = PLAIN.replace("<|im_start|>assistant\n{% endif %}",
                      "<|im_start|>assistant\n<think>\n{% endif %}") + \
    "{# enable_thinking #}"


def test_adaptive_thinking_on_a_reasoning_template_leaves_the_decision_to_the_model():
    chat = model(NATIVE)
    chat.engine = ByteEngine()  # type: ignore[assignment]  # a stand-in: tokens only
    prompt = chat.prompt(request(Thinking(2048, adaptive=True)))
    assert not prompt.opens_thinking and prompt.model_decides
    assert not prompt.text.rstrip().endswith("<think>")


def test_thinking_with_a_budget_on_a_reasoning_template_starts_inside_the_section():
    chat = model(NATIVE)
    chat.engine = ByteEngine()  # type: ignore[assignment]  # a stand-in: tokens only
    prompt = chat.prompt(request(Thinking(2048)))
    assert prompt.opens_thinking and not prompt.model_decides


def test_adaptive_thinking_on_a_template_that_opens_the_section_starts_inside_it():
    assert detect_profile(OPENS).native_reasoning
    chat = model(OPENS)
    chat.engine = ByteEngine()  # type: ignore[assignment]  # a stand-in: tokens only
    prompt = chat.prompt(request(Thinking(2048, adaptive=True)))
    assert prompt.opens_thinking and not prompt.model_decides


class ByteEngine:
    """Only what ``ChatModel.prompt`` asks of an engine: its tokens."""

    def tokenize(self, text: str, add_special: bool = False) -> list[int]:
        return list(text.encode())
