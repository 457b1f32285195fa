// session-restart.mjs: the MCP TypeScript SDK 1.x's Streamable HTTP client
// (which LlamaIndex TS and mcp-use build on) on its default settings,
// across a restart of reach serve. It opens a session and calls a tool,
// prints {"ready": true, "session": ID}, waits for a line on stdin (the
// test restarts reach meanwhile), calls again on the same transport, and
// prints what it got as one JSON line. The 1.x client never initializes
// again on a 404 (typescript-sdk#1708): the second call works only if
// reach takes the session over.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = process.argv[2];
const out = {};
const call = async (id) => {
  try {
    const r = await client.callTool({ name: 'shop__search', arguments: { id } });
    return { isError: !!r.isError, text: r.content?.[0]?.text };
  } catch (e) {
    return { thrown: String(e?.message ?? e) };
  }
};
const client = new Client({ name: 'sdk1-restart', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(url));
client.onerror = () => {}; // the event stream breaks while reach restarts
try {
  await client.connect(transport);
  out.before = await call('a');
  console.log(JSON.stringify({ ready: true, session: transport.sessionId }));
  await new Promise((resolve) => process.stdin.once('data', resolve));
  out.after = await call('b');
  out.again = await call('c');
  out.session = transport.sessionId;
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
process.exit(0);
