"""Batches and Files on the OpenAI API: their routes, lines and the objects they send."""
