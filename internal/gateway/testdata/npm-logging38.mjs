// The strangers38 logging client: the official TypeScript SDK client, on
// its strict setting (enforceStrictCapabilities: it sends a request only
// when the server declared the capability for it), talks to reach in front
// of server-everything and prints what it saw as one JSON object.
// Usage: node npm-logging38.mjs http://127.0.0.1:PORT/mcp [KEY]
//
//  1. Client A, which can sample and elicit (reach gives it an upstream
//     session of its own), sets its logging level to debug and calls
//     everything__toggle-simulated-logging: server-everything then logs to
//     that session every 5 seconds, outside any call. A records the log
//     messages it gets, and which came after the call returned.
//  2. Client B, which can sample too, sets debug as well but turns nothing
//     on: it must get none of A's messages.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const url = new URL(process.argv[2]);
const key = process.argv[3];

async function open(name) {
  const s = { logs: [], errors: [], returned: false };
  const client = new Client({ name, version: "1.0.0" },
    { capabilities: { sampling: {}, elicitation: {} }, enforceStrictCapabilities: true });
  client.setRequestHandler(CreateMessageRequestSchema, async () =>
    ({ model: "m", role: "assistant", content: { type: "text", text: "sampled" } }));
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) =>
    s.logs.push({ level: n.params.level, data: String(n.params.data), afterCall: s.returned }));
  client.onerror = (e) => s.errors.push(String(e));
  await client.connect(new StreamableHTTPClientTransport(url,
    key ? { requestInit: { headers: { Authorization: `Bearer ${key}` } } } : undefined));
  s.client = client;
  return s;
}

const attempt = async (f) => {
  try {
    return (await f()) ?? {};
  } catch (e) {
    return { thrown: String(e?.message ?? e) };
  }
};

const out = {};
const a = await open("logging38-a");
const b = await open("logging38-b");
out.logging = a.client.getServerCapabilities()?.logging ?? null;
out.setLevelA = await attempt(() => a.client.setLoggingLevel("debug"));
out.setLevelB = await attempt(() => b.client.setLoggingLevel("debug"));
out.toggle = await attempt(() => a.client.callTool({ name: "everything__toggle-simulated-logging", arguments: {} }));
a.returned = true;
// server-everything logs every 5 seconds: wait for two messages after the
// call returned, for at most 30 seconds.
for (let i = 0; i < 300 && a.logs.filter((l) => l.afterCall).length < 2; i++) {
  await new Promise((r) => setTimeout(r, 100));
}
out.toggleOff = await attempt(() => a.client.callTool({ name: "everything__toggle-simulated-logging", arguments: {} }));
out.a = { logs: a.logs, errors: a.errors };
out.b = { logs: b.logs, errors: b.errors };
await a.client.close();
await b.client.close();
console.log(JSON.stringify(out));
process.exit(0);
