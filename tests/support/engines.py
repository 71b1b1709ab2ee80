"""The embedded engine itself, for tests that drive it without the node's lifecycle."""

from __future__ import annotations

import asyncio
from typing import Any

from b3os_infer.compose import load_gguf_model
from b3os_infer.node.chat_model import ChatModel
from b3os_infer.node.lifecycle import OnDemandEngine


def loaded_gguf(*args: Any, **kwargs: Any) -> ChatModel:
    """``load_gguf_model(...)`` with its weights loaded now and the loaded engine in place
    of the on-demand one, so a test reads its plan, lanes and caches directly."""
    chat = load_gguf_model(*args, **kwargs)
    assert isinstance(chat.engine, OnDemandEngine)
    chat.engine = asyncio.run(chat.engine.ensure_loaded())
    return chat


async def loading_gguf(*args: Any, **kwargs: Any) -> ChatModel:
    """``loaded_gguf`` inside a running event loop."""
    chat = load_gguf_model(*args, **kwargs)
    assert isinstance(chat.engine, OnDemandEngine)
    chat.engine = await chat.engine.ensure_loaded()
    return chat
