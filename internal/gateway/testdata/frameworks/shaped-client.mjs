// shaped-client.mjs: the MCP TypeScript SDK's clients (argv[2]: 'sdk1', the
// 1.x SDK on 2025-11-25, or 'client', @modelcontextprotocol/client on the
// sessionless protocol) list reach's up__add (or the tool argv[4] names)
// and call it; each checks a
// result against the tool's listed output schema and throws when it does
// not match. It prints one JSON line: the listed tool and what the call gave.
const which = process.argv[2];
const url = process.argv[3];
const name = process.argv[4] ?? 'up__add';
const args = name === 'up__add' ? { a: 2, b: 3 } : {};
const out = { which };
try {
  let client;
  if (which === 'client') {
    const m = await import('@modelcontextprotocol/client');
    client = new m.Client({ name: 'shaped-client', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new m.StreamableHTTPClientTransport(new URL(url)));
  } else {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    client = new Client({ name: 'shaped-client', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  }
  out.tool = (await client.listTools()).tools.find((t) => t.name === name);
  try {
    out.add = await client.callTool({ name, arguments: args });
  } catch (e) {
    out.add = { thrown: String(e?.message ?? e) };
  }
  await client.close();
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
process.exit(0);
