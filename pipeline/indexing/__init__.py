"""indexing: getting acts in and searchable: one ingest call (a request, checked once), each act ingested, the newest consolidated text, sync, and the embedding worker that drains the queue."""
