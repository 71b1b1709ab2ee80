"""B3OS Infer: open-weight models behind the OpenAI and Anthropic Messages APIs."""

__version__ = "0.1.0"
