"""How the benchmark starts llama.cpp's server and where it reads memory (no model)."""

from __future__ import annotations

import os
from pathlib import Path

from bench.servers import LlamaServer, link_pack, llama_server_command, peak_rss


def test_llama_server_gets_a_window_per_slot_and_the_gguf_template():
    peer = LlamaServer(Path("/bin/llama-server"), "/m.gguf", threads=2,
                       context_window=32768, parallel=8)
    command = llama_server_command(peer, 8123)

    def option(name: str) -> str:
        return command[command.index(name) + 1]

    assert command[0] == "/bin/llama-server"
    assert option("--ctx-size") == str(32768 * 8) and option("--parallel") == "8"
    assert option("--threads") == option("--threads-batch") == "2"
    assert "--jinja" in command and option("--port") == "8123"


def test_link_pack_makes_an_installed_pack_of_another_home(tmp_path):
    gguf = tmp_path / "elsewhere.gguf"
    gguf.write_bytes(b"GGUF")
    link_pack(tmp_path / "home", "qwen2.5-coder-0.5b", gguf)
    link_pack(tmp_path / "home", "qwen2.5-coder-0.5b", gguf)   # again: nothing changes
    linked = tmp_path / "home" / "models" / "qwen2.5-coder-0.5b.gguf"
    assert linked.resolve() == gguf.resolve() and linked.read_bytes() == b"GGUF"


def test_peak_rss_reads_this_process():
    assert peak_rss(os.getpid()) > 10_000_000
