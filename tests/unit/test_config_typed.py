"""The config file as typed tables: every table refuses an unknown key and a wrong type with
the file, table and key named; each engine's model takes its own keys only; and
docs/configuration.md is what the tables render."""

from __future__ import annotations

from pathlib import Path

import pytest

from b3os_infer.config import (
    BertModel,
    Config,
    ConfigError,
    LlamacppModel,
    ScriptedModel,
    UpstreamModel,
    load_config,
)
from b3os_infer.config.reference import render

ROOT = Path(__file__).resolve().parents[2]
# one table of each kind as the file spells it (limits and concurrency are per model)
TABLES = [f"[{name}]" for name in Config.model_fields
          if name not in ("models", "limits", "concurrency")]
TABLES += ["[limits.default]", '[concurrency."b3os/x"]']


def _load(tmp_path: Path, text: str) -> Config:
    path = tmp_path / "b3os.toml"
    path.write_text(text)
    return load_config(path)


def _refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text)
    return str(caught.value)


@pytest.mark.parametrize("table", TABLES)
def test_every_table_refuses_an_unknown_key_naming_file_table_and_key(tmp_path, table):
    said = _refused(tmp_path, f"{table}\nno_such_key = 1\n")
    assert said == f"{tmp_path / 'b3os.toml'} {table}: unknown key 'no_such_key'"


def test_an_unknown_table_is_refused_by_its_name(tmp_path):
    assert _refused(tmp_path, "[enigne]\nthreads = 2\n").endswith(": unknown section [enigne]")


def test_a_number_for_a_string_key_is_refused_not_converted(tmp_path):
    said = _refused(tmp_path, "[model]\ndisplay_name = 5\n")
    assert said.endswith("b3os.toml [model]: display_name should be a string")


def test_a_string_for_a_number_key_is_refused_with_its_bounds(tmp_path):
    said = _refused(tmp_path, '[engine]\nthreads = "2"\n')
    assert said.endswith("b3os.toml [engine]: threads should be an integer >= 1")


def test_every_problem_of_a_file_is_said_one_line_each(tmp_path):
    said = _refused(tmp_path, "[engine]\nthreads = 0\nparallel = 0\n[server]\nport = 70000\n")
    assert [line.split(": ", 1)[1] for line in said.splitlines()] == [
        "port should be an integer >= 0, <= 65535", "threads should be an integer >= 1",
        "parallel should be an integer >= 1"]


def test_each_engine_gets_its_own_model_with_its_own_keys(tmp_path):
    config = _load(tmp_path, '[[models]]\nid = "a"\npack = "qwen2.5-coder-0.5b"\n'
                   '[[models]]\nid = "b"\nengine = "upstream"\nurl = "http://127.0.0.1:1"\n'
                   'flavour = "vllm"\ntokenizer = "t.gguf"\n'
                   '[[models]]\nid = "c"\nengine = "scripted"\nscript = "s.json"\n'
                   '[[models]]\nid = "d"\nkind = "embedding"\nquery_prefix = "query: "\n')
    a, b, c, d = config.models
    assert isinstance(a, LlamacppModel) and a.pack == "qwen2.5-coder-0.5b"
    assert isinstance(b, UpstreamModel) and (b.url, b.flavour) == ("http://127.0.0.1:1", "vllm")
    assert isinstance(c, ScriptedModel) and c.script == str(tmp_path / "s.json")
    assert isinstance(d, BertModel) and (d.engine, d.query_prefix) == ("bert", "query: ")


def test_a_key_of_another_engine_is_refused_naming_who_reads_it(tmp_path):
    said = _refused(tmp_path, '[model]\nengine = "scripted"\nscript = "s.json"\npath = "m.gguf"\n')
    assert said.endswith("[model]: path is read by llamacpp and bert models only; this one's "
                         "engine is scripted")


def test_the_configuration_reference_is_what_the_tables_render():
    documented = (ROOT / "docs" / "configuration.md").read_text()
    assert documented == render(), (
        "docs/configuration.md is stale: python -m b3os_infer.config.reference > "
        "docs/configuration.md")


def test_the_reference_states_each_default_the_loader_applies():
    rendered = render()
    defaults = Config()
    assert f"| `threads` | integer >= 1 | `{defaults.engine.threads}` |" in rendered
    assert f"| `port` | integer >= 0, <= 65535 | `{defaults.server.port}` |" in rendered
    assert f'| `id` | string | `"{defaults.model.id}"` |' in rendered
    assert "| `url` | string | required |" in rendered
