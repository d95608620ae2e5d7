"""answering: from retrieved fragments to a cited answer: prompts, citations, the model client, the offline answer."""
