"""The fake engine: it answers from a script through the same seam, on a byte-level vocabulary,
with chat templates of its own."""
