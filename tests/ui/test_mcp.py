"""The running app through a real MCP client (the `mcp` package's own streamable-HTTP client), as an agent meets
it: the tools are listed with their choices and descriptions, and every one of them answers with the shipped model
and noise."""

import asyncio
import json

import pytest

pytestmark = pytest.mark.slow  # the served app through an MCP client: `make test-fast` leaves it out

pytest.importorskip("mcp")

CALLS = {  # one successful call per tool, with the shipped model and noise; what each result must say
    "load_model": ({"model": "idk"}, "loaded"),
    "answer": ({"model": "idk", "person": "2", "photo": 5}, "unlearned + δ"),
    "verdict": ({"model": "idk", "person": "2"}, "δ brings back"),
    "embedding_map": ({"model": "idk", "person": "2"}, "Map of"),
    "optimise": ({"model": "idk", "eps": 16, "steps": 5, "denoiser": "gaussian", "stealth": 100}, "done: 5 steps"),
    "stop": ({}, "nothing is running to stop"),
    "audit": ({"model": "idk"}, "above control"),
    "batch": ({"model": "idk"}, "Against random noise of the same ε"),
}


async def session_calls(url: str) -> tuple[list, dict]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(url + "gradio_api/mcp/") as (read, write, _), ClientSession(read, write) as s:
        await s.initialize()
        tools = (await s.list_tools()).tools
        results = {}
        for tool in tools:
            args, _ = CALLS[tool.name]
            results[tool.name] = await asyncio.wait_for(s.call_tool(tool.name, args), 600)
        return tools, results


@pytest.fixture(scope="module")
def mcp_session(app_url):
    return asyncio.run(session_calls(app_url))


def test_the_tools_are_listed_with_their_choices_and_descriptions(mcp_session):
    tools, _ = mcp_session
    by_name = {t.name: t for t in tools}
    assert set(by_name) == set(CALLS), set(by_name)
    answer = by_name["answer"].inputSchema
    assert "2" in answer["properties"]["person"]["enum"] and len(answer["properties"]["person"]["enum"]) == 100
    assert answer["properties"]["noise_source"]["enum"] == ["shipped", "uploaded", "optimised"]
    assert answer.get("required", []) == [] or set(answer["required"]) <= {"model"}, "optional inputs are optional"
    assert "optimised" not in answer["properties"], "the page's own state is no tool input"
    for tool in tools:
        assert tool.description and len(tool.description) > 20, tool.name
        for name, prop in tool.inputSchema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} is undocumented"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_tool_answers(mcp_session, name):
    _, results = mcp_session
    result = results[name]
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not result.isError, f"{name}: {text[:500]}"
    assert CALLS[name][1] in text, f"{name}: {text[:500]}"


@pytest.mark.parametrize("name", sorted(set(CALLS) - {"stop"}))
def test_every_result_is_words_then_json_with_no_html_plot_or_server_path(mcp_session, name):
    """What a model reads: a text, then the same result as JSON; no mark-up, no plot JSON, no folder of ours."""
    _, results = mcp_session
    texts = [c.text for c in results[name].content if getattr(c, "type", "") == "text"]
    words, data = texts[0], json.loads(texts[1])
    assert isinstance(data, dict) and data, name
    whole = " ".join(texts)
    for raw in ("<div", "<table", "<td", "<b>", "**", '"layout"', "plotly", "/tmp/", "/work/", "/home/", "file="):
        assert raw not in whole, (name, raw, whole[:300])
    assert len(words) < 20_000, (name, len(words))
    if name == "optimise":  # its δ comes back as a link of the app's own: a token, not where the server keeps it
        links = [t for t in texts[2:] if "/gradio_api/noise/" in t and t.endswith(".safetensors")]
        assert links and data["noise"] == links[0], texts[2:]


def test_the_schema_endpoint_lists_the_same_tools(app_url):
    import urllib.request

    schema = json.loads(urllib.request.urlopen(app_url + "gradio_api/mcp/schema", timeout=30).read())
    names = {t["name"] for t in schema} if isinstance(schema, list) else set(schema)
    assert names == set(CALLS)
