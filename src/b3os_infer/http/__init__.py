"""HTTP plumbing shared by both wire formats: formats, errors, SSE, disconnects."""
