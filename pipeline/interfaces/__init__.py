"""interfaces: the faces (the CLI, the MCP server, the web page): parse input, call pipeline.Service,
render what it returns. A face imports only pipeline.service and pipeline.core."""
