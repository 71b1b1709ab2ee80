"""The node: templates, tokens, stop handling and the models it serves."""
