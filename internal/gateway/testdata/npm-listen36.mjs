// The sec36 client: the MCP TypeScript client of the sessionless protocol
// (@modelcontextprotocol/client), with an API key, opens a
// subscriptions/listen stream for doc://b (allowed) and one for doc://a
// (forbidden), and prints what each gave as one JSON object.
// Usage: node npm-listen36.mjs http://127.0.0.1:PORT/mcp KEY
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[2]);
const client = new Client({ name: 'npm-listen36', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
const out = {};
try {
  await client.connect(new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${process.argv[3]}` } },
  }));
  out.protocol = client.getNegotiatedProtocolVersion();
  const listen = async (uri) => {
    try {
      const sub = await client.listen({ resourceSubscriptions: [uri] }, { timeout: 20000 });
      const honored = sub.honoredFilter;
      await sub.close();
      return { honored };
    } catch (e) {
      return { thrown: String(e?.message ?? e), code: e?.code ?? null, data: e?.data ?? null };
    }
  };
  out.allowed = await listen('doc://b');
  out.forbidden = await listen('doc://a');
  await client.close();
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
process.exit(0);
