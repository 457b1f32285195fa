// The npm interoperability test's client: the official TypeScript SDK
// client talks to reach over Streamable HTTP and prints what it saw as one
// JSON object. Usage: node npm-client.mjs http://127.0.0.1:PORT/mcp
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
const client = new Client({ name: "npm-interop", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(url));

const out = {};
const listed = await client.listTools();
out.tools = Object.fromEntries(listed.tools.map((t) => [t.name, t.annotations ?? null]));

const call = async (name, args, options) => {
  try {
    return await client.callTool({ name, arguments: args }, undefined, options);
  } catch (e) {
    return { thrown: String(e) };
  }
};
out.echo = await call("everything__echo", { message: "hi from node" });
out.sum = await call("everything__get-sum", { a: 2, b: 3 });
out.badSum = await call("everything__get-sum", { a: "two", b: 3 });
out.create = await call("memory__create_entities", {
  entities: [{ name: "reach", entityType: "project", observations: ["a gateway between agents and tools"] }],
});
out.read = await call("memory__read_graph", {});
out.remove = await call("memory__delete_entities", { entityNames: ["reach"] });
// The approval flow: the pending call is approved through reach's API, then
// the agent's retry of the same call runs it, once; a further retry gets
// the recorded result without running it again.
const base = url.origin;
const pending = await (await fetch(base + "/v1/approvals?status=pending")).json();
const ap = (pending.approvals ?? []).find((a) => a.tool === "memory__delete_entities");
out.approvalTool = ap ? ap.tool : null;
if (ap) {
  const res = await fetch(`${base}/v1/approvals/${ap.id}/approve`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ reason: "fine by me" }),
  });
  out.approveStatus = res.status;
}
out.removeApproved = await call("memory__delete_entities", { entityNames: ["reach"] });
out.removeRetried = await call("memory__delete_entities", { entityNames: ["reach"] });
out.readAfter = await call("memory__read_graph", {});
const progress = [];
out.long = await call("everything__trigger-long-running-operation", { duration: 1, steps: 3 }, {
  onprogress: (p) => progress.push(p.progress),
});
out.progress = progress;
await client.close();
console.log(JSON.stringify(out));
