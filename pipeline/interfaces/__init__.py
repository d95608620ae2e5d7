"""interfaces: the faces (the CLI, the MCP server): parse input, call pipeline.Service, render what it returns."""
