"""An engine reached over HTTP (vLLM, SGLang, llama.cpp's server), its checks, its tokenizer
and what the node adds over it (lazy grammars, reasoning budgets)."""
