"""The Anthropic Messages API: decoding, encoding, errors and routes."""
