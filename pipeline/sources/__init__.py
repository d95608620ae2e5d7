"""sources: the acts as published: fetched from the ELI API (or read from an archive), parsed from PDF or HTML into articles, split into chunks. No database."""
