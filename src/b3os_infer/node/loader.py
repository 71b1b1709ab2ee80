"""Building the chat models a node serves from its configuration."""

from __future__ import annotations

from pathlib import Path

from ..config import EngineConfig, ModelConfig
from ..engine.base import Engine
from ..engine.llamacpp import LlamaCppEngine, LlamaCppSettings
from ..engine.script import load_script
from ..engine.scripted import ScriptedEngine
from ..engine.upstream import UpstreamEngine, UpstreamSettings
from .chat import ChatModel
from .chat_template import ChatTemplate
from .models import Capabilities, ModelCard, default_model_path
from .profiles import detect_profile
from .signatures import Signer
from .tokenizers import load_tokenizer

# SmolLM2 was trained on 8,192 tokens; Claude Code's first request alone is about 12,000,
# so the embedded default serves 32,768 with YaRN rope scaling (the listing says both).
DEFAULT_MODEL_WINDOW = 32768


def load_model(model: ModelConfig, engine: EngineConfig, secret: bytes) -> ChatModel:
    if model.engine == "upstream":
        return load_upstream_model(model, secret)
    if model.engine == "scripted":
        return load_scripted_model(model, secret)
    return load_gguf_model(model, engine, secret)


def load_gguf_model(model: ModelConfig, engine: EngineConfig, secret: bytes) -> ChatModel:
    path = Path(model.path) if model.path else default_model_path()
    window = model.context_window
    if window is None and not model.path:
        window = DEFAULT_MODEL_WINDOW
    if not path.is_file():
        raise FileNotFoundError(f"model file not found: {path}")
    llama = LlamaCppEngine(LlamaCppSettings(
        model_path=str(path),
        n_threads=engine.threads,
        parallel=engine.parallel,
        batch_tokens=engine.batch_tokens,
        context_window=window,
        kv_type=engine.kv_type,
    ))
    template = ChatTemplate(_template_source(llama.metadata("tokenizer.chat_template"), path),
                            bos_token=llama.token_text(llama.bos_token_id),
                            eos_token=llama.token_text(llama.eos_token_id))
    return _chat_model(model, llama, template, secret, trained=llama.trained_window)


def load_upstream_model(model: ModelConfig, secret: bytes) -> ChatModel:
    """A model served by an engine over HTTP; its tokenizer and template live here."""
    assert model.url and model.flavour and model.tokenizer
    tokenizer = load_tokenizer(model.tokenizer)
    info = tokenizer.info
    window = model.context_window or info.trained_window
    if window is None:
        raise ValueError(f"{model.id}: set context_window to what {model.url} serves")
    engine = UpstreamEngine(UpstreamSettings(
        url=model.url, flavour=model.flavour, served_name=model.served_name or model.id,
        context_window=window, api_key=model.api_key), tokenizer, info.vocab_size)
    template = ChatTemplate(_template_source(info.chat_template, Path(model.tokenizer)),
                            bos_token=info.bos_token, eos_token=info.eos_token)
    return _chat_model(model, engine, template, secret, trained=info.trained_window)


def load_scripted_model(model: ModelConfig, secret: bytes) -> ChatModel:
    """A model that answers from a script (for tests and demos); see engine/script.py."""
    assert model.script
    return scripted_model(model, ScriptedEngine(load_script(Path(model.script))), secret)


def scripted_model(model: ModelConfig, engine: ScriptedEngine, secret: bytes) -> ChatModel:
    template = ChatTemplate(engine.chat_template, bos_token=engine.bos_token,
                            eos_token=engine.eos_token)
    return _chat_model(model, engine, template, secret, trained=None)


def _template_source(source: str | None, where: Path) -> str:
    if not source:
        raise ValueError(f"{where} has no chat template (GGUF metadata "
                         "tokenizer.chat_template, or chat_template in tokenizer_config.json)")
    return source


def _chat_model(model: ModelConfig, engine: Engine, template: ChatTemplate, secret: bytes,
                *, trained: int | None) -> ChatModel:
    window = engine.info.context_window
    profile = detect_profile(template.source)
    capabilities = Capabilities(tools=True, thinking=True, vision=False,
                                structured_output=engine.info.applies_grammars)
    card = ModelCard(id=model.id, display_name=model.display_name, kind=model.kind,
                     context_window=window, max_output_tokens=window,
                     capabilities=capabilities, profile=profile.name,
                     trained_context_window=trained)
    return ChatModel(card=card, engine=engine, template=template, profile=profile,
                     signer=Signer(secret))
