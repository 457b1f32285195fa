// subagent.mjs runs a manager agent that hands its task to a sub-agent
// through a tool, each framework's own way, on its default settings: the
// manager's model and the sub-agent's, and the sub-agent's MCP tools, all
// pointed at reach, naming nothing (no header, no request id). The gateway's
// tests (frameworks_subagent_test.go) copy it beside the frameworks'
// node_modules and read the JSON line it prints last: {ok, text, error,
// status}.
//
//   FRAMEWORK   openai-agents: the sub-agent as a tool (Agent.asTool); its
//               run's input is the string the manager's model gives the
//               tool's "input".
//               openai-agents-handoff: the manager hands the run off to the
//               researcher (handoffs, the model's transfer_to_researcher),
//               which goes on with the whole conversation; the JSON line
//               names the agent that ended the run.
//               ai-sdk: a tool whose execute runs the sub-agent
//               (generateText with the MCP tools) on the manager's "input".
//               langgraph: a tool of LangChain's that invokes a second
//               createReactAgent with the MCP tools on the manager's "input".
//   MCP_URL     the MCP endpoint (reach's /mcp)
//   MODEL_URL   the OpenAI-compatible base URL (reach's /v1)
//   TASK        the user's message to the manager
//   MAX_STEPS   each agent's step limit

const { FRAMEWORK, MCP_URL, MODEL_URL, TASK } = process.env;
const MAX_STEPS = Number(process.env.MAX_STEPS || 50);

const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = typeof input === 'string' ? input : input.url ?? String(input);
  if (url.includes('tiktoken')) return Promise.resolve(new Response('offline', { status: 503 }));
  return realFetch(input, init);
};

function describe(e) {
  const status = [e?.status, e?.statusCode, e?.cause?.status, e?.lastError?.statusCode, e?.lastError?.status].find((v) => typeof v === 'number');
  return { ok: false, error: String(e?.message ?? e).slice(0, 2000), status: status ?? null };
}

const SUB = 'Hand a task to the researcher, who has the shop\'s tools; it answers with what it found.';

async function openaiAgents() {
  const { Agent, run, MCPServerStreamableHttp, setDefaultOpenAIClient } = await import('@openai/agents');
  const { default: OpenAI } = await import('openai');
  setDefaultOpenAIClient(new OpenAI({ baseURL: MODEL_URL, apiKey: 'sk-test' }));
  const mcp = new MCPServerStreamableHttp({ url: MCP_URL, name: 'reach' });
  await mcp.connect();
  try {
    const researcher = new Agent({ name: 'researcher', instructions: 'Use the tools.', mcpServers: [mcp], model: 'scripted' });
    const manager = new Agent({
      name: 'manager', instructions: 'Delegate.', model: 'scripted',
      tools: [researcher.asTool({ toolName: 'researcher', toolDescription: SUB, runOptions: { maxTurns: MAX_STEPS } })],
    });
    const result = await run(manager, TASK, { maxTurns: MAX_STEPS });
    return { ok: true, text: String(result.finalOutput ?? '') };
  } finally {
    await mcp.close();
  }
}

// openaiAgentsHandoff hands the run itself to the researcher (a hand-off,
// OpenAI Agents' other way to delegate): the researcher goes on with the
// whole conversation, and its answer is the run's.
async function openaiAgentsHandoff() {
  const { Agent, run, MCPServerStreamableHttp, setDefaultOpenAIClient } = await import('@openai/agents');
  const { default: OpenAI } = await import('openai');
  setDefaultOpenAIClient(new OpenAI({ baseURL: MODEL_URL, apiKey: 'sk-test' }));
  const mcp = new MCPServerStreamableHttp({ url: MCP_URL, name: 'reach' });
  await mcp.connect();
  try {
    const researcher = new Agent({ name: 'researcher', instructions: 'Use the tools.', handoffDescription: SUB, mcpServers: [mcp], model: 'scripted' });
    const manager = Agent.create({ name: 'manager', instructions: 'Delegate.', model: 'scripted', handoffs: [researcher] });
    const result = await run(manager, TASK, { maxTurns: MAX_STEPS });
    return { ok: true, text: String(result.finalOutput ?? ''), agent: result.lastAgent?.name ?? null };
  } finally {
    await mcp.close();
  }
}

async function aiSDK() {
  const { generateText, stepCountIs, tool } = await import('ai');
  const { createMCPClient } = await import('@ai-sdk/mcp');
  const { createOpenAI } = await import('@ai-sdk/openai');
  const { z } = await import('zod');
  const mcp = await createMCPClient({ transport: { type: 'http', url: MCP_URL } });
  try {
    const openai = createOpenAI({ baseURL: MODEL_URL, apiKey: 'sk-test' });
    const researcher = tool({
      description: SUB,
      inputSchema: z.object({ input: z.string() }),
      execute: async ({ input }) => {
        const r = await generateText({ model: openai('scripted'), tools: await mcp.tools(), prompt: input, stopWhen: stepCountIs(MAX_STEPS) });
        return r.text;
      },
    });
    const result = await generateText({ model: openai('scripted'), tools: { researcher }, prompt: TASK, stopWhen: stepCountIs(MAX_STEPS) });
    return { ok: true, text: result.text };
  } finally {
    await mcp.close();
  }
}

async function langgraph() {
  const { ChatOpenAI } = await import('@langchain/openai');
  const { createReactAgent } = await import('@langchain/langgraph/prebuilt');
  const { MultiServerMCPClient } = await import('@langchain/mcp-adapters');
  const { tool } = await import('@langchain/core/tools');
  const { z } = await import('zod');
  const client = new MultiServerMCPClient({ mcpServers: { reach: { url: MCP_URL } } });
  try {
    const llm = new ChatOpenAI({ model: 'scripted', apiKey: 'sk-test', configuration: { baseURL: MODEL_URL } });
    const sub = createReactAgent({ llm, tools: await client.getTools() });
    const researcher = tool(async ({ input }) => {
      const state = await sub.invoke({ messages: [{ role: 'user', content: input }] }, { recursionLimit: 2 * MAX_STEPS + 1 });
      return String(state.messages[state.messages.length - 1]?.content ?? '');
    }, { name: 'researcher', description: SUB, schema: z.object({ input: z.string() }) });
    const manager = createReactAgent({ llm, tools: [researcher] });
    const state = await manager.invoke({ messages: [{ role: 'user', content: TASK }] }, { recursionLimit: 2 * MAX_STEPS + 1 });
    return { ok: true, text: String(state.messages[state.messages.length - 1]?.content ?? '') };
  } finally {
    await client.close();
  }
}

const runners = { 'openai-agents': openaiAgents, 'openai-agents-handoff': openaiAgentsHandoff, 'ai-sdk': aiSDK, langgraph };
try {
  console.log(JSON.stringify(await runners[FRAMEWORK]()));
} catch (e) {
  console.log(JSON.stringify(describe(e)));
}
process.exit(0);
