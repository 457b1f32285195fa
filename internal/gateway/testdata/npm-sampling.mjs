// The npm sampling and cancellation test's client: the official TypeScript
// SDK client talks to reach over Streamable HTTP and prints what it saw as
// one JSON object. Usage: node npm-sampling.mjs http://127.0.0.1:PORT/mcp [listenMs]
//
//  1. A client that declares the sampling capability calls
//     everything__trigger-sampling-request: server-everything asks for a
//     completion (sampling/createMessage), reach forwards it to this client,
//     which answers with a fixed text.
//  2. Cancel mid-call: everything__trigger-long-running-operation (30s, 15
//     steps) is aborted with an AbortController
//     - by the sampling client at its first progress notification (reach
//       calls the upstream through the SDK, on the client's own session);
//     - by a client without the capability at its first progress
//       notification (reach calls the upstream with its lean client);
//     - by that client again, without asking for progress (reach's lean
//       front answers the call), once reach's API shows the call executing.
//     Every progress notification that reaches the transport is recorded, so
//     one that arrives after the abort shows even though the SDK no longer
//     has a handler for it; each client then keeps listening for listenMs (a
//     few steps of the operation) and checks that its session still works.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const ANSWER = "sampled by the npm client through reach";
const ABORT_REASON = "reach-test-abort";

const url = new URL(process.argv[2]);
const listenAfterAbortMs = Number(process.argv[3] ?? 5000);

// open connects a client and records the progress notifications and the
// errors (such as a message for an unknown id) it sees.
async function open(name, sampling) {
  const s = { sampled: [], errors: [], wire: [], abortedAt: null };
  const client = new Client({ name, version: "1.0.0" }, { capabilities: sampling ? { sampling: {} } : {} });
  if (sampling) {
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      s.sampled.push({
        text: req.params.messages?.[0]?.content?.text ?? null,
        meta: req.params._meta ?? null,
      });
      return { model: "npm-test-model", role: "assistant", content: { type: "text", text: ANSWER }, stopReason: "endTurn" };
    });
  }
  client.onerror = (e) => s.errors.push(String(e));
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  const onmessage = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    if (msg && msg.method === "notifications/progress") {
      s.wire.push({ token: msg.params?.progressToken ?? null, progress: msg.params?.progress, afterAbort: s.abortedAt !== null });
    }
    onmessage?.(msg, extra);
  };
  s.client = client;
  s.call = async (tool, args, options) => {
    try {
      return await client.callTool({ name: tool, arguments: args }, undefined, options);
    } catch (e) {
      return { thrown: String(e) };
    }
  };
  return s;
}

const LONG = { name: "everything__trigger-long-running-operation", arguments: { duration: 30, steps: 15 } };

// settle waits listenMs after an abort, then checks the session still works.
async function settle(s, out) {
  out.aborted = s.abortedAt !== null;
  await new Promise((r) => setTimeout(r, listenAfterAbortMs));
  out.wire = s.wire;
  out.echoAfter = await s.call("everything__echo", { message: "still here" });
  out.errors = s.errors;
  return out;
}

// cancelAtProgress starts the long operation on s and aborts it at its
// first progress notification.
async function cancelAtProgress(s) {
  const ac = new AbortController();
  const out = { progress: [] };
  try {
    out.resolved = await s.client.callTool(LONG, undefined, {
      signal: ac.signal,
      timeout: 120000,
      onprogress: (p) => {
        out.progress.push({ progress: p.progress, afterAbort: s.abortedAt !== null });
        if (s.abortedAt === null) {
          s.abortedAt = Date.now();
          ac.abort(ABORT_REASON);
        }
      },
    });
  } catch (e) {
    out.rejected = String(e);
  }
  return settle(s, out);
}

// cancelWhenExecuting starts the long operation on s without a progress
// token and aborts it once reach's graph of the request shows it executing.
async function cancelWhenExecuting(s) {
  const echo = await s.call("everything__echo", { message: "which request am I?" });
  const rid = echo?._meta?.["reach/request"];
  const ac = new AbortController();
  const out = { request: rid ?? null };
  const call = s.client.callTool(LONG, undefined, { signal: ac.signal, timeout: 120000 });
  call.catch(() => {}); // observed below
  const graph = `${url.origin}/v1/requests/${rid}/graph?format=json`;
  for (let i = 0; i < 400 && !out.sawExecuting; i++) {
    const g = await (await fetch(graph)).json();
    out.sawExecuting = (g.frames ?? []).some((f) => f.name === LONG.name && f.status === "executing");
    if (!out.sawExecuting) await new Promise((r) => setTimeout(r, 50));
  }
  s.abortedAt = Date.now();
  ac.abort(ABORT_REASON);
  try {
    out.resolved = await call;
  } catch (e) {
    out.rejected = String(e);
  }
  return settle(s, out);
}

const out = { answer: ANSWER, abortReason: ABORT_REASON };
const sampler = await open("npm-sampling", true);
const plain = await open("npm-plain", false);
const front = await open("npm-lean-front", false);
out.tools = (await sampler.client.listTools()).tools.map((t) => t.name);

out.sampling = await sampler.call("everything__trigger-sampling-request", { prompt: "say something", maxTokens: 50 });
out.sampled = sampler.sampled;

[out.cancelSampling, out.cancelPlain, out.cancelFront] = await Promise.all([
  cancelAtProgress(sampler),
  cancelAtProgress(plain),
  cancelWhenExecuting(front),
]);
for (const s of [sampler, plain, front]) await s.client.close();
console.log(JSON.stringify(out));
