"""The embedded llama.cpp engine on the real default model, without HTTP."""

from __future__ import annotations

import asyncio

import pytest

from b3os_infer.config import EngineConfig, LlamacppModel
from b3os_infer.core import ChatRequest, Message, Sampling, TextPart
from b3os_infer.engine.base import GenerationDone, GenerationRequest, TokenEvent
from support.engines import loaded_gguf


@pytest.fixture(scope="module")
def model():
    # a fixed budget, not a share of this machine's memory: two lanes on every machine
    chat = loaded_gguf(LlamacppModel(), EngineConfig(parallel=4, kv_memory_mib=2560),
                           b"test-secret")
    asyncio.run(chat.engine.start())
    yield chat
    asyncio.run(chat.engine.close())


def prompt(model, text: str) -> list[int]:
    request = ChatRequest(model="m", messages=[Message("user", [TextPart(text)])])
    return model.prompt(request).tokens


async def collect(engine, request):
    texts, done = [], None
    async for event in engine.generate(request):
        if isinstance(event, TokenEvent):
            texts.append(event.text)
        else:
            done = event
    return "".join(texts), done


def test_template_comes_from_the_gguf(model):
    text, opens_thinking = model.render(ChatRequest(model="m",
                                                    messages=[Message("user", [TextPart("Hi")])]))
    assert not opens_thinking
    assert "<|im_start|>user\nHi<|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")


def test_max_tokens_ends_with_length(model):
    request = GenerationRequest(prompt(model, "Count to ten."), max_tokens=5,
                                sampling=Sampling(temperature=0))  # sampled, it may end early
    _, done = asyncio.run(collect(model.engine, request))
    assert isinstance(done, GenerationDone)
    assert (done.reason, done.generated_tokens) == ("length", 5)


def test_more_requests_than_slots_all_finish(model):
    async def many():
        requests = [GenerationRequest(prompt(model, f"Say a word about number {i}."),
                                      max_tokens=12, sampling=Sampling(temperature=0))
                    for i in range(7)]
        return await asyncio.gather(*(collect(model.engine, r) for r in requests))

    results = asyncio.run(many())
    assert len(results) == 7
    assert all(isinstance(done, GenerationDone) and done.generated_tokens >= 1
               for _, done in results)


def test_greedy_repeats_the_whole_reply_and_its_usage(model):
    def greedy() -> tuple[str, GenerationDone]:
        request = GenerationRequest(prompt(model, "Tell a long story about a lighthouse."),
                                    max_tokens=64, sampling=Sampling(temperature=0))
        return asyncio.run(collect(model.engine, request))

    # the first run leaves the prompt's KV in a slot; the compared two both start from it,
    # as logits computed from a freshly processed prompt may differ in the last bits
    greedy()
    (first, first_done), (second, second_done) = greedy(), greedy()
    assert first_done.generated_tokens >= 32, "long enough for a drift to show"
    assert second == first
    assert second_done == first_done   # reason, prompt, cached and generated token counts


def test_closing_a_stream_frees_its_slot(model):
    async def abandon():
        stream = model.engine.generate(GenerationRequest(prompt(model, "Tell a long story."),
                                                         max_tokens=2000))
        async for _ in stream:
            break
        await stream.aclose()
        for _ in range(100):
            load = model.engine.load()
            if (load["active"], load["waiting"]) == (0, 0):
                return True
            await asyncio.sleep(0.05)
        return False

    assert asyncio.run(abandon())


def test_seeded_sampling_repeats(model):
    def once():
        request = GenerationRequest(prompt(model, "Invent a name."), max_tokens=8,
                                    sampling=Sampling(temperature=1.0, seed=1234))
        return asyncio.run(collect(model.engine, request))[0]

    assert once() == once()


def test_logprobs_are_the_models_distribution_and_greedy_takes_the_best(model):
    async def run():
        request = GenerationRequest(prompt(model, "Name a colour."), max_tokens=6,
                                    sampling=Sampling(temperature=0), top_logprobs=3)
        return [e async for e in model.engine.generate(request) if isinstance(e, TokenEvent)]

    events = asyncio.run(run())
    assert len(events) == 6
    for event in events:
        assert event.logprob is not None and event.logprob <= 0.0
        assert len(event.top) == 3
        scores = [lp for _, lp in event.top]
        assert scores == sorted(scores, reverse=True)
        # greedy: the chosen token is the most likely one
        assert event.top[0][0] == event.token
        assert abs(event.top[0][1] - event.logprob) < 1e-9


def test_frequency_penalty_changes_a_repetitive_greedy_reply(model):
    def run(penalty: float) -> str:
        request = GenerationRequest(
            prompt(model, "Repeat after me exactly: go go go go go go go go go go go go"),
            max_tokens=40, sampling=Sampling(temperature=0, frequency_penalty=penalty))
        return asyncio.run(collect(model.engine, request))[0]

    plain, penalised = run(0.0), run(2.0)
    assert plain.count("go") > penalised.count("go")


def test_a_running_sequence_shares_its_prefix_with_a_new_one(model):
    """B arrives while A (same long document, another question) is still generating:
    B's prompt prefix is copied from A's KV, and B's next-token distribution is the one
    it has when computed alone.

    Compared as distributions, not greedy text: with an f16 KV, llama.cpp attends over a
    single decoding sequence with another kernel (split over the KV) than over several,
    so the last bits differ with what else runs, and a near tie may tip (docs/engine.md).
    A wrong copy would change the distribution itself."""
    document = " ".join(f"line {i}: the harbor lantern signal." for i in range(40))

    def request(question: str) -> GenerationRequest:
        return GenerationRequest(prompt(model, f"{document}\n\n{question}"), max_tokens=1,
                                 sampling=Sampling(temperature=0), top_logprobs=5)

    async def together():
        first = model.engine.generate(GenerationRequest(
            prompt(model, f"{document}\n\nTell a long story."), max_tokens=400))
        async for event in first:
            if isinstance(event, TokenEvent):
                break  # A is decoding now, its prompt all in KV
        seated = []
        async for event in model.engine.generate(request("Which line is first?")):
            seated.append(event)
        await first.aclose()
        return seated

    events = asyncio.run(together())
    done = events[-1]
    assert isinstance(done, GenerationDone)
    assert done.cached_tokens > 300, "the shared document came from the running sequence"
    # B's own slot holds the copy: drop it (the engine is idle), so B is seated again from
    # A's slot, whose document was computed, not copied, and computes its question itself
    forget_slots_holding(model, request("Which line is first?").prompt)
    model_free = asyncio.run(anext_token(model, request("Which line is first?")))
    copied = next(e for e in events if isinstance(e, TokenEvent))
    # the copy's three likeliest tokens are among the five of the computed prefix, with
    # the same log-probabilities to within rounding (a near tie may swap neighbours)
    computed = dict(model_free.top)
    for token, logprob in copied.top[:3]:
        assert token in computed, (token, copied.top, model_free.top)
        assert abs(logprob - computed[token]) < 0.05, (token, logprob, computed[token])


def forget_slots_holding(model, tokens: list[int]) -> None:
    for lane in model.engine.lanes:
        for slot in lane.slots:
            if not slot.busy and slot.tokens[:len(tokens)] == tokens:
                lane.forget(slot)


async def anext_token(model, request: GenerationRequest) -> TokenEvent:
    async for event in model.engine.generate(request):
        if isinstance(event, TokenEvent):
            return event
    raise AssertionError("no token")


def test_a_short_shared_prefix_is_counted_as_input_not_as_cached(model):
    """Two chats share only the template's first tokens (its system prompt, under 64
    tokens): the second reads them from the KV, yet reports no cached tokens."""
    first = GenerationRequest(prompt(model, "Say hi."), max_tokens=2,
                              sampling=Sampling(temperature=0))
    second = GenerationRequest(prompt(model, "Say bye."), max_tokens=2,
                               sampling=Sampling(temperature=0))
    shared = next(i for i, (a, b) in enumerate(zip(first.prompt, second.prompt, strict=False))
                  if a != b)
    assert 0 < shared < model.engine.settings.min_reported_cache
    asyncio.run(collect(model.engine, first))
    _, done = asyncio.run(collect(model.engine, second))
    assert isinstance(done, GenerationDone) and done.cached_tokens == 0
    assert done.prompt_tokens == len(second.prompt)


def test_the_same_prompt_again_samples_from_the_logits_it_left(model):
    """A prompt repeated with no decode in between is answered from the logits the first
    request left (they stay usable while nothing else is decoded), and answers the same;
    the last prompt token still counts as input."""
    request = GenerationRequest(prompt(model, "Name a colour. " * 30), max_tokens=1,
                                sampling=Sampling(temperature=0), top_logprobs=2)

    async def three_times() -> list[list[object]]:
        runs = []
        for _ in range(3):
            runs.append([event async for event in model.engine.generate(request)])
        return runs

    runs = asyncio.run(three_times())
    tokens = [next(e for e in run if isinstance(e, TokenEvent)) for run in runs]
    assert len({(t.token, t.logprob, t.top) for t in tokens}) == 1
    for run in runs[1:]:
        done = run[-1]
        assert isinstance(done, GenerationDone)
        assert done.cached_tokens == len(request.prompt) - 1 and done.generated_tokens == 1
    # the row is still there for a fourth, in the lane the prompt went to (another lane's
    # rows are its own context's, valid until that lane decodes again)
    [(lane, slot)] = [(lane, slot) for lane in model.engine.lanes for slot in lane.slots
                      if slot.tokens == request.prompt]
    assert list(lane.live_logits) == [slot.index]


def test_a_grammar_that_cannot_be_built_is_refused_at_once_on_an_idle_engine(model):
    """Refused at admission with nothing else running: the refusal leaves at once, it does
    not wait for some later decode step."""
    from b3os_infer.engine.base import Grammar
    from b3os_infer.errors import InvalidRequest

    request = GenerationRequest(prompt(model, "Hi."), max_tokens=4,
                                grammar=Grammar("root ::= undefined-rule"))

    async def refused() -> None:
        with pytest.raises(InvalidRequest, match="grammar"):
            await asyncio.wait_for(collect(model.engine, request), timeout=0.4)

    asyncio.run(refused())


def test_kv_usage_counts_the_tokens_a_running_sequence_holds(model):
    from b3os_infer.engine.base import kv_usage

    tokens = prompt(model, "Tell me about rivers.")

    async def during():
        events = model.engine.generate(GenerationRequest(tokens, max_tokens=4))
        async for event in events:
            if isinstance(event, TokenEvent):
                usage = kv_usage(model.engine)
                await events.aclose()
                return usage
        return None

    usage = asyncio.run(during())
    assert usage is not None
    # every lane's slots: here 4 short ones and 2 of the whole window (engine/kv_cache.py)
    assert usage.capacity == sum(lane.tokens() for lane in model.engine.plan.lanes)
    assert len(model.engine.plan.lanes) == 2
    assert len(tokens) <= usage.used <= usage.capacity
    assert 0 < usage.fraction <= 1
