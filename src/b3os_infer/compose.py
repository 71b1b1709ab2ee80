"""The composition root: the chat and embedding models a node serves, built from its configuration.

Here, and only here, engines, tokenizers and grammar compilers meet the node.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import assert_never

from .config import (
    BertModel,
    ChatModelConfig,
    Config,
    EngineConfig,
    Home,
    LlamacppModel,
    ModelBasics,
    ModelConfig,
    ScriptedModel,
    UpstreamModel,
    kv_budget,
)
from .engine.base import Engine, EngineInfo, GrammarCompiler
from .engine.embedding.sentence import SentenceEmbedder
from .engine.llamacpp import LlamaCppEngine, LlamaCppSettings
from .engine.llamacpp.devices import Placement, device_name, gpu_backend, gpu_offload
from .engine.llamacpp.gbnf import GbnfCompiler
from .engine.llamacpp.gguf import GgufTokenizer
from .engine.scripted.engine import ScriptedEngine
from .engine.scripted.script import load_script
from .engine.tokenizer import Tokenizer
from .engine.upstream.engine import UpstreamEngine, UpstreamSettings
from .engine.upstream.hf_tokenizer import HfTokenizer
from .node.cards import (
    DEFAULT_EMBEDDING_NAME,
    DEFAULT_MODEL_NAME,
    Capabilities,
    ModelCard,
    default_embedding_path,
    default_model_path,
    max_output_tokens,
)
from .node.chat_model import ChatModel
from .node.chat_template import ChatTemplate
from .node.embedding import EmbeddingCard, EmbeddingModel, InputType
from .node.lifecycle import Keeper, OnDemandEngine, Residency, file_bytes
from .node.profiles import ModelProfile, detect_profile
from .node.registry import ModelRegistry
from .node.server_tools.fetch import FetchSettings, WebFetcher
from .node.server_tools.searxng import SearxngBackend
from .node.server_tools.tool_run import ServerTools
from .node.signatures import Signer
from .packs import installed_gguf

# SmolLM2 was trained on 8,192 tokens; Claude Code's first request alone is about 12,000,
# so the embedded default serves 32,768 with YaRN rope scaling (the listing says both).
DEFAULT_MODEL_WINDOW = 32768
# listed for a GGUF that names no trained window until its load says what it serves
UNKNOWN_WINDOW = 4096


class UnreadableModel(RuntimeError):
    """A model file that is there and that llama.cpp cannot read."""


def register(registry: ModelRegistry, model: ModelConfig, engine: EngineConfig,
             secret: bytes, *, cache_dir: Path | None = None) -> None:
    """Add one configured model to the registry under its kind (a GGUF is read, not
    loaded: it loads on its first request, or at start with ``preload``)."""
    if isinstance(model, BertModel):
        registry.add_embedding(load_embedding_model(model))
        return
    try:
        chat = load_model(model, engine, secret, cache_dir=cache_dir, keeper=registry.keeper)
    except UnreadableModel as exc:
        registry.add_unreadable(model.id, str(exc))
        return
    registry.add(chat, preload=model.preload)


def load_embedding_model(model: BertModel) -> EmbeddingModel:
    """A sentence-transformers directory (default: the embedded all-MiniLM-L6-v2)."""
    directory = Path(model.path) if model.path else default_embedding_path()
    if not (directory / "model.safetensors").is_file():
        raise FileNotFoundError(f"{directory}: no model.safetensors (a sentence-transformers "
                                "directory is expected)")
    embedder = SentenceEmbedder(directory)
    info = embedder.info
    name = model.display_name or (DEFAULT_EMBEDDING_NAME if not model.path else directory.name)
    card = EmbeddingCard(id=model.id, display_name=name, dimensions=info.dimensions,
                         max_input_tokens=info.max_input_tokens)
    prefixes: dict[InputType, str] = {}
    if model.query_prefix:
        prefixes["query"] = model.query_prefix
    if model.document_prefix:
        prefixes["document"] = model.document_prefix
    return EmbeddingModel(card, embedder, prefixes)


def load_model(model: ChatModelConfig, engine: EngineConfig, secret: bytes, *,
               cache_dir: Path | None = None, keeper: Keeper | None = None) -> ChatModel:
    """``cache_dir``: where the embedded engine saves long prefixes (None: nowhere);
    ``keeper``: the node's bounds on loaded models (default: a keeper of its own)."""
    match model:
        case UpstreamModel():
            return load_upstream_model(model, secret)
        case ScriptedModel():
            return load_scripted_model(model, secret)
        case LlamacppModel():
            return load_gguf_model(model, engine, secret, cache_dir=cache_dir, keeper=keeper)
        case _:
            assert_never(model)


def load_tokenizer(source: str) -> Tokenizer:
    path = Path(source)
    if path.is_dir():
        return HfTokenizer(path)
    if path.is_file():
        return GgufTokenizer(path)
    raise FileNotFoundError(f"tokenizer not found: {source} (a GGUF file or a Hugging Face "
                            "tokenizer directory)")


def gguf_path(model: LlamacppModel) -> Path:
    """The model's GGUF: its path, its installed pack, else the embedded default."""
    if model.path:
        return Path(model.path)
    if model.pack:
        return installed_gguf(model.pack, Home.resolve().models)
    return default_model_path()


def load_gguf_model(model: LlamacppModel, engine: EngineConfig, secret: bytes, *,
                    cache_dir: Path | None = None, keeper: Keeper | None = None) -> ChatModel:
    """A GGUF on the embedded engine, loaded on its first request (node/lifecycle.py):
    its vocabulary, chat template and name are read now, without the weights."""
    path = gguf_path(model)
    embedded = not (model.path or model.pack)
    if not path.is_file():
        raise FileNotFoundError(f"model file not found: {path}")
    try:
        vocabulary = GgufTokenizer(path)
    except RuntimeError as exc:   # damaged or truncated, or not a GGUF
        raise UnreadableModel(f"{path}: {exc}") from exc
    info = vocabulary.info
    window = model.context_window or (DEFAULT_MODEL_WINDOW if embedded else None)
    settings = _llama_settings(path, window, engine, cache_dir)
    placement = settings.placement
    on_demand = OnDemandEngine(
        model.id, lambda: LlamaCppEngine(settings), vocabulary,
        EngineInfo(context_window=window or info.trained_window or UNKNOWN_WINDOW,
                   vocab_size=info.vocab_size, description="llama.cpp, not loaded yet",
                   applies_grammars=True,
                   device=device_name(placement, gpu_offload(), gpu_backend())),
        keeper or Keeper(), Residency(model.keep_alive, file_bytes(path)))
    template = ChatTemplate(_template_source(info.chat_template, path),
                            bos_token=info.bos_token, eos_token=info.eos_token)
    name = model.display_name or (DEFAULT_MODEL_NAME if embedded else info.name or path.stem)
    chat = _chat_model(model, name, on_demand, template, secret, trained=info.trained_window)
    on_demand.on_loaded(lambda served: _served_card(chat, model, served))
    return chat


def _llama_settings(path: Path, window: int | None, engine: EngineConfig,
                    cache_dir: Path | None) -> LlamaCppSettings:
    return LlamaCppSettings(
        model_path=str(path),
        n_threads=engine.threads,
        parallel=engine.parallel,
        batch_tokens=engine.batch_tokens,
        context_window=window,
        kv_type=engine.kv_type,
        flash_attention=engine.flash_attention,
        kv_budget=kv_budget(engine),
        long_slots=engine.long_slots,
        placement=Placement(engine.gpu_layers, engine.main_gpu, tuple(engine.tensor_split)),
        disk_cache=cache_dir,
        disk_budget_bytes=engine.prefix_cache_mib << 20,
        disk_min_tokens=engine.prefix_cache_min_tokens,
        speculative=engine.speculative,
        draft_pool_tokens=engine.draft_pool_tokens,
    )


def _served_card(chat: ChatModel, model: ModelBasics, served: EngineInfo) -> None:
    """The card after a load: the window the KV plan gave, and the device."""
    chat.card = replace(chat.card, context_window=served.context_window,
                        max_output_tokens=max_output_tokens(served.context_window,
                                                            model.max_output_tokens),
                        device=served.device)


def load_upstream_model(model: UpstreamModel, secret: bytes) -> ChatModel:
    """A model served by an engine over HTTP; its tokenizer and template live here."""
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
    name = model.display_name or info.name or model.id
    return _chat_model(model, name, engine, template, secret, trained=info.trained_window)


def load_scripted_model(model: ScriptedModel, secret: bytes) -> ChatModel:
    """A model that answers from a script (tests, demos); see docs/scripted-engine.md."""
    return scripted_model(model, ScriptedEngine(load_script(Path(model.script))), secret)


def scripted_model(model: ModelBasics, engine: ScriptedEngine, secret: bytes) -> ChatModel:
    """A chat model answered by ``engine``: only the keys every model has are read."""
    template = ChatTemplate(engine.chat_template, bos_token=engine.bos_token,
                            eos_token=engine.eos_token)
    return _chat_model(model, model.display_name or model.id, engine, template, secret,
                       trained=None)


def _template_source(source: str | None, where: Path) -> str:
    if not source:
        raise ValueError(f"{where} has no chat template (GGUF metadata "
                         "tokenizer.chat_template, or chat_template in tokenizer_config.json)")
    return source


def capabilities(profile: ModelProfile, engine: Engine) -> Capabilities:
    """What the profile and the engine really do: tools and thinking run on every profile
    (natively or through our generic prompt); grammars only where the engine applies them."""
    return Capabilities(
        tools=True, thinking=True, vision=False,
        structured_output=engine.info.applies_grammars,
        tool_calling="native" if profile.native_tools else "generic",
        reasoning_format="native" if profile.native_reasoning else "generic")


def _grammars(engine: Engine) -> GrammarCompiler | None:
    return GbnfCompiler() if engine.info.applies_grammars else None


def _chat_model(model: ModelBasics, name: str, engine: Engine, template: ChatTemplate,
                secret: bytes, *, trained: int | None) -> ChatModel:
    window = engine.info.context_window
    profile = detect_profile(template.source)
    card = ModelCard(id=model.id, display_name=name, kind=model.kind,
                     context_window=window,
                     max_output_tokens=max_output_tokens(window, model.max_output_tokens),
                     default_output_tokens=model.default_output_tokens,
                     capabilities=capabilities(profile, engine), profile=profile.name,
                     trained_context_window=trained, device=engine.info.device)
    return ChatModel(card=card, engine=engine, template=template, profile=profile,
                     signer=Signer(secret), grammars=_grammars(engine))


def server_tools(config: Config) -> ServerTools:
    """The server-tool service the config describes: a search backend where
    ``[web_search]`` names one, the fetcher where ``[web_fetch]`` enables it."""
    search, fetch = config.web_search, config.web_fetch
    backend = SearxngBackend(search.url, timeout_s=search.timeout_seconds,
                             language=search.language or None) \
        if search.backend == "searxng" else None
    fetcher = WebFetcher(FetchSettings(
        max_bytes=fetch.max_bytes, timeout_s=fetch.timeout_seconds,
        max_redirects=fetch.max_redirects, allow_networks=tuple(fetch.allow_networks))) \
        if fetch.enabled else None
    return ServerTools(backend, fetcher, max_results=search.max_results,
                       max_steps=config.server_tools.max_steps)
