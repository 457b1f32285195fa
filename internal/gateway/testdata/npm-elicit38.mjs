// The strangers38 elicitation client: the official TypeScript SDK client,
// which can elicit, calls server-everything's trigger-elicitation-request
// through reach and answers its form with two fields of it, leaving the
// others (several of which have defaults) unanswered; server-everything
// echoes the answer it got. Prints what it saw as one JSON object.
// Usage: node npm-elicit38.mjs http://127.0.0.1:PORT/mcp
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const ANSWER = { name: "Ada Lovelace", check: true };
const out = { answered: ANSWER, asked: null };
const client = new Client({ name: "elicit38", version: "1.0.0" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  out.asked = Object.keys(req.params.requestedSchema?.properties ?? {});
  out.defaults = Object.entries(req.params.requestedSchema?.properties ?? {})
    .filter(([, p]) => p.default !== undefined).map(([k]) => k);
  return { action: "accept", content: ANSWER };
});
await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
try {
  const res = await client.callTool({ name: "everything__trigger-elicitation-request", arguments: {} });
  out.result = res;
  // server-everything echoes the answer it got after "Raw result: ".
  const raw = res.content?.map((c) => c.text ?? "").join("\n").split("Raw result: ")[1];
  out.got = raw ? JSON.parse(raw).content ?? null : null;
} catch (e) {
  out.thrown = String(e?.message ?? e);
}
await client.close();
console.log(JSON.stringify(out));
process.exit(0);
