"""Where the tool prompt is ours (the generic profile), tools come before the system text."""

from __future__ import annotations

from b3os_infer.core import ChatRequest, Message, TextPart, Tool
from b3os_infer.engine.llamacpp.prefix import common_prefix
from b3os_infer.node.profiles import ModelProfile
from b3os_infer.node.prompting import PromptBuilder

PATH = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS = [Tool("Read", "Read a file.", PATH), Tool("Bash", "Run a command.", {"type": "object"})]


def system_text(system: str, profile: ModelProfile) -> str:
    request = ChatRequest(model="m", messages=[Message("user", [TextPart("hi")])], system=system)
    text = PromptBuilder(profile).system_text(request, TOOLS)
    assert text is not None
    return text


def test_the_generic_tool_block_precedes_the_system_text():
    text = system_text("You work in /home/ana/shop.", ModelProfile(False, False))
    assert text.index("<tools>") < text.index("/home/ana/shop")
    assert text.startswith("# Tools")


def test_sessions_in_two_directories_share_the_whole_generic_tool_block():
    generic = ModelProfile(False, False)
    first = system_text("Primary working directory: /home/ana/shop", generic)
    second = system_text("Primary working directory: /srv/blog", generic)
    assert common_prefix([ord(c) for c in first], [ord(c) for c in second]) > \
        first.index("</tools>")


def test_a_template_that_renders_tools_itself_gets_only_the_system_text():
    assert system_text("Be brief.", ModelProfile(True, False)) == "Be brief."
