// fw33b-driver.mjs: the TypeScript SDK's MCP client, connected to reach once
// (argv[2], its /mcp), driven by the test: each line on stdin is a JSON
// command, {"call": NAME, "args": {...}} or {"list": true}, and each answer
// one JSON line on stdout: {isError, text, code} of a call (code: reach's
// refusal code, from _meta), or {tools: [names]}; a thrown error is
// {thrown}. The session stays open between commands; {"end": true} ends
// it (DELETE, as a client that is done does) and the script.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import readline from 'node:readline';

const client = new Client({ name: 'fw33b-driver', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
await client.connect(transport);
console.log(JSON.stringify({ ready: true }));
for await (const line of readline.createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  let out;
  try {
    if (cmd.end) {
      await transport.terminateSession();
      await client.close();
      console.log(JSON.stringify({ ended: true }));
      process.exit(0);
    } else if (cmd.list) {
      out = { tools: (await client.listTools()).tools.map((t) => t.name).sort() };
    } else {
      const r = await client.callTool({ name: cmd.call, arguments: cmd.args ?? {} });
      const meta = r._meta ?? {};
      const err = meta['reach/error'];
      out = { isError: r.isError === true, text: (r.content ?? []).map((c) => c.text ?? '').join('\n'), code: err?.code ?? '' };
    }
  } catch (e) {
    out = { thrown: String(e?.message ?? e) };
  }
  console.log(JSON.stringify(out));
}
await client.close();
process.exit(0);
