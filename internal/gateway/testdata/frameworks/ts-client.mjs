// ts-client.mjs: the MCP TypeScript client of the sessionless protocol
// (@modelcontextprotocol/client) against reach, on its default version
// negotiation: it lists the tools and calls a few, and prints what it got
// as one JSON line. The client checks every answer against the protocol's
// schema, so an answer reach got wrong is an error here.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = process.argv[2];
const client = new Client({ name: 'ts-client', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
const out = {};
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  out.protocol = client.getNegotiatedProtocolVersion();
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  const call = async (name, args) => {
    try {
      return await client.callTool({ name, arguments: args });
    } catch (e) {
      return { thrown: String(e?.message ?? e) };
    }
  };
  out.echo = await call('up__echo', { text: 'hi' });
  out.add = await call('up__add', { a: 2, b: 3 });
  out.fail = await call('up__fail', {});
  out.forbidden = await call('up__slow', { text: 'x' });
  out.badArgs = await call('up__add', { a: 'two' });
  await client.close();
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
process.exit(0);
