"""The ``b3os-infer`` command: serve, and manage keys."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .config import Config, ConfigError, Home, load_config
from .edge.keys import DEFAULT_SCOPES, SCOPES, KeyStore


def _serve(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return 2
    host = args.host or config.server.host
    port = args.port or config.server.port
    home = Home.resolve()
    home.node_secret()
    keys = KeyStore(home.database)
    _first_key(keys, host, port)
    return _run(config, keys, host, port)


def _first_key(keys: KeyStore, host: str, port: int) -> None:
    if keys.active_count():
        return
    _, key = keys.create("default", DEFAULT_SCOPES)
    base = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/v1/infer"
    print("No API key existed, so one was made. It is shown only this once:\n", flush=True)
    print(f'export B3OS_API_KEY="{key}"')
    print(f'export ANTHROPIC_BASE_URL="{base}"')
    print('export ANTHROPIC_AUTH_TOKEN="$B3OS_API_KEY"')
    print(f'export OPENAI_BASE_URL="{base}"')
    print('export OPENAI_API_KEY="$B3OS_API_KEY"\n', flush=True)


def _run(config: Config, keys: KeyStore, host: str, port: int) -> int:
    import uvicorn

    from .app import create_app
    from .node.loader import load_gguf_model
    from .node.registry import ModelRegistry

    registry = ModelRegistry()
    try:
        registry.add(load_gguf_model(config.model, config.engine))
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"b3os-infer: {exc}", file=sys.stderr)
        return 1
    print(f"serving {config.model.id} at http://{host}:{port}/v1/infer", flush=True)
    uvicorn.run(create_app(registry, keys), host=host, port=port, log_level="info",
                access_log=False)
    return 0


def _keys(args: argparse.Namespace) -> int:
    keys = KeyStore(Home.resolve().database)
    if args.keys_command == "create":
        scopes = tuple(args.scope) if args.scope else DEFAULT_SCOPES
        try:
            record, key = keys.create(args.name, scopes)
        except ValueError as exc:
            print(f"b3os-infer: {exc}", file=sys.stderr)
            return 2
        print(f"created key {record.id} ({record.name}), scopes: {' '.join(record.scopes)}")
        print("the key is shown only this once:")
        print(key)
        return 0
    if args.keys_command == "list":
        print(f"{'ID':<14}{'NAME':<20}{'SCOPES':<26}{'CREATED':<22}{'LAST USED':<22}STATUS")
        for r in keys.list():
            status = f"revoked {r.revoked_at}" if r.revoked_at else "active"
            print(f"{r.id:<14}{r.name:<20}{' '.join(r.scopes):<26}{r.created_at:<22}"
                  f"{r.last_used_at or '-':<22}{status}")
        return 0
    try:
        record = keys.revoke(args.key)
    except KeyError as exc:
        print(f"b3os-infer: {exc.args[0]}", file=sys.stderr)
        return 1
    print(f"revoked key {record.id} ({record.name})")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="b3os-infer", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the configured model (edge, node and "
                                "engine in one process)")
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8000)")
    serve.add_argument("--config", type=Path, help="TOML config file")
    serve.set_defaults(run=_serve)
    keys = commands.add_parser("keys", help="create, list and revoke API keys")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser("create", help="make a key; it is printed once, last")
    create.add_argument("--name", required=True)
    create.add_argument("--scope", action="append", choices=sorted(SCOPES),
                        help=f"repeatable; default: {' '.join(DEFAULT_SCOPES)}")
    key_commands.add_parser("list", help="list keys (never the keys themselves)")
    revoke = key_commands.add_parser("revoke", help="revoke a key by its id or the key")
    revoke.add_argument("key", metavar="KEY_OR_ID")
    keys.set_defaults(run=_keys)
    return top


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
