"""Building the chat models a node serves from its configuration."""

from __future__ import annotations

from pathlib import Path

from ..config import EngineConfig, ModelConfig
from ..engine.llamacpp import LlamaCppEngine, LlamaCppSettings
from .chat import ChatModel
from .chat_template import ChatTemplate
from .models import Capabilities, ModelCard, default_model_path
from .profiles import detect_profile
from .signatures import Signer

# SmolLM2 was trained on 8,192 tokens; Claude Code's first request alone is about 12,000,
# so the embedded default serves 32,768 with YaRN rope scaling (the listing says both).
DEFAULT_MODEL_WINDOW = 32768


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
    source = llama.metadata("tokenizer.chat_template")
    if not source:
        raise ValueError(f"{path} has no chat template in its metadata "
                         "(tokenizer.chat_template)")
    template = ChatTemplate(source, bos_token=llama.token_text(llama.bos_token_id),
                            eos_token=llama.token_text(llama.eos_token_id))
    window = llama.info.context_window
    trained = llama.trained_window
    profile = detect_profile(source)
    capabilities = Capabilities(tools=True, thinking=True, vision=False,
                                structured_output=True)
    card = ModelCard(id=model.id, display_name=model.display_name, kind="chat",
                     context_window=window, max_output_tokens=window,
                     capabilities=capabilities, profile=profile.name,
                     trained_context_window=trained)
    return ChatModel(card=card, engine=llama, template=template, profile=profile,
                     signer=Signer(secret))
