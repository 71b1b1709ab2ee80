"""The prompts: short chat turns, and long documents that do or do not share a prefix."""

from __future__ import annotations

import random

_WORDS = ("river harbor lantern granite orchard meadow signal copper ledger window "
          "valley thunder archive compass bridge falcon garden quarry ember spindle "
          "timber canyon beacon willow marble cobalt prairie saddle tundra voyage").split()


def story(index: int) -> list[dict[str, str]]:
    """A request that makes the model write at length; ``index`` varies the subject."""
    subject = _WORDS[index % len(_WORDS)]
    return [{"role": "user",
             "content": f"Write a long, detailed story about a {subject} keeper, "
                        "with many chapters."}]


def document(seed: int, words: int) -> str:
    """Reproducible filler text; different seeds share no prefix."""
    rng = random.Random(seed)
    lines = []
    for number in range(words // 12):
        lines.append(f"{seed}.{number}: " + " ".join(rng.choice(_WORDS) for _ in range(11)))
    return "\n".join(lines)


def about_document(text: str, question: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"{text}\n\nQuestion: {question}"}]


def short_question() -> list[dict[str, str]]:
    """A prompt long enough to be kept as a reusable prefix by both servers."""
    return about_document(document(7, 96), "Which word comes first?")
