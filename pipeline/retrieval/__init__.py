"""retrieval: finding the articles: hybrid search in SQL, named articles, the refusal rule, evaluation on question files."""
