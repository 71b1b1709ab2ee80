"""simonw's `llm` with its defaults: the Chat Completions model from its
`extra-openai-models.yaml` config, and the `llm-anthropic` plugin, which registers the
server's models from the listing that `llm anthropic refresh` saves (and, as the listing
says the model can think, asks for adaptive thinking on every prompt).

The set-up is the user's, through the `llm` command (`llm keys set`, `llm anthropic
refresh`); the flows run through llm's Python API, which is what the command runs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import llm
import pytest

from support.client_matrix import MATRIX

pytestmark = pytest.mark.usefixtures("client_garbage")

OPENAI_ID = "b3os-openai"
APIS = ["openai", "anthropic"]


def llm_command(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "llm", *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def configured(served, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An llm user directory set up for both APIs."""
    home = tmp_path_factory.mktemp("llm")
    patch = pytest.MonkeyPatch()
    patch.setenv("LLM_USER_PATH", str(home))
    patch.setenv("ANTHROPIC_BASE_URL", served.base_url)
    (home / "extra-openai-models.yaml").write_text(
        f"- model_id: {OPENAI_ID}\n  model_name: {served.model}\n"
        f"  api_base: {served.base_url}\n  api_key_name: b3os\n  supports_tools: true\n")
    llm_command("keys", "set", "b3os", "--value", served.key)
    llm_command("keys", "set", "anthropic", "--value", served.key)
    assert "Added models: " + served.model in llm_command("anthropic", "refresh")
    yield home
    patch.undo()


def model(served, api: str) -> llm.Model:
    return llm.get_model(OPENAI_ID if api == "openai" else served.model)


@pytest.mark.parametrize("api", APIS)
def test_llm_prompt_returns_the_models_answer(served, configured, api):
    response = model(served, api).prompt(MATRIX.text_prompt, stream=False)
    assert response.text() == MATRIX.text_answer


@pytest.mark.parametrize("api", APIS)
def test_llm_streamed_prompt_arrives_in_chunks_that_join_to_the_answer(served, configured,
                                                                      api):
    chunks = list(model(served, api).prompt(MATRIX.stream_prompt))
    assert "".join(chunks) == MATRIX.stream_answer and len(chunks) > 1


@pytest.mark.parametrize("api", APIS)
def test_llm_chain_runs_the_tool_and_answers_from_its_result(served, configured, api):
    def get_weather(city: str) -> str:
        """The current weather in a city."""
        return MATRIX.weather(city)

    responses = list(model(served, api).chain(MATRIX.tool_prompt, tools=[get_weather])
                     .responses())
    assert [(c.name, c.arguments) for c in responses[0].tool_calls()] == \
        [("get_weather", {"city": "Paris"})]
    results = [result.output for response in responses
               for result in response.prompt.tool_results]
    assert results == [MATRIX.weather("Paris")]
    # the answer is the last response's text (llm-anthropic adds a space of its own after a
    # tool call, for display, to the first)
    assert (len(responses), responses[-1].text()) == (2, MATRIX.tool_answer)
