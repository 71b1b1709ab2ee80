"""A chat model on the node: template, tokens, context checks, reasoning, tools, stops.

Both wire formats come here with a neutral ``ChatRequest``; streaming and
non-streaming replies are the same event stream, folded or not.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..core import (
    ChatRequest,
    NodeEvent,
    Sampling,
    ThinkingPart,
    TokenLogprob,
    Tool,
)
from ..engine.base import (
    Engine,
    GenerationRequest,
    Grammar,
    GrammarCompiler,
    ReasoningBudget,
    TokenEvent,
)
from ..errors import InvalidRequest, UnsupportedParameter
from ..observe.context import observed_reply
from ..stops import StopMatcher
from .cards import ModelCard
from .chat_template import ChatTemplate
from .decoding import TokenLoop
from .grammar import json_grammar, tool_call_grammar
from .output_cap import output_cap
from .profiles import THINK_CLOSE, THINK_END, THINK_OPEN, THINK_START, ModelProfile
from .prompting import PromptBuilder, template_tools
from .reply import ReplyParser
from .signatures import Signer


@dataclass(frozen=True)
class Prompt:
    text: str
    tokens: list[int]
    opens_thinking: bool
    # adaptive thinking and no section opened: the model may open one itself, or answer
    model_decides: bool = False


@dataclass
class ChatModel:
    card: ModelCard
    engine: Engine
    template: ChatTemplate
    profile: ModelProfile
    signer: Signer
    # None: the engine applies no grammars; tool calls run unconstrained, schemas are refused
    grammars: GrammarCompiler | None = None

    # ---- prompt --------------------------------------------------------------

    def _tools(self, request: ChatRequest) -> list[Tool]:
        """The tools the reply may call."""
        if request.tool_choice.mode == "none":
            return []
        return [t for t in request.tools if not t.withdrawn]

    def _listed_tools(self, request: ChatRequest) -> list[Tool]:
        """The tools in the list at the top of the prompt; a tool loaded mid-conversation
        is rendered where it was loaded instead."""
        if request.tool_choice.mode == "none":
            return []
        return [t for t in request.tools if not t.inline]

    def _verify_thinking(self, request: ChatRequest) -> None:
        for i, message in enumerate(request.messages):
            for j, part in enumerate(message.parts):
                if isinstance(part, ThinkingPart) and part.signature is not None and \
                        not self.signer.verify(part.thinking, part.signature):
                    raise InvalidRequest(
                        f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block",
                        code="invalid_signature", param=f"turns[{i}].content[{j}]")

    def render(self, request: ChatRequest) -> tuple[str, bool]:
        """The prompt text, and whether it leaves the reply inside a reasoning section."""
        if not request.messages:
            raise InvalidRequest("at least one message is required", param="turns")
        self._verify_thinking(request)
        tools = self._listed_tools(request)
        builder = PromptBuilder(self.profile,
                                tool_changes=request.tool_choice.mode != "none")
        turns = builder.turns(request, tools)
        extra: dict[str, Any] = {}
        if self.profile.native_reasoning:
            extra["enable_thinking"] = request.thinking is not None
        declared = template_tools(tools) if tools and self.profile.native_tools else None
        if turns and turns[-1]["role"] == "assistant":
            return self._render_prefill(turns, declared, extra), False
        text = self.template.render(turns, add_generation_prompt=True, tools=declared, **extra)
        if request.thinking is None:
            return text, False
        if self.profile.native_reasoning:
            # adaptive lets the model decide: where the template opened no section, the
            # model writes <think> itself when it reasons, or answers straight away
            return text, not request.thinking.adaptive or _opens_section(text)
        if request.thinking.adaptive and self.profile.native_tools:
            # a template that renders tools but knows no reasoning (Qwen2.5-Coder) is a
            # model trained to answer, as text or a <tool_call>, right after the generation
            # prompt; adaptive lets it decide, and it does not reason. A <think> scaffold
            # there is one it rarely closes: its answer, and any call in it, would end up
            # inside the reasoning block. (A template that knows neither, SmolLM2's, gets
            # our scaffold for both.)
            return text, False
        return text + THINK_OPEN, True

    def _render_prefill(self, turns: list[dict[str, Any]], tools: Any,
                        extra: dict[str, Any]) -> str:
        """Render so that the reply continues the final assistant message."""
        rendered = self.template.render(turns, add_generation_prompt=False, tools=tools,
                                        **extra)
        prefix = turns[-1].get("content") or ""
        cut = rendered.rfind(prefix) if prefix else -1
        if cut < 0:
            raise InvalidRequest("the final assistant message could not be continued with "
                                 "this model's chat template", param="turns")
        return rendered[: cut + len(prefix)]

    def prompt(self, request: ChatRequest) -> Prompt:
        text, opens_thinking = self.render(request)
        decides = request.thinking is not None and request.thinking.adaptive and \
            not opens_thinking
        return Prompt(text, self.engine.tokenize(text, add_special=False), opens_thinking,
                      model_decides=decides)

    def count_tokens(self, request: ChatRequest) -> int:
        return len(self.prompt(request).tokens)

    # ---- generation ------------------------------------------------------------

    def room(self, tokens: list[int], param: str = "turns") -> int:
        """Tokens left for the reply after the prompt, which must fit the window."""
        window = self.card.context_window
        if len(tokens) >= window:
            raise InvalidRequest(f"prompt is too long: {len(tokens)} tokens > "
                                 f"{window - 1} maximum", code="context_length_exceeded",
                                 param=param)
        return window - len(tokens)

    def _grammar(self, request: ChatRequest) -> Grammar | None:
        tools = self._tools(request)
        choice = request.tool_choice
        if tools:
            if choice.mode == "named":
                tools = [t for t in tools if t.name == choice.name]
            if self.grammars is None:
                return None
            return tool_call_grammar(self.grammars, tools, parallel=choice.parallel,
                                     lazy=choice.mode == "auto")
        if request.response_schema is None:
            return None
        if self.grammars is None:
            raise UnsupportedParameter(f"structured output is not available on "
                                       f"{self.card.id}: its engine applies no grammars",
                                       param="output_schema")
        return json_grammar(self.grammars, request.response_schema, param="output_schema")

    @cached_property
    def _think_close_tokens(self) -> list[int]:
        return self.engine.tokenize(THINK_CLOSE, add_special=False)

    def check_logit_bias(self, sampling: Sampling) -> None:
        vocab = self.engine.info.vocab_size
        for token, _ in sampling.logit_bias:
            if token >= vocab:
                raise InvalidRequest(f"logit_bias: token id {token} is not in this model's "
                                     f"vocabulary (0 to {vocab - 1})", param="logit_bias")

    def generation(self, request: ChatRequest, prompt: Prompt) -> GenerationRequest:
        room = self.room(prompt.tokens)
        self.check_logit_bias(request.sampling)
        reasoning = None
        if (prompt.opens_thinking or prompt.model_decides) and request.thinking is not None:
            reasoning = ReasoningBudget(
                budget=request.thinking.budget_tokens, end_marker=THINK_END,
                close_tokens=self._think_close_tokens,
                start_marker=THINK_START if prompt.model_decides else None)
        return GenerationRequest(prompt=prompt.tokens, max_tokens=min(self.cap(request), room),
                                 sampling=request.sampling, grammar=self._grammar(request),
                                 reasoning=reasoning, top_logprobs=request.top_logprobs)

    def scored(self, event: TokenEvent) -> TokenLogprob | None:
        """The event's log-probabilities for the reply, when it has them for a known token."""
        if event.logprob is None or event.token < 0:
            return None
        data = self.engine.token_bytes(event.token)
        top = tuple((piece.decode("utf-8", "replace"), piece, lp)
                    for piece, lp in ((self.engine.token_bytes(t), lp) for t, lp in event.top))
        return TokenLogprob(data.decode("utf-8", "replace"), data, event.logprob, top)

    def cap(self, request: ChatRequest) -> int:
        """The most the reply may write before the window's room bounds it."""
        return output_cap(request.max_tokens, self.card)

    @observed_reply("chat")
    async def stream(self, request: ChatRequest, prompt: Prompt | None = None
                     ) -> AsyncGenerator[NodeEvent, None]:
        """The reply as events (``decoding.py``); pass ``prompt`` when it was already
        counted."""
        prompt = prompt or self.prompt(request)
        generation = self.generation(request, prompt)
        omitted = request.thinking is not None and not request.thinking.shown
        tools = self._tools(request)
        parser = ReplyParser(
            thinking=prompt.opens_thinking, may_think=prompt.model_decides, tools=bool(tools),
            tool_names=frozenset(t.name for t in tools), show_thinking=not omitted,
            sign=lambda text: self.signer.sign(text, omitted=omitted))
        loop = TokenLoop(self.card.id, generation, self.cap(request), parser,
                         StopMatcher(request.stop),
                         self.scored if request.top_logprobs is not None else None)
        async with aclosing(loop.events(self.engine)) as events:
            async for event in events:
                yield event


def _opens_section(prompt: str) -> bool:
    """Whether the rendered prompt ends inside a reasoning section it opened itself."""
    return prompt.rstrip().endswith(THINK_START)


__all__ = ["ChatModel", "Prompt"]
