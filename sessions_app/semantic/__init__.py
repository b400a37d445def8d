"""Search by meaning: the embedder the settings name (config.py), the background work
that embeds messages (embed.py, worker.py) and what is said about it (status.py). The
vectors' SQL and the per-agent matrix a search ranks by live in storage/ (vectors.py,
vector_index.py, dense.py)."""
