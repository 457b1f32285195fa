// streak-refusals.mjs: the MCP TypeScript SDK 1.x's Streamable HTTP
// client on its default settings, one client per URL given, calling
// up__count in one request (named in _meta) in turn through each: first
// as many calls as the request's tool_calls budget allows, then as many
// again as the runtime's refusals in a row allow. It prints each call's
// {isError, text, status} as one JSON line, all calls in an array.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [request, allowed, calls, ...urls] = process.argv.slice(2);
const clients = [];
const out = [];
try {
  for (const url of urls) {
    const client = new Client({ name: 'sdk1-streak', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    clients.push(client);
  }
  const budget = { tool_calls: Number(allowed) };
  for (let n = 0; n < Number(calls); n++) {
    const client = clients[n % clients.length];
    try {
      const r = await client.callTool({
        name: 'up__count',
        arguments: { key: `k-${n}` },
        _meta: { 'reach/request': request, 'reach/budget': budget },
      });
      out.push({ isError: !!r.isError, text: r.content?.map((c) => c.text ?? '').join(''), status: r._meta?.['reach/status'] });
    } catch (e) {
      out.push({ thrown: String(e?.message ?? e) });
    }
  }
} catch (e) {
  out.push({ thrown: String(e?.stack ?? e) });
}
console.log(JSON.stringify(out));
process.exit(0);
