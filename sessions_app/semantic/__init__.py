"""Search by meaning: the embedder the settings name (config.py), the background work
that embeds messages (embed.py, worker.py) and the per-agent vectors a search ranks by
(index.py). SQL lives in storage/vectors.py."""
