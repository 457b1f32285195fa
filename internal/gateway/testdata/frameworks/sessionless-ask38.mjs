// The strangers38 sessionless client: the MCP TypeScript client of the
// sessionless protocol (@modelcontextprotocol/client), negotiating the
// newest protocol (versionNegotiation auto), with handlers for sampling and
// elicitation, calls server-everything's tools that ask for them through
// reach, and prints what it got as one JSON object.
// Usage: node sessionless-ask38.mjs http://127.0.0.1:PORT/mcp
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const client = new Client({ name: 'sessionless-ask38', version: '1.0.0' },
  { capabilities: { sampling: {}, elicitation: {} }, versionNegotiation: { mode: 'auto' } });
client.setRequestHandler('sampling/createMessage', async () =>
  ({ model: 'm', role: 'assistant', content: { type: 'text', text: 'sampled' } }));
client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada' } }));
const out = {};
const attempt = async (f) => {
  try {
    return await f();
  } catch (e) {
    return { thrown: String(e?.message ?? e) };
  }
};
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
  out.protocol = client.getNegotiatedProtocolVersion();
  out.sampling = await attempt(() => client.callTool({ name: 'everything__trigger-sampling-request', arguments: { prompt: 'hi' } }));
  out.elicit = await attempt(() => client.callTool({ name: 'everything__trigger-elicitation-request', arguments: {} }));
  await client.close();
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
process.exit(0);
