"""Run the benchmark: ``python -m bench`` (``make bench``).

One server at a time, never two. ``classic``: ours, then llama-cpp-python's server, each
server's one-token requests taking turns with the same work done by its engine alone in
this process. ``decode``: single-stream and 8-stream decode against llama.cpp's own
``llama-server`` with as many slots as ours. ``agent``: Claude Code's recorded first
request on the 0.5B pack, cold, in a new conversation and after a restart, ours and
llama-server. ``edit``: a ~100-line file returned whole with one change, on both packs, one
stream and 4 together, against llama-server without and with its n-gram speculation.
``depth``: 64 tokens decoded after Claude Code's recorded request, ours and llama-server.
Prints Markdown tables of ratios (ours / peer).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.metadata
import signal
import sys
import time
from pathlib import Path

from b3os_infer.compose import DEFAULT_MODEL_WINDOW
from b3os_infer.config import EngineConfig, Home
from b3os_infer.node.cards import default_model_path
from b3os_infer.packs import installed_gguf

from . import agent, batches, depth, direct, edit, report, servers
from .scenarios import Results, decode, measure

SCENARIOS = ("classic", "decode", "agent", "edit", "depth")
# where `make llama-server` builds it, for the llama.cpp that llama-cpp-python vendors
LLAMA_SERVER = Path.home() / ".cache" / "b3os-infer" / \
    f"llama-server-{importlib.metadata.version('llama-cpp-python')}" / "llama-server"
AGENT_PACK = "qwen2.5-coder-0.5b"
RESTARTS = ("ours", "both", "none")
EDIT_PACKS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
# llama-server's draft-free kinds, each with its own defaults (`llama-server --help`)
SPEC_TYPES = ("ngram-map-k", "ngram-mod", "ngram-simple")
# ours as configured, or with `[engine] speculative` set (a key of engines that draft)
OUR_SPECULATIVE = {"as-configured": (), "on": ("speculative = true",),
                   "off": ("speculative = false",)}
_notes: list[str] = []   # sections printed after the tables (the batch scenario's)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, default=list(SCENARIOS),
                        help="the scenarios to run (default: all)")
    parser.add_argument("--model", default=str(default_model_path()), help="GGUF file")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--parallel", type=int, default=EngineConfig().parallel,
                        help="our sequence slots, and llama-server's in `decode`")
    parser.add_argument("--context-window", type=int, default=DEFAULT_MODEL_WINDOW,
                        help="tokens per sequence, for every server")
    parser.add_argument("--prefix-words", type=int, default=1210,
                        help="filler words in the long document (about 2,000 tokens)")
    parser.add_argument("--llama-server", type=Path, default=LLAMA_SERVER,
                        help="llama.cpp's server binary (`make llama-server` builds it)")
    parser.add_argument("--agent-pack", default=AGENT_PACK,
                        help="the installed model pack the agent scenario serves")
    parser.add_argument("--agent-restart", choices=RESTARTS, default="ours",
                        help="whose restart the agent scenario times (default: ours; "
                             "llama-server keeps no prompt cache across one, so its time "
                             "after a restart is its cold time again)")
    parser.add_argument("--edit-packs", nargs="+", default=list(EDIT_PACKS),
                        help="the installed model packs the edit scenario serves")
    parser.add_argument("--spec-types", nargs="*", default=list(SPEC_TYPES),
                        help="llama-server's --spec-type variants in `edit` (each beside "
                             "llama-server without speculation)")
    parser.add_argument("--edit-runs", type=int, default=3,
                        help="edit requests one at a time, each with its own change")
    parser.add_argument("--edit-streams", type=int, default=4,
                        help="edit requests together (llama-server gets as many slots)")
    parser.add_argument("--ours-speculative", nargs="+", choices=list(OUR_SPECULATIVE),
                        default=["as-configured"],
                        help="our server in `edit` and `depth`: as configured, or with "
                             "`[engine] speculative` on or off (one run of ours each)")
    parser.add_argument("--log", type=Path, default=Path("bench-servers.log"),
                        help="where the servers' own output goes")
    return parser.parse_args()


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def _classic(args: argparse.Namespace, setup: servers.Setup,
             tables: list[tuple[str, list[report.Row]]]) -> Results:
    """Ours then llama-cpp-python's server; ours is also the decode side of ``decode``."""
    _say("ours: b3os-infer serve")
    with servers.ours(setup, args.log) as server:
        if "classic" in args.only:
            ours = asyncio.run(measure(server, args.prefix_words, direct.OurEngine(setup)))
            batch = asyncio.run(batches.measure_batches(server))
            _say(f"ours, batches: {batch}")
            _say(f"ours, batches: {batches.summary(batch)}")
            _notes.append(batches.markdown(batch))
        else:
            ours = asyncio.run(decode(server))
        peak = servers.peak_rss(server.pid)
    _say(f"ours: {ours}; peak resident memory {peak / 1e9:.2f} GB")
    if "classic" in args.only:
        _say(f"prefix: warm request reused {ours.warm_cached_tokens} cached tokens (ours)")
    if "classic" in args.only:
        _say("peer: python -m llama_cpp.server")
        with servers.peer(setup, args.log) as server:
            peer = asyncio.run(measure(server, args.prefix_words, direct.PeerLibrary(setup)))
        _say(f"peer: {peer}")
        tables.append(("ours / llama-cpp-python's server", report.rows(ours, peer)))
    tables.append(("our server as `make serve` runs it", [report.memory_row(peak)]))
    return ours


def _decode(args: argparse.Namespace, ours: Results,
            tables: list[tuple[str, list[report.Row]]]) -> None:
    peer = servers.LlamaServer(args.llama_server, args.model, args.threads,
                               args.context_window, args.parallel)
    _say(f"llama-server: --parallel {args.parallel}")
    with servers.llama_server(peer, args.log) as server:
        theirs = asyncio.run(decode(server))
    _say(f"llama-server: {theirs}")
    tables.append((f"ours / llama-server --parallel {args.parallel}",
                   report.decode_rows(ours, theirs)))


def _agent(args: argparse.Namespace, tables: list[tuple[str, list[report.Row]]]) -> None:
    gguf = installed_gguf(args.agent_pack, Home.resolve().models)
    setup = servers.Setup(model_path=str(gguf), threads=args.threads,
                          context_window=args.context_window, parallel=args.parallel)
    with servers.scratch_home() as home:
        servers.link_pack(home, args.agent_pack, gguf)
        ours = asyncio.run(agent.run(
            lambda: servers.ours(setup, args.log, home=home, pack=args.agent_pack), _say,
            restart=args.agent_restart in ("ours", "both")))
    peer = servers.LlamaServer(args.llama_server, str(gguf), args.threads,
                               args.context_window, 1)
    theirs = asyncio.run(agent.run(lambda: servers.llama_server(peer, args.log), _say,
                                   restart=args.agent_restart == "both"))
    tables.append((f"Claude Code's first request on {args.agent_pack}: ours / llama-server "
                   "--parallel 1", report.agent_rows(ours, theirs)))


def _ours_label(setting: str) -> str:
    return "ours" if setting == "as-configured" else f"ours, speculative {setting}"


def _edit(args: argparse.Namespace, tables: list[tuple[str, list[report.Row]]]) -> None:
    """Per pack: each of our settings, llama-server without speculation, then with each
    ``--spec-type``; one server at a time."""
    for pack in args.edit_packs:
        gguf = installed_gguf(pack, Home.resolve().models)
        setup = servers.Setup(model_path=str(gguf), threads=args.threads,
                              context_window=args.context_window, parallel=args.parallel)
        measured: dict[str, edit.Measured] = {}
        for setting in args.ours_speculative:
            name = _ours_label(setting)
            _say(f"edit, {pack}: {name}")
            with servers.scratch_home() as home:
                servers.link_pack(home, pack, gguf)
                with servers.ours(setup, args.log, home=home, pack=pack,
                                  engine=OUR_SPECULATIVE[setting]) as server:
                    measured[name] = asyncio.run(edit.measure(
                        server, args.edit_runs, args.edit_streams))
            _say(f"edit, {pack}: {name}: {measured[name]}")
        peers: dict[str, edit.Measured] = {}
        for kind in ["none", *args.spec_types]:
            extra = () if kind == "none" else ("--spec-type", kind)
            peer = servers.LlamaServer(args.llama_server, str(gguf), args.threads,
                                       args.context_window, args.edit_streams, extra)
            _say(f"edit, {pack}: llama-server --parallel {args.edit_streams} "
                 f"--spec-type {kind}")
            with servers.llama_server(peer, args.log) as server:
                peers[kind] = asyncio.run(edit.measure(server, args.edit_runs,
                                                       args.edit_streams))
            _say(f"edit, {pack}: llama-server --spec-type {kind}: {peers[kind]}")
        for name, ours in measured.items():
            tables.append((f"edit on {pack}: {name} / llama-server --parallel "
                           f"{args.edit_streams}",
                           report.edit_rows(ours, peers, args.edit_streams)))
        _notes.append(report.edit_details(
            f"edit on {pack}, every server", measured | {
                f"llama-server --spec-type {kind}": m for kind, m in peers.items()},
            args.edit_streams))


def _depth(args: argparse.Namespace, tables: list[tuple[str, list[report.Row]]]) -> None:
    gguf = installed_gguf(args.agent_pack, Home.resolve().models)
    setup = servers.Setup(model_path=str(gguf), threads=args.threads,
                          context_window=args.context_window, parallel=args.parallel)
    peer = servers.LlamaServer(args.llama_server, str(gguf), args.threads,
                               args.context_window, 1)
    _say("depth: llama-server --parallel 1")
    theirs = asyncio.run(depth.run(lambda: servers.llama_server(peer, args.log), _say))
    for setting in args.ours_speculative:
        name = _ours_label(setting)
        _say(f"depth: {name}")
        with servers.scratch_home() as home:
            servers.link_pack(home, args.agent_pack, gguf)
            launch = functools.partial(servers.ours, setup, args.log, home=home,
                                       pack=args.agent_pack, engine=OUR_SPECULATIVE[setting])
            ours = asyncio.run(depth.run(launch, _say))
        tables.append((f"decode after Claude Code's first request on {args.agent_pack}: "
                       f"{name} / llama-server --parallel 1",
                       report.depth_rows(ours, theirs)))


def main() -> None:
    args = _arguments()
    # a stopped benchmark still stops the server it started (the ``finally`` blocks)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    setup = servers.Setup(model_path=args.model, threads=args.threads,
                          context_window=args.context_window, parallel=args.parallel)
    args.log.write_bytes(b"")
    load_before = report.load()
    _say(f"load average before: {load_before}; scenarios: {' '.join(args.only)}")
    tables: list[tuple[str, list[report.Row]]] = []
    if {"classic", "decode"} & set(args.only):
        ours = _classic(args, setup, tables)
        if "decode" in args.only:
            _decode(args, ours, tables)
    if "agent" in args.only:
        _agent(args, tables)
    if "depth" in args.only:
        _depth(args, tables)
    if "edit" in args.only:
        _edit(args, tables)
    print()
    print(f"machine: {report.machine()}")
    print(f"model: {Path(args.model).name}; threads {args.threads}; context window "
          f"{args.context_window} per sequence; our slots {args.parallel}")
    print(f"load average (1, 5, 15 min): before {load_before}, after {report.load()}")
    for title, table in tables:
        print(f"\n{title}\n")
        print(report.markdown(table))
    for text in _notes:
        print(f"\n{text}")


if __name__ == "__main__":
    main()
