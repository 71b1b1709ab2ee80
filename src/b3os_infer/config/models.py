"""``[model]`` and ``[[models]]``: one served model, as one model per engine. The keys every
model has are ``ModelBasics``; each engine adds the keys it reads (``LlamacppModel``,
``UpstreamModel``, ``ScriptedModel``, ``BertModel``), so a key another engine reads is refused
rather than ignored. ``engine`` picks the model (unset: ``bert`` for ``kind = "embedding"``,
else ``llamacpp``)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from ..engine.upstream.flavours import FLAVOURS
from ..node.cards import DEFAULT_EMBEDDING_ID, DEFAULT_MODEL_ID
from ..packs import CATALOGUE, model_id
from .section import Section, one_of

KINDS = {"chat": ("llamacpp", "upstream", "scripted"), "embedding": ("bert",)}
ENGINES = tuple(engine for engines in KINDS.values() for engine in engines)


class ModelBasics(Section):
    """The keys of every model, whatever serves it (in-process composition builds a chat
    model from these alone)."""

    KIND: ClassVar[str] = "chat"   # the kind this engine serves

    id: str = Field(default=DEFAULT_MODEL_ID, description="the id clients name it by (with a "
                    "pack and no id: b3os/<pack>)")
    display_name: str | None = Field(default=None, description="its name in the listing "
                                     "(unset: the GGUF's own name, else the file name)")
    kind: str = Field(default="chat", description="chat or embedding")
    context_window: int | None = Field(default=None, ge=1, description="the window served (unset: "
                                       "the model's own, bounded by the KV budget)")
    max_output_tokens: int | None = Field(default=None, ge=1, description="the most one reply may "
                                          "write; a larger max_tokens is lowered to it (unset: "
                                          "8192 or half the window, the lesser)")
    default_output_tokens: int | None = Field(default=None, ge=1, description="the cap of a "
                                              "reply whose request names none (unset: "
                                              "max_output_tokens, bounded by the room left "
                                              "in the window)")
    preload: bool = Field(default=True, description="load at start as well as on the first request")
    keep_alive: int = Field(default=300, ge=-1, description="idle seconds before it is unloaded "
                            "(-1: never; 0: as soon as it is idle)")

    @field_validator("kind")
    @classmethod
    def _kind_served(cls, value: str) -> str:
        if value not in KINDS:
            raise ValueError(f"{value!r} is not served; kinds: {', '.join(KINDS)}")
        if value != cls.KIND:
            article = "an" if value[0] in "aeiou" else "a"
            raise ValueError(f"{article} {value} model's engine should be one of "
                             f"{', '.join(KINDS[value])}")
        return value


class LlamacppModel(ModelBasics):
    """``engine = "llamacpp"``: a GGUF on the embedded llama.cpp (``[engine]`` sets how)."""

    engine: Literal["llamacpp"] = Field(default="llamacpp", description="the embedded llama.cpp")
    path: str | None = Field(default=None, description="the GGUF file (unset: the embedded "
                             "model)")
    pack: str | None = Field(default=None, description="an installed model pack (b3os-infer "
                             "models), in place of path")

    @model_validator(mode="before")
    @classmethod
    def _pack_names_the_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("pack"), str) and "id" not in data:
            return {**data, "id": model_id(data["pack"])}
        return data

    @field_validator("pack")
    @classmethod
    def _known_pack(cls, value: str | None) -> str | None:
        if value is not None and value not in CATALOGUE:
            raise ValueError(f"unknown pack {value!r}; known packs: {', '.join(CATALOGUE)}")
        return value

    @model_validator(mode="after")
    def _path_or_pack(self) -> LlamacppModel:
        if self.pack is not None and self.path:
            raise ValueError("use either path or pack, not both")
        return self


class UpstreamModel(ModelBasics):
    """``engine = "upstream"``: an engine reached over HTTP; its tokenizer and chat template
    are read here, so counting, tools and thinking behave as on the embedded engine."""

    engine: Literal["upstream"] = Field(default="upstream", description="an engine over HTTP")
    url: str = Field(description="its base URL, e.g. http://gpu1:8000")
    flavour: Annotated[str, one_of(FLAVOURS)] = Field(description="what serves it: "
                                                      + ", ".join(FLAVOURS))
    tokenizer: str = Field(description="a GGUF file or a Hugging Face tokenizer directory, for "
                           "its chat template and tokens")
    served_name: str | None = Field(default=None, description="the model name it expects "
                                    "(unset: id)")
    api_key: str | None = Field(default=None, description="sent as Authorization: Bearer")


class ScriptedModel(ModelBasics):
    """``engine = "scripted"``: answers from a script (docs/scripted-engine.md)."""

    engine: Literal["scripted"] = Field(default="scripted", description="a fake that answers "
                                        "from a script")
    script: str = Field(description="a JSON or TOML script, relative to the config file")


class BertModel(ModelBasics):
    """``engine = "bert"``: a sentence-transformers embedding model."""

    KIND: ClassVar[str] = "embedding"

    engine: Literal["bert"] = Field(default="bert", description="sentence-transformers embeddings")
    kind: str = Field(default="embedding", description="embedding")
    path: str | None = Field(default=None, description="a sentence-transformers directory "
                             "(unset: the embedded all-MiniLM-L6-v2)")
    query_prefix: str | None = Field(default=None, description='text put before each input of '
                                     'input_type "query"')
    document_prefix: str | None = Field(default=None, description="text put before each input "
                                        'of input_type "document"')


ChatModelConfig = LlamacppModel | UpstreamModel | ScriptedModel
ENGINE_MODELS: dict[str, type[ModelBasics]] = {
    "llamacpp": LlamacppModel, "upstream": UpstreamModel, "scripted": ScriptedModel,
    "bert": BertModel}


def engine_of(data: Any) -> str | None:
    """The engine a table names, or the one its kind implies."""
    if not isinstance(data, dict):
        return getattr(data, "engine", None)
    engine = data.get("engine")
    if engine is None:
        return "bert" if data.get("kind") == "embedding" else "llamacpp"
    return engine if isinstance(engine, str) else None


ModelConfig = Annotated[
    Annotated[LlamacppModel, Tag("llamacpp")] | Annotated[UpstreamModel, Tag("upstream")]
    | Annotated[ScriptedModel, Tag("scripted")] | Annotated[BertModel, Tag("bert")],
    Discriminator(engine_of)]


def default_embedding() -> BertModel:
    """The embedding model served beside the chat model unless ``[[models]]`` says otherwise."""
    return BertModel(id=DEFAULT_EMBEDDING_ID, engine="bert")
