"""The models installed in the home that a node serves beside its configured ones.

``b3os-infer models add`` puts Hub models and model packs under the home's ``models``
folder; a node lists each of them under its ``models list`` name and loads it on its first
request (``[loading] installed = false`` serves the configured models only). A model the
config already serves, by id or by file, is not listed twice.
"""

from __future__ import annotations

from pathlib import Path

from .config import LlamacppModel, ModelConfig
from .hub.pulled import INSTALLED, Store
from .packs import CATALOGUE, gguf_path, is_installed


def installed_models(models: Path, configured: list[ModelConfig]) -> list[LlamacppModel]:
    ids = {m.id for m in configured}
    ggufs = [m for m in configured if isinstance(m, LlamacppModel)]
    files = {Path(m.path).resolve() for m in ggufs if m.path}
    files |= {gguf_path(CATALOGUE[m.pack], models).resolve() for m in ggufs
              if m.pack in CATALOGUE}
    found = [*_hub_models(models), *_packs(models)]
    return [m for m in found
            if m.id not in ids and Path(m.path or "").resolve() not in files]


def _hub_models(models: Path) -> list[LlamacppModel]:
    store = Store(models)
    return [LlamacppModel(id=record.name, path=str(store.first(record)), preload=False)
            for record in store.records()
            if record.state == INSTALLED and store.complete(record)]


def _packs(models: Path) -> list[LlamacppModel]:
    return [LlamacppModel(id=pack.model_id, path=str(gguf_path(pack, models)), preload=False)
            for pack in CATALOGUE.values() if is_installed(pack, models)]
