"""Message Batches on the Anthropic API: its routes and the objects they send."""
