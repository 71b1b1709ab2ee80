"""``b3os-infer claude`` and ``b3os-infer codex``: an agent CLI started against a running server.

Everything the agent needs to know of a model it has never heard of comes from the server's
own listing (``GET /v1/infer/models``): the model, its window and how much it may write. The
server is ``B3OS_URL`` (default ``http://127.0.0.1:8000``), the key ``B3OS_API_KEY``. What
follows the subcommand goes to the agent unchanged; a ``--model``/``-m`` there picks the model,
else the first chat model listed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from .codex_catalog import CatalogModel, catalog, catalog_path
from .remote import error_message, get_models, server_url, unreachable

# Both agents give up on a stream after 5 minutes without an event (Claude Code's watchdog,
# Codex's `stream_idle_timeout_ms`); a cold agent prompt on a CPU takes longer than that to
# read before the first token. Half an hour covers the slowest first turn measured here.
IDLE_TIMEOUT_MS = 1_800_000
NPM_PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex"}


class LaunchError(Exception):
    """Why the agent cannot be started; the message says what to do."""


@dataclass(frozen=True)
class Target:
    """The server the agent talks to, and the key it sends."""

    url: str
    key: str

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1/infer"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Target:
        key = env.get("B3OS_API_KEY", "")
        if not key:
            raise LaunchError("B3OS_API_KEY is not set: export the key `serve` printed at its "
                              "first start, or make one with `b3os-infer keys create`")
        return cls(url=server_url(env), key=key)


@dataclass(frozen=True)
class ServedModel:
    """A chat model as the listing describes it."""

    id: str
    context_window: int
    max_output_tokens: int
    vision: bool = False


@dataclass(frozen=True)
class Command:
    """What to run: the program's arguments, its whole environment, and the files to write
    before it starts (path: text)."""

    argv: list[str]
    env: dict[str, str]
    files: dict[Path, str] = field(default_factory=dict)


def chat_models(target: Target, transport: httpx.BaseTransport | None = None) -> list[ServedModel]:
    """The chat models the server lists, in its order."""
    try:
        with httpx.Client(transport=transport, timeout=30) as client:
            response = get_models(client, target.url, target.key)
    except httpx.HTTPError as exc:
        raise LaunchError(unreachable(target.url, exc)) from exc
    if response.status_code != 200:
        raise LaunchError(f"{target.url} answered {response.status_code} to the model "
                          f"listing: {error_message(response)}")
    return [_served(entry) for entry in response.json().get("data", [])
            if entry.get("b3os", {}).get("kind") == "chat"]



def _served(entry: dict[str, Any]) -> ServedModel:
    details = entry["b3os"]
    return ServedModel(id=entry["id"], context_window=int(details["context_window"]),
                       max_output_tokens=int(details["max_output_tokens"]),
                       vision=bool(details.get("capabilities", {}).get("vision", False)))


def named_model(args: Sequence[str], flags: Sequence[str]) -> str | None:
    """The value of the first of ``flags`` in ``args`` (``--model X`` or ``--model=X``)."""
    for i, arg in enumerate(args):
        if arg in flags and i + 1 < len(args):
            return args[i + 1]
        name, _, value = arg.partition("=")
        if value and name in flags:
            return value
    return None


def pick(models: Sequence[ServedModel], wanted: str | None) -> ServedModel:
    """The model asked for, else the first one; a name the server does not serve is an error."""
    if not models:
        raise LaunchError("the server lists no chat model")
    if wanted is None:
        return models[0]
    for model in models:
        if model.id == wanted:
            return model
    ids = ", ".join(m.id for m in models)
    raise LaunchError(f"{wanted} is not served there; the chat models are: {ids}")


def claude_command(target: Target, args: Sequence[str], models: Sequence[ServedModel],
                   env: Mapping[str, str], program: str) -> Command:
    """Claude Code with the server as its API, the model's limits as its own."""
    model = pick(models, named_model(args, ("--model",)))
    settings = dict(env)
    # an Anthropic key in the environment would be sent instead of the B3OS key
    settings.pop("ANTHROPIC_API_KEY", None)
    settings.update({
        "ANTHROPIC_BASE_URL": target.base_url,
        "ANTHROPIC_AUTH_TOKEN": target.key,
        # the background and sub-agent work Claude Code gives its small model stays here
        "ANTHROPIC_SMALL_FAST_MODEL": model.id,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": model.id,
        "CLAUDE_CODE_MAX_CONTEXT_TOKENS": str(model.context_window),
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(model.max_output_tokens),
        "CLAUDE_STREAM_IDLE_TIMEOUT_MS": str(IDLE_TIMEOUT_MS),
    })
    chosen = [] if named_model(args, ("--model",)) else ["--model", model.id]
    return Command(argv=[program, *chosen, *args], env=settings)


def codex_command(target: Target, args: Sequence[str], models: Sequence[ServedModel],
                  env: Mapping[str, str], program: str) -> Command:
    """Codex CLI with this server as a Responses provider, chosen by `-c` overrides (the
    user's own config.toml and Codex home stay as they are), and the served models' metadata
    as its model catalog (codex_catalog.py)."""
    model = pick(models, named_model(args, ("--model", "-m")))
    path = catalog_path(target.url, env)
    overrides = {
        "model": _toml(model.id),
        "model_provider": _toml("b3os"),
        "model_providers.b3os.name": _toml("B3OS Infer"),
        "model_providers.b3os.base_url": _toml(target.base_url),
        "model_providers.b3os.env_key": _toml("B3OS_API_KEY"),
        "model_providers.b3os.wire_api": _toml("responses"),
        "model_providers.b3os.stream_idle_timeout_ms": str(IDLE_TIMEOUT_MS),
        "model_context_window": str(model.context_window),
        # compact before the window's edge, leaving room for one reply
        "model_auto_compact_token_limit": str(model.context_window - model.max_output_tokens),
        "model_catalog_json": _toml(str(path)),
    }
    flags = [part for key, value in overrides.items() for part in ("-c", f"{key}={value}")]
    served = [CatalogModel(m.id, m.context_window, m.vision) for m in models]
    return Command(argv=[program, *flags, *args], env={**env, "B3OS_API_KEY": target.key},
                   files={path: catalog(served)})


def _toml(text: str) -> str:
    """A TOML basic string (Codex parses each `-c` value as TOML)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def find_program(agent: str, env: Mapping[str, str]) -> str:
    """The agent's executable on PATH; missing, the error gives the npm command."""
    found = shutil.which(agent, path=env.get("PATH"))
    if found is None:
        raise LaunchError(f"`{agent}` is not on PATH: install it with "
                          f"`npm install -g {NPM_PACKAGES[agent]}`")
    return found


BUILDERS = {"claude": claude_command, "codex": codex_command}


def command(agent: str, args: Sequence[str], env: Mapping[str, str],
            transport: httpx.BaseTransport | None = None) -> Command:
    """Everything needed to start ``agent`` against the server ``env`` names."""
    program = find_program(agent, env)
    target = Target.from_env(env)
    return BUILDERS[agent](target, args, chat_models(target, transport), env, program)


def launch(agent: str, args: Sequence[str]) -> None:
    """Replace this process with the agent (its exit status is the command's)."""
    ready = command(agent, args, os.environ)
    for path, text in ready.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    os.execvpe(ready.argv[0], ready.argv, ready.env)
