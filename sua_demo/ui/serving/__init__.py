"""How the page is served: launch settings and routes, the Gradio parts, the API and MCP tools, handouts, the
upload sweep."""
