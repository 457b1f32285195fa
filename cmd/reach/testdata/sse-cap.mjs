// sse-cap.mjs: the MCP TypeScript SDK 1.x's SSEClientTransport (OpenAI
// Agents' MCPServerSSE, LlamaIndex and mcp-use on "sse" use it) against a
// reach whose sessions_per_principal is argv[3]: it opens one /sse client
// more than the bound, each calling a tool, then closes the first and
// connects again (until the gateway has seen the stream end, or 10 s). It
// prints what each got as one JSON line.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';

const url = process.argv[2];
const max = Number(process.argv[3]);
const open = async (name) => {
  const client = new Client({ name, version: '1.0.0' });
  try {
    await client.connect(new SSEClientTransport(new URL(url)));
    const r = await client.callTool({ name: 'shop__search', arguments: { id: name } });
    return { client, got: { isError: !!r.isError, text: r.content?.[0]?.text } };
  } catch (e) {
    return { got: { thrown: String(e?.message ?? e), code: e?.code } };
  }
};
const out = { clients: [] };
const clients = [];
try {
  for (let i = 0; i <= max; i++) {
    const { client, got } = await open(`sse-${i}`);
    clients.push(client);
    out.clients.push(got);
  }
  await clients[0].close();
  for (const deadline = Date.now() + 10000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
    const { client, got } = await open('again');
    out.again = got;
    if (client) break;
  }
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
process.exit(0);
