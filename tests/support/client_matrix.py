"""The third-party client matrix (docs/clients.md): what each client asks, and what the
scripted engine answers.

Every client runs three flows on each API it speaks: a text reply, a streamed reply and a
tool round trip (the model calls ``get_weather``, the client runs it and sends the result
back, the model answers from it). The replies are keyed on the prompts, so whatever system
prompt or tool wording a client adds, each flow gets its own answer.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from support.scripted_server import ScriptedServer, scripted_server

TOOL = "get_weather"
TOOL_DESCRIPTION = "The current weather in a city"


@dataclass(frozen=True)
class Matrix:
    text_prompt: str = "Say hello to the client matrix."
    text_answer: str = "Hello from the scripted model."
    stream_prompt: str = "Count to five, slowly."
    stream_answer: str = "One, two, three, four, five."
    tool_prompt: str = "What is the weather in Paris?"
    tool_result: str = "18 C and sunny"
    tool_answer: str = "It is 18 C and sunny in Paris."

    def weather(self, city: str) -> str:
        """What the clients' ``get_weather`` tool returns."""
        return f"{self.tool_result} in {city}"

    def as_json(self) -> str:
        return json.dumps(asdict(self))


MATRIX = Matrix()


def replies(matrix: Matrix = MATRIX) -> list[dict[str, object]]:
    """The script: a tool result is answered first, else each prompt gets its reply; the
    model answers without reasoning, as a model never trained to reason does."""
    call = {"name": TOOL, "arguments": {"city": "Paris"}}
    return [
        {"text": matrix.tool_answer, "repeat": True,
         "when": {"last_user_contains": matrix.tool_result}},
        {"text": f"<tool_call>\n{json.dumps(call)}\n</tool_call>", "repeat": True,
         "when": {"last_user_contains": matrix.tool_prompt}},
        {"text": matrix.text_answer, "repeat": True,
         "when": {"last_user_contains": matrix.text_prompt}},
        {"text": matrix.stream_answer, "repeat": True,
         "when": {"last_user_contains": matrix.stream_prompt}},
    ]


def matrix_server(root: Path) -> ScriptedServer:
    """The live server on the scripted engine with the matrix's script (not started)."""
    return scripted_server(root, replies())
