"""``make bench``: our server side by side with llama-cpp-python's own server."""
