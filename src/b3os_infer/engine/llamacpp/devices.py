"""Where llama.cpp puts a model's layers: the CPU, or a GPU when the llama.cpp build has a
GPU backend (CUDA, Metal, Vulkan, ...), and the model parameters that say so.

``gpu_layers`` None offloads every layer where the build can, none elsewhere. ``main_gpu``
alone puts the whole model on that GPU; ``tensor_split`` spreads the layers over the GPUs in
those proportions; neither lets llama.cpp spread them over every GPU it finds.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any

import llama_cpp as ll

# llama.cpp's backend registry names, as llama_print_system_info lists them
_BACKENDS = {"cuda": "cuda", "rocm": "rocm", "musa": "musa", "mtl": "metal",
             "metal": "metal", "vulkan": "vulkan", "sycl": "sycl", "opencl": "opencl",
             "cann": "cann"}
# llama.cpp: a negative n_gpu_layers offloads every layer (and the output layer)
ALL_LAYERS = -1


@dataclass(frozen=True)
class Placement:
    """The ``[engine]`` accelerator settings, as the engine takes them."""

    gpu_layers: int | None = None
    main_gpu: int | None = None
    tensor_split: tuple[float, ...] = ()


def gpu_offload() -> bool:
    """Whether this llama.cpp build can put layers on a GPU."""
    return bool(ll.llama_supports_gpu_offload())


def gpu_backend(system_info: str | None = None) -> str | None:
    """The GPU backend this llama.cpp build has (``"cuda"``, ``"metal"``, ...), or None."""
    if system_info is None:
        system_info = ll.llama_print_system_info().decode("utf-8", "replace")
    for name in re.findall(r"(\w+) : ", system_info):
        backend = _BACKENDS.get(name.lower())
        if backend is not None:
            return backend
    return None


def offloaded_layers(placement: Placement, offload: bool) -> int:
    """n_gpu_layers: what was asked, else every layer where the build offloads, else 0."""
    if placement.gpu_layers is not None:
        return placement.gpu_layers if offload else 0
    return ALL_LAYERS if offload else 0


def device_name(placement: Placement, offload: bool, backend: str | None) -> str:
    """What serves the model: ``"cpu"``, or the GPU backend when any layer is on it."""
    if offloaded_layers(placement, offload) == 0:
        return "cpu"
    return backend or "gpu"


@dataclass
class ModelParams:
    """llama.cpp's model parameters, and the split array its struct points into (kept
    alive here for as long as the parameters are)."""

    params: Any
    split: Any = None


def model_params(placement: Placement, offload: bool) -> ModelParams:
    """llama.cpp's model parameters with the placement applied."""
    built = ModelParams(ll.llama_model_default_params())
    built.params.n_gpu_layers = offloaded_layers(placement, offload)
    if placement.tensor_split:
        built.split = _split_array(placement.tensor_split)
        built.params.split_mode = ll.LLAMA_SPLIT_MODE_LAYER
        built.params.tensor_split = built.split
    elif placement.main_gpu is not None:
        built.params.split_mode = ll.LLAMA_SPLIT_MODE_NONE
        built.params.main_gpu = placement.main_gpu
    return built


def _split_array(split: tuple[float, ...]) -> Any:
    devices = int(ll.llama_max_devices())
    if len(split) > devices:
        raise ValueError(f"tensor_split has {len(split)} entries; this llama.cpp build "
                         f"takes at most {devices}")
    return (ctypes.c_float * devices)(*split)
