"""A config that leaves out what users may expect says so at start."""

from __future__ import annotations

from pathlib import Path

from b3os_infer.config import load_config
from b3os_infer.node.cards import DEFAULT_EMBEDDING_ID


def config(tmp_path: Path, text: str):
    path = tmp_path / "b3os.toml"
    path.write_text(text)
    return load_config(path)


def test_a_models_list_without_an_embedding_model_says_the_default_one_is_not_served(
        tmp_path):
    notes = config(tmp_path, '[[models]]\nid = "b3os/chat"\n').left_out()
    assert len(notes) == 1 and DEFAULT_EMBEDDING_ID in notes[0]
    assert 'kind = "embedding", engine = "bert"' in notes[0]


def test_the_fix_the_note_gives_serves_the_embedding_model_and_silences_it(tmp_path):
    fixed = config(tmp_path, '[[models]]\nid = "b3os/chat"\n\n[[models]]\n'
                   f'id = "{DEFAULT_EMBEDDING_ID}"\nkind = "embedding"\nengine = "bert"\n')
    assert fixed.left_out() == []
    assert DEFAULT_EMBEDDING_ID in [m.id for m in fixed.served()]


def test_the_single_model_table_and_no_config_serve_the_embedding_model_and_say_nothing(
        tmp_path):
    assert config(tmp_path, '[model]\nid = "b3os/chat"\n').left_out() == []
    assert load_config(None).left_out() == []
