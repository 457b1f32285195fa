// The strangers38 session resource client: the official TypeScript SDK
// client talks to reach in front of server-everything and prints what it
// saw as one JSON object. Usage: node npm-session38.mjs http://127.0.0.1:PORT/mcp [KEY]
//
//  1. Client A, which can sample (reach gives it an upstream session of its
//     own), calls everything__gzip-file-as-resource: server-everything makes
//     a resource for that session alone and links to it in the result. A
//     reads the link's URI.
//  2. Client B, which can sample too (a session of its own as well), reads
//     the same URI: it is A's, not B's.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const url = new URL(process.argv[2]);
const key = process.argv[3];

async function open(name) {
  const client = new Client({ name, version: "1.0.0" }, { capabilities: { sampling: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async () =>
    ({ model: "m", role: "assistant", content: { type: "text", text: "sampled" } }));
  await client.connect(new StreamableHTTPClientTransport(url,
    key ? { requestInit: { headers: { Authorization: `Bearer ${key}` } } } : undefined));
  return client;
}

const attempt = async (f) => {
  try {
    return (await f()) ?? {};
  } catch (e) {
    return { thrown: String(e?.message ?? e), code: e?.code ?? null };
  }
};

const out = {};
const a = await open("session38-a");
const b = await open("session38-b");
// B makes its own session first, with a call of its own.
out.echoB = await attempt(() => b.callTool({ name: "everything__echo", arguments: { message: "b" } }));
out.gzip = await attempt(() => a.callTool({ name: "everything__gzip-file-as-resource",
  arguments: { name: "session38.gz", data: "data:text/plain;base64,aGVsbG8gZnJvbSBh" } }));
out.uri = out.gzip?.content?.find((c) => c.type === "resource_link")?.uri ?? null;
if (out.uri) {
  out.readA = await attempt(() => a.readResource({ uri: out.uri }));
  out.readB = await attempt(() => b.readResource({ uri: out.uri }));
}
await a.close();
await b.close();
console.log(JSON.stringify(out));
process.exit(0);
