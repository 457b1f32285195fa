// The strangers38 list_changed client: two official TypeScript SDK clients
// talk to reach in front of server-everything, and it prints what the
// first saw as one JSON object. Usage: node npm-listchanged38.mjs http://127.0.0.1:PORT/mcp
//
// Client A lists the tools and counts the notifications/tools/list_changed
// it gets. Client B, which can sample (reach gives it an upstream session
// of its own, on which server-everything registers the tools of a client
// that can sample and says its list changed), calls a tool. reach lists
// the upstream's tools again: they are the same, and A is told nothing.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const url = new URL(process.argv[2]);
const out = { changed: 0 };
const a = new Client({ name: "listchanged38-a", version: "1.0.0" });
a.setNotificationHandler(ToolListChangedNotificationSchema, () => { out.changed++; });
await a.connect(new StreamableHTTPClientTransport(url));
out.before = (await a.listTools()).tools.map((t) => t.name).sort();
// Whatever the gateway's start announced is over before B comes.
await new Promise((r) => setTimeout(r, 1000));
out.changed = 0;
for (let i = 0; i < 3; i++) {
  const b = new Client({ name: `listchanged38-b${i}`, version: "1.0.0" }, { capabilities: { sampling: {} } });
  b.setRequestHandler(CreateMessageRequestSchema, async () =>
    ({ model: "m", role: "assistant", content: { type: "text", text: "x" } }));
  await b.connect(new StreamableHTTPClientTransport(url));
  out[`echo${i}`] = await b.callTool({ name: "everything__echo", arguments: { message: `b${i}` } });
  await b.close();
}
// server-everything announces its list on B's session at once; reach lists
// it again and would tell A within a few milliseconds.
await new Promise((r) => setTimeout(r, 3000));
out.after = (await a.listTools()).tools.map((t) => t.name).sort();
await a.close();
console.log(JSON.stringify(out));
process.exit(0);
