// abort-clients.mjs: one MCP client of the frameworks (argv[2]) calls reach's
// up__slow with an AbortSignal, the way each lets an application stop a tool
// call, and aborts it when a line arrives on stdin; then calls up__echo on the
// same client, and closes it at a second line. It prints one JSON line: the negotiated protocol where the
// client tells it, what the aborted call gave (thrown or a result) and the
// call after it.
import { createInterface } from 'node:readline';

const which = process.argv[2];
const url = process.argv[3];
const out = { which };
const abort = new AbortController();
const lines = createInterface({ input: process.stdin });
const stdin = lines[Symbol.asyncIterator]();
stdin.next().then(() => abort.abort(new Error('the user stopped it')));
// closed waits for the second line: the client stays open until the test
// has seen the upstream call end, so that its close does not end it.
const closed = async () => {
  await stdin.next();
};
const settle = async (p) => {
  try {
    return await p;
  } catch (e) {
    return { thrown: String(e?.message ?? e) };
  }
};
try {
  if (which === 'client' || which === 'client-2025-11-25') {
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const opts = which === 'client' ? { versionNegotiation: { mode: 'auto' } } : {};
    const client = new Client({ name: 'abort-client', version: '1.0.0' }, opts);
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    out.protocol = client.getNegotiatedProtocolVersion();
    out.aborted = await settle(client.callTool({ name: 'up__slow', arguments: { text: 'x' } }, { signal: abort.signal }));
    out.after = await settle(client.callTool({ name: 'up__echo', arguments: { text: 'after' } }));
    await closed();
    await client.close();
  } else if (which === 'sdk1') {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const client = new Client({ name: 'abort-sdk1', version: '1.0.0' });
    const tr = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(tr);
    out.protocol = tr.protocolVersion;
    out.aborted = await settle(client.callTool({ name: 'up__slow', arguments: { text: 'x' } }, undefined, { signal: abort.signal }));
    out.after = await settle(client.callTool({ name: 'up__echo', arguments: { text: 'after' } }));
    await closed();
    await client.close();
  } else if (which === 'ai-sdk') {
    const { createMCPClient } = await import('@ai-sdk/mcp');
    const client = await createMCPClient({ transport: { type: 'http', url } });
    const tools = await client.tools();
    const opts = (id) => ({ toolCallId: id, messages: [], abortSignal: id === 'c1' ? abort.signal : undefined });
    out.aborted = await settle(tools.up__slow.execute({ text: 'x' }, opts('c1')));
    out.after = await settle(tools.up__echo.execute({ text: 'after' }, opts('c2')));
    await closed();
    await client.close();
  } else if (which === 'langchain') {
    const { MultiServerMCPClient } = await import('@langchain/mcp-adapters');
    const client = new MultiServerMCPClient({ mcpServers: { reach: { url } } });
    const tools = await client.getTools();
    const tool = (name) => tools.find((t) => t.name.endsWith(name));
    out.aborted = await settle(tool('up__slow').invoke({ text: 'x' }, { signal: abort.signal }));
    out.after = await settle(tool('up__echo').invoke({ text: 'after' }));
    await closed();
    await client.close();
  } else {
    throw new Error(`no client ${which}`);
  }
} catch (e) {
  out.error = String(e?.stack ?? e);
}
lines.close();
console.log(JSON.stringify(out));
process.exit(0);
