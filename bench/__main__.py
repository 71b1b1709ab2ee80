"""Run the benchmark: ``python -m bench`` (``make bench``).

Ours first, then the peer, never both servers at once; each server's one-token
requests take turns with the same work done by its engine alone in this process.
Prints a Markdown table of ratios (ours / peer).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from pathlib import Path

from b3os_infer.compose import DEFAULT_MODEL_WINDOW
from b3os_infer.config import EngineConfig
from b3os_infer.node.models import default_model_path

from . import batches, direct, report, servers
from .scenarios import measure


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--model", default=str(default_model_path()), help="GGUF file")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--parallel", type=int, default=EngineConfig().parallel,
                        help="our sequence slots (the peer has one)")
    parser.add_argument("--context-window", type=int, default=DEFAULT_MODEL_WINDOW,
                        help="tokens per sequence, for both servers")
    parser.add_argument("--prefix-words", type=int, default=1210,
                        help="filler words in the long document (about 2,000 tokens)")
    parser.add_argument("--log", type=Path, default=Path("bench-servers.log"),
                        help="where the servers' own output goes")
    return parser.parse_args()


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def main() -> None:
    args = _arguments()
    # a stopped benchmark still stops the server it started (the ``finally`` blocks)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    setup = servers.Setup(model_path=args.model, threads=args.threads,
                          context_window=args.context_window, parallel=args.parallel)
    args.log.write_bytes(b"")
    load_before = report.load()
    _say(f"load average before: {load_before}")
    _say("ours: b3os-infer serve")
    with servers.ours(setup, args.log) as server:
        ours = asyncio.run(measure(server, args.prefix_words, direct.OurEngine(setup)))
        batch = asyncio.run(batches.measure_batches(server))
    _say(f"ours: {ours}")
    _say(f"ours, batches: {batch}")
    _say("peer: python -m llama_cpp.server")
    with servers.peer(setup, args.log) as server:
        peer = asyncio.run(measure(server, args.prefix_words, direct.PeerLibrary(setup)))
    _say(f"peer: {peer}")
    load_after = report.load()
    print()
    print(f"machine: {report.machine()}")
    print(f"model: {Path(args.model).name}; threads {args.threads}; context window "
          f"{args.context_window} per sequence; our slots {args.parallel}")
    print(f"prefix: warm request reused {ours.warm_cached_tokens} cached tokens (ours)")
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_after}")
    print()
    print(report.markdown(report.rows(ours, peer)))
    print()
    print(batches.markdown(batch))


if __name__ == "__main__":
    main()
