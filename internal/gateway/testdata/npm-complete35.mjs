// The sec35 client: the official TypeScript SDK client, with an API key,
// asks reach to complete server-everything's text resource template's
// resourceId with 1 and 2, and prints the values it got as one JSON
// object. Usage: node npm-complete35.mjs http://127.0.0.1:PORT/mcp KEY
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
const client = new Client({ name: "npm-complete35", version: "1.0.0" });
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
for (const id of ["1", "2"]) {
  out[`complete${id}`] = await attempt(() => client.complete({
    ref: { type: "ref/resource", uri: "demo://resource/dynamic/text/{resourceId}" },
    argument: { name: "resourceId", value: id },
  }));
}
console.log(JSON.stringify(out));
await client.close();
