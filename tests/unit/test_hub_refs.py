"""Hub model names and the choice of a GGUF among a repository's files (pure code)."""

from __future__ import annotations

import pytest

from b3os_infer.hub import HubError
from b3os_infer.hub.refs import Reference, RemoteFile, choose, ggufs, parse, quant_of

REPO = "bartowski/Qwen2.5-7B-Instruct-GGUF"


def files(*paths: str) -> list[RemoteFile]:
    return [RemoteFile(path, 10 + n, f"{n:064x}") for n, path in enumerate(paths)]


QUANTS = ggufs(REPO, files("Qwen2.5-7B-Instruct-Q4_K_M.gguf", "Qwen2.5-7B-Instruct-Q8_0.gguf",
                           "Qwen2.5-7B-Instruct-IQ2_XXS.gguf", "README.md",
                           "mmproj-Qwen2.5-7B-Instruct-f16.gguf"))


@pytest.mark.parametrize(("text", "repo", "tag"), [
    ("hf.co/bartowski/Qwen2.5-7B-Instruct-GGUF", REPO, None),
    ("hf.co/bartowski/Qwen2.5-7B-Instruct-GGUF:q4_k_m", REPO, "q4_k_m"),
    ("huggingface.co/unsloth/gpt-oss-20b-GGUF:F16", "unsloth/gpt-oss-20b-GGUF", "F16")])
def test_a_reference_is_parsed_into_its_repository_and_tag(
        text: str, repo: str, tag: str | None) -> None:
    assert parse(text) == Reference(repo, tag)


@pytest.mark.parametrize("text", ["hf.co/justaname", "hf.co/a/b/c", "hf.co/a/b:", "Qwen/x"])
def test_a_malformed_reference_is_a_hub_error_that_shows_the_form(text: str) -> None:
    with pytest.raises(HubError, match=r"write hf.co/OWNER/REPO or hf.co/OWNER/REPO:TAG"):
        parse(text)


@pytest.mark.parametrize(("path", "quant"), [
    ("Qwen2.5-7B-Instruct-Q4_K_M.gguf", "Q4_K_M"),
    ("SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1"),
    ("gemma-3-4b-it-iq2_xxs.gguf", "IQ2_XXS"),
    ("Llama-3-8B-BF16-00001-of-00002.gguf", "BF16"),
    ("Q5_K_M/Model-00001-of-00003.gguf", "Q5_K_M"),
    ("model.gguf", None)])
def test_the_quantization_is_read_from_the_file_name_or_its_folder(
        path: str, quant: str | None) -> None:
    assert quant_of(path) == quant


def test_projectors_and_other_files_are_not_models_and_each_gguf_is_one() -> None:
    assert [m.first for m in QUANTS] == ["Qwen2.5-7B-Instruct-IQ2_XXS.gguf",
                                         "Qwen2.5-7B-Instruct-Q4_K_M.gguf",
                                         "Qwen2.5-7B-Instruct-Q8_0.gguf"]
    assert [m.name for m in QUANTS][1] == f"hf.co/{REPO}:Q4_K_M"


def test_a_split_gguf_is_one_model_of_all_its_parts_in_order() -> None:
    split = ggufs("o/r", files("big-Q8_0-00002-of-00003.gguf", "big-Q8_0-00001-of-00003.gguf",
                               "big-Q8_0-00003-of-00003.gguf", "small-Q4_K_M.gguf"))
    assert [(m.name, [p.path for p in m.parts]) for m in split] == [
        ("hf.co/o/r:Q8_0", ["big-Q8_0-00001-of-00003.gguf", "big-Q8_0-00002-of-00003.gguf",
                            "big-Q8_0-00003-of-00003.gguf"]),
        ("hf.co/o/r:Q4_K_M", ["small-Q4_K_M.gguf"])]
    assert split[0].size == 10 + 11 + 12 and split[0].first.endswith("00001-of-00003.gguf")


def test_a_split_with_a_part_missing_is_not_offered() -> None:
    assert ggufs("o/r", files("big-00001-of-00003.gguf", "big-00003-of-00003.gguf")) == []


@pytest.mark.parametrize("tag", ["Q8_0", "q8_0", "Qwen2.5-7B-Instruct-Q8_0.gguf",
                                 "qwen2.5-7b-instruct-q8_0"])
def test_a_tag_matches_the_quantization_or_the_file_name_in_any_case(tag: str) -> None:
    assert choose(Reference(REPO, tag), QUANTS).first == "Qwen2.5-7B-Instruct-Q8_0.gguf"


def test_without_a_tag_the_q4_k_m_is_chosen_among_several() -> None:
    assert choose(Reference(REPO), QUANTS).tag == "Q4_K_M"


def test_without_a_tag_a_repository_s_only_gguf_is_chosen_whatever_its_quantization() -> None:
    only = ggufs("o/r", files("SmolLM2-135M-Instruct.Q4_1.gguf", "config.json"))
    assert choose(Reference("o/r"), only).name == "hf.co/o/r:Q4_1"


def test_an_unknown_tag_names_the_gguf_files_found() -> None:
    with pytest.raises(HubError) as raised:
        choose(Reference(REPO, "Q3_K_S"), QUANTS)
    assert str(raised.value) == (
        f"tag 'Q3_K_S' matches no GGUF file of {REPO}; its GGUF files: "
        "Qwen2.5-7B-Instruct-IQ2_XXS.gguf, Qwen2.5-7B-Instruct-Q4_K_M.gguf, "
        "Qwen2.5-7B-Instruct-Q8_0.gguf")


def test_without_a_tag_and_no_q4_k_m_among_several_the_error_asks_for_a_tag() -> None:
    several = ggufs("o/r", files("m-Q8_0.gguf", "m-F16.gguf"))
    with pytest.raises(HubError, match=r"several GGUF files and no single Q4_K_M: name one as "
                       r"hf.co/o/r:TAG; its GGUF files: m-F16.gguf, m-Q8_0.gguf"):
        choose(Reference("o/r"), several)


def test_a_repository_without_gguf_files_says_only_gguf_can_be_served() -> None:
    with pytest.raises(HubError, match="o/r has no GGUF file"):
        choose(Reference("o/r"), ggufs("o/r", files("model.safetensors")))
