// session-kill.mjs: the MCP TypeScript SDK 1.x's Streamable HTTP client
// (which LlamaIndex TS and mcp-use build on) on its default settings,
// opening its session while reach serve is stopped at a crash point and
// killed. It prints {"connected": ..., "session": ID or ""} once its
// connect settles (the id is the one the initialize answer gave it, if it
// had one), waits for a line on stdin (the test starts reach again
// meanwhile), then calls a tool twice, on the same client if it
// connected, else on a new one, as an application would, and prints what
// it got as one JSON line. The 1.x client never initializes again on a
// 404 (typescript-sdk#1708): a client that connected on an id reach then
// forgot stays broken.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL(process.argv[2]);
const open = () => {
  const client = new Client({ name: 'sdk1-kill', version: '1.0.0' });
  client.onerror = () => {}; // the event stream breaks at the kill
  return { client, transport: new StreamableHTTPClientTransport(url) };
};
let { client, transport } = open();
const first = { connected: false };
try {
  await client.connect(transport);
  first.connected = true;
} catch (e) {
  first.error = String(e?.message ?? e);
}
first.session = transport.sessionId ?? '';
console.log(JSON.stringify(first));
await new Promise((resolve) => process.stdin.once('data', resolve));

const out = {};
const call = async (id) => {
  try {
    const r = await client.callTool({ name: 'shop__search', arguments: { id } });
    return { isError: !!r.isError, text: r.content?.[0]?.text };
  } catch (e) {
    return { thrown: String(e?.message ?? e) };
  }
};
try {
  if (!first.connected) {
    ({ client, transport } = open());
    await client.connect(transport);
  }
  out.after = await call('b');
  out.again = await call('c');
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
process.exit(0);
