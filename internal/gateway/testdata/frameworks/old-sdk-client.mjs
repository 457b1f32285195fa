// old-sdk-client.mjs: a release of the MCP TypeScript SDK 1.x whose newest
// protocol is an older one (2025-03-26 or 2025-06-18; its package's name is
// argv[2]) against reach over Streamable HTTP, on its defaults: it lists the
// tools, calls a few, repeats one call until reach refuses it, and aborts a
// slow call once it reads a line on stdin (closing at a second one); it prints what it got as one JSON
// line. Each release checks every answer against its own protocol's schema
// (2025-06-18 also checks structured content against the tool's output
// schema), so an answer reach shaped for a newer client is an error here.
import { createInterface } from 'node:readline';

const pkg = process.argv[2];
const url = process.argv[3];
const { Client } = await import(`${pkg}/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${pkg}/client/streamableHttp.js`);

// The version reach answered initialize with, read off the wire.
const out = {};
const fetch0 = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const res = await fetch0(input, init);
  if (typeof init?.body === 'string' && init.body.includes('"initialize"')) {
    const text = await res.clone().text();
    out.protocol = /"protocolVersion":"([^"]+)"/.exec(text)?.[1];
  }
  return res;
};

const client = new Client({ name: 'old-sdk-client', version: '1.0.0' });
const call = async (name, args, options) => {
  try {
    return await client.callTool({ name, arguments: args }, undefined, options);
  } catch (e) {
    return { thrown: String(e?.message ?? e) };
  }
};
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  out.echo = await call('up__echo', { text: 'hi' });
  out.add = await call('up__add', { a: 2, b: 3 });
  out.fail = await call('up__fail', {});
  out.forbidden = await call('up__ticks', { n: 1 });
  out.badArgs = await call('up__add', { a: 'two' });
  out.loop = [];
  for (let i = 0; i < 3; i++) out.loop.push(await call('up__echo', { text: 'again' }));
  const abort = new AbortController();
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  lines.next().then(() => abort.abort('the user stopped it'));
  out.aborted = await call('up__slow', { text: 'x' }, { signal: abort.signal });
  out.after = await call('up__echo', { text: 'after' });
  // Open until a second line: the test sees the upstream call end first,
  // so that the session's close cannot be what ended it.
  await lines.next();
  await client.close();
} catch (e) {
  out.error = String(e?.stack ?? e);
}
console.log(JSON.stringify(out));
process.exit(0);
