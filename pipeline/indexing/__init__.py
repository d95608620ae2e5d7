"""indexing: getting acts in and searchable: ingest (one act, a whole call, the newest text), sync, the embedders and the embedding worker."""
