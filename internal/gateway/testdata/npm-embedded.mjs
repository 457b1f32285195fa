// The sec34 client: the official TypeScript SDK client, with an API key,
// asks reach for what server-everything embeds resources in (a tool's
// result, a prompt) and reads a resource, and prints what it got as one
// JSON object. Usage: node npm-embedded.mjs http://127.0.0.1:PORT/mcp KEY
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
const client = new Client({ name: "npm-embedded", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(url, {
  requestInit: { headers: { Authorization: `Bearer ${process.argv[3]}` } },
}));
const attempt = async (f) => {
  try {
    return await f();
  } catch (e) {
    return { thrown: String(e), code: e.code ?? null };
  }
};
const out = {};
for (const id of [1, 2]) {
  out[`tool${id}`] = await attempt(() => client.callTool({ name: "everything__get-resource-reference", arguments: { resourceType: "Text", resourceId: id } }));
  out[`prompt${id}`] = await attempt(() => client.getPrompt({ name: "everything__resource-prompt", arguments: { resourceType: "Text", resourceId: String(id) } }));
  out[`read${id}`] = await attempt(() => client.readResource({ uri: `demo://resource/dynamic/text/${id}` }));
}
out.readSpelled = await attempt(() => client.readResource({ uri: "demo://resource/dynamic/text/2?again" }));
console.log(JSON.stringify(out));
await client.close();
