"""A GGUF served by id and path alone is named by its own metadata, not by the default."""

from __future__ import annotations

from b3os_infer.engine.llamacpp.gguf import FILE_TYPES, GgufTokenizer
from b3os_infer.node.cards import DEFAULT_MODEL_NAME, default_model_path


def test_a_gguf_is_named_by_its_general_name_and_quantisation():
    info = GgufTokenizer(default_model_path()).info   # the vocabulary only, no weights
    assert info.name == "Smollm2 135M 8k Lc100K Mix1 Ep2 (Q4_1)"
    assert info.name != DEFAULT_MODEL_NAME


def test_file_types_are_named_as_llama_cpp_names_them():
    assert (FILE_TYPES[1], FILE_TYPES[3], FILE_TYPES[15]) == ("F16", "Q4_1", "Q4_K_M")
