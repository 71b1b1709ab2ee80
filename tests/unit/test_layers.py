"""An upstream-only node runs without llama-cpp-python: nothing it imports needs it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

BLOCKED_IMPORT = textwrap.dedent("""
    import sys

    class NoLlama:
        def find_spec(self, name, path=None, target=None):
            if name == "llama_cpp" or name.startswith("llama_cpp."):
                raise ImportError("llama_cpp is blocked in this test")
            return None

    sys.meta_path.insert(0, NoLlama())
    import b3os_infer.anthropic.routes, b3os_infer.openai_api.routes
    import b3os_infer.node.chat_model, b3os_infer.node.grammar, b3os_infer.node.registry
    import b3os_infer.engine.upstream.engine, b3os_infer.engine.upstream.hf_tokenizer
    import b3os_infer.engine.scripted.engine
    print(sorted(m for m in sys.modules if m.startswith("llama_cpp")))
""")


def test_the_node_wire_formats_and_upstream_engine_import_without_llama_cpp():
    run = subprocess.run([sys.executable, "-c", BLOCKED_IMPORT], capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
