"""Sentence embeddings computed in numpy: the BERT encoder and its weights from safetensors."""
