// tracing.mjs runs OpenAI Agents as docs/frameworks/openai-agents.md gives
// it, its model and MCP tools through reach, with OPENAI_API_KEY set to a
// reach key (what the page says to give the OpenAI client with auth:), and
// records what the SDK sends to OpenAI's trace ingest endpoint (answered
// here, as there is no network): with TRACING=off, after the page's
// setTracingDisabled(true). The gateway's tests
// (frameworks_tracing_test.go) copy it beside the frameworks' node_modules
// and read the JSON line it prints last: {ok, error, ingest: [the
// Authorization header of each trace export]}.
//
//   MODEL_URL  the OpenAI-compatible base URL (reach's /v1)
//   MCP_URL    reach's MCP endpoint
//   TRACING    off: the page's setTracingDisabled(true)

const { MODEL_URL, MCP_URL, TRACING } = process.env;
const ingest = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = typeof input === 'string' ? input : input.url ?? String(input);
  if (url.includes('/traces/ingest')) {
    const h = new Headers(init?.headers);
    ingest.push(h.get('authorization') ?? '');
    return Promise.resolve(new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } }));
  }
  return realFetch(input, init);
};

function out(v) {
  return new Promise((resolve) => process.stdout.write(JSON.stringify(v) + '\n', resolve));
}

const { Agent, run, MCPServerStreamableHttp, setDefaultOpenAIClient, setTracingDisabled, getGlobalTraceProvider } = await import('@openai/agents');
const { default: OpenAI } = await import('openai');
if (TRACING === 'off') setTracingDisabled(true);
setDefaultOpenAIClient(new OpenAI({ baseURL: MODEL_URL, apiKey: process.env.OPENAI_API_KEY }));
const reach = new MCPServerStreamableHttp({ url: MCP_URL, name: 'reach' });
await reach.connect();
let result = { ok: true };
try {
  const agent = new Agent({ name: 'assistant', instructions: 'Use the tools.', model: 'scripted', mcpServers: [reach] });
  const r = await run(agent, 'look it up', { stream: true, maxTurns: 4 });
  for await (const _ of r.toStream()) { /* drain */ }
  await r.completed;
} catch (e) {
  result = { ok: false, error: String(e?.message ?? e).slice(0, 500) };
} finally {
  await reach.close();
}
await getGlobalTraceProvider().forceFlush();
await out({ ...result, ingest });
