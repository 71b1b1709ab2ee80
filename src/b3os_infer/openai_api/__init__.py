"""The OpenAI API (chat completions, models): decoding, encoding, errors and routes."""
