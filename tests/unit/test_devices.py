"""Where llama.cpp puts the layers: the model parameters the loader builds from the
accelerator settings, and the device a listing names. This machine has no GPU; the CPU
build's answers are checked as they are."""

from __future__ import annotations

import llama_cpp as ll
import pytest

from b3os_infer.engine.llamacpp.devices import (
    ALL_LAYERS,
    Placement,
    device_name,
    gpu_backend,
    gpu_offload,
    model_params,
)

CUDA_INFO = "CUDA : ARCHS = 890 | USE_GRAPHS = 1 | PEER_MAX_BATCH_SIZE = 128 | CPU : SSE3 = 1 | "
METAL_INFO = "MTL : EMBED_LIBRARY = 1 | CPU : NEON = 1 | ARM_FMA = 1 | "
CPU_INFO = "CPU : SSE3 = 1 | AVX2 = 1 | OPENMP = 1 | REPACK = 1 | "


def test_the_gpu_backend_is_read_from_llama_cpps_backend_list():
    assert gpu_backend(CUDA_INFO) == "cuda"
    assert gpu_backend(METAL_INFO) == "metal"
    assert gpu_backend("Vulkan : FP16 = 1 | " + CPU_INFO) == "vulkan"
    assert gpu_backend(CPU_INFO) is None


def test_this_cpu_build_offloads_nothing_and_serves_on_the_cpu():
    assert gpu_offload() is False and gpu_backend() is None
    built = model_params(Placement(), gpu_offload())
    assert built.params.n_gpu_layers == 0
    assert device_name(Placement(), gpu_offload(), gpu_backend()) == "cpu"
    # gpu_layers asked of a build without a GPU backend: still the CPU
    assert model_params(Placement(gpu_layers=20), False).params.n_gpu_layers == 0


def test_a_gpu_build_offloads_every_layer_unless_told_how_many():
    assert model_params(Placement(), True).params.n_gpu_layers == ALL_LAYERS == -1
    assert model_params(Placement(gpu_layers=20), True).params.n_gpu_layers == 20
    assert device_name(Placement(), True, "cuda") == "cuda"
    assert device_name(Placement(gpu_layers=0), True, "cuda") == "cpu"


def test_main_gpu_alone_puts_the_whole_model_on_that_gpu():
    params = model_params(Placement(main_gpu=1), True).params
    assert params.split_mode == ll.LLAMA_SPLIT_MODE_NONE
    assert params.main_gpu == 1


def test_tensor_split_spreads_the_layers_in_its_proportions():
    built = model_params(Placement(tensor_split=(3.0, 1.0)), True)
    assert built.params.split_mode == ll.LLAMA_SPLIT_MODE_LAYER
    assert [built.params.tensor_split[i] for i in range(3)] == [3.0, 1.0, 0.0]


def test_without_settings_the_params_keep_llama_cpps_layer_split():
    params = model_params(Placement(), True).params
    default = ll.llama_model_default_params()
    assert (params.split_mode, params.main_gpu) == (default.split_mode, default.main_gpu)
    assert not params.tensor_split


def test_a_tensor_split_longer_than_the_build_takes_is_refused():
    too_many = tuple(1.0 for _ in range(ll.llama_max_devices() + 1))
    with pytest.raises(ValueError, match=f"tensor_split has {len(too_many)} entries"):
        model_params(Placement(tensor_split=too_many), True)
