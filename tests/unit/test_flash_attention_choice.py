"""Which lanes compute attention with llama.cpp's flash attention (contexts.py)."""

from __future__ import annotations

from b3os_infer.engine.llamacpp.contexts import UNTILED_UP_TO, flash_attention
from b3os_infer.engine.llamacpp.settings import LlamaCppSettings


def choice(window: int, device: str = "cpu", **settings: str) -> bool:
    return flash_attention(LlamaCppSettings("m.gguf", **settings), window, device)


def test_auto_is_off_on_the_cpus_f16_lanes_up_to_8192_tokens_and_on_past_them():
    assert UNTILED_UP_TO == 8192
    assert (choice(2304), choice(8192), choice(8448), choice(32768)) == \
        (False, False, True, True)


def test_auto_is_on_on_a_gpu_and_with_a_quantized_kv():
    assert choice(2304, device="cuda") is True
    assert choice(2304, kv_type="q8_0") is True


def test_on_and_off_are_taken_as_given():
    assert choice(2304, flash_attention="on") is True
    assert choice(32768, flash_attention="off") is False
