"""Embedders (the bundled local model, OpenAI-compatible APIs), the LanceDB table of retrieval
units and hybrid search over it."""
