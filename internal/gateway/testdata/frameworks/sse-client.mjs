// sse-client.mjs: clients of the HTTP+SSE transport (protocol 2024-11-05)
// against reach's /sse on their default settings: OpenAI Agents'
// MCPServerSSE, and the MCP TypeScript SDK 1.x's SSEClientTransport, which
// LlamaIndex (useSSETransport) and mcp-use ("transport": "sse") use too.
// Each lists the tools and calls a few; it prints what it got as one JSON
// line.
import { MCPServerSSE } from '@openai/agents';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';

const url = process.argv[2];
const out = {};
const attempt = async (f) => {
  try {
    return await f();
  } catch (e) {
    return { thrown: String(e?.message ?? e) };
  }
};
try {
  const agents = new MCPServerSSE({ url, name: 'reach' });
  await agents.connect();
  out.agentsTools = (await agents.listTools()).map((t) => t.name).sort();
  out.agentsEcho = await attempt(() => agents.callTool('up__echo', { text: 'hi' }));
  out.agentsForbidden = await attempt(() => agents.callTool('up__slow', { text: 'x' }));
  await agents.close();

  const client = new Client({ name: 'sdk1-sse', version: '1.0.0' });
  await client.connect(new SSEClientTransport(new URL(url)));
  out.server = client.getServerVersion()?.name;
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  out.loop = [];
  for (let i = 0; i < 3; i++) {
    out.loop.push(await attempt(() => client.callTool({ name: 'up__echo', arguments: { text: 'same' } })));
  }
  out.forbidden = await attempt(() => client.callTool({ name: 'up__slow', arguments: { text: 'x' } }));
  await client.close();
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
process.exit(0);
