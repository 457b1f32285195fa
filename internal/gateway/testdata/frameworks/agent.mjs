// agent.mjs runs one task with an agent framework on its default settings,
// its MCP tools and its model pointed at reach (or, for a baseline, at the
// upstream MCP server and the model directly). The gateway's tests
// (frameworks_test.go) copy it beside the frameworks' node_modules
// (.cache/frameworks, scripts/frameworks-deps.sh) and read the JSON line it
// prints last: {ok, text, error, status}.
//
//   FRAMEWORK   openai-agents | langgraph | ai-sdk | mastra | genkit | voltagent | kaibanjs |
//               llamaindex | beeai | adk | strands | langchain | ax
//   MCP_URL     the MCP endpoint (reach's /mcp)
//   MODEL_URL   the OpenAI-compatible base URL (reach's /v1)
//   MODEL_API   the model API, for OpenAI Agents and the AI SDK: their
//               default, the Responses API (/v1/responses), unless "chat":
//               chat completions (/v1/chat/completions), the opt-out each
//               offers. LangGraph's ChatOpenAI calls chat completions.
//   TASK        the user's message
//   HEADERS     extra headers for the model's requests, as JSON (optional)
//   MAX_STEPS   the run's step limit (each framework's own knob)
//   MCP_CLIENT  langgraph only: "v2" loads the tools through the MCP
//               TypeScript client of the sessionless protocol
//               (@modelcontextprotocol/client) instead of its default
//               MultiServerMCPClient, which speaks 2025-11-25 only.
//   TEXT_HOOK   langgraph, mastra and voltagent: "1" adds the hook of
//               docs/frameworks/langgraph.md (afterToolCall),
//               docs/frameworks/mastra.md or voltagent.md (toModelOutput),
//               which gives the model a result's text.

const { FRAMEWORK, MCP_URL, MODEL_URL, TASK } = process.env;
const HEADERS = JSON.parse(process.env.HEADERS || '{}');
const MAX_STEPS = Number(process.env.MAX_STEPS || 50);
const CHAT = process.env.MODEL_API === 'chat';

// No network here: @langchain/openai fetches a tiktoken file to count
// tokens; it is answered at once, as a failed download, so it falls back to
// its estimate instead of waiting for a network that is not there.
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = typeof input === 'string' ? input : input.url ?? String(input);
  if (url.includes('tiktoken')) return Promise.resolve(new Response('offline', { status: 503 }));
  if (url.includes('telemetrydeck')) return Promise.resolve(new Response('{}', { status: 200 })); // KaibanJS's telemetry
  return realFetch(input, init);
};

function out(v) {
  console.log(JSON.stringify(v));
}

function describe(e) {
  // The HTTP status, where the framework keeps one (Genkit's own status is
  // a name, UNKNOWN, and the HTTP one in its cause).
  const status = [e?.status, e?.statusCode, e?.cause?.status, e?.lastError?.statusCode, e?.lastError?.status].find((v) => typeof v === 'number');
  return { ok: false, error: String(e?.message ?? e).slice(0, 2000), status: status ?? null };
}

async function openaiAgents() {
  const { Agent, run, MCPServerStreamableHttp, setDefaultOpenAIClient, setOpenAIAPI } = await import('@openai/agents');
  const { default: OpenAI } = await import('openai');
  // The lines that point it at reach: the model client and the MCP server.
  // Its model API stays the default (the Responses API) unless MODEL_API
  // says chat.
  setDefaultOpenAIClient(new OpenAI({ baseURL: MODEL_URL, apiKey: 'sk-test', defaultHeaders: HEADERS }));
  if (CHAT) setOpenAIAPI('chat_completions');
  const mcp = new MCPServerStreamableHttp({ url: MCP_URL, name: 'reach' });
  await mcp.connect();
  try {
    const agent = new Agent({ name: 'assistant', instructions: 'Use the tools.', mcpServers: [mcp], model: 'scripted' });
    const result = await run(agent, TASK, { maxTurns: MAX_STEPS });
    return { ok: true, text: String(result.finalOutput ?? '') };
  } finally {
    await mcp.close();
  }
}

async function langgraph() {
  const { ChatOpenAI } = await import('@langchain/openai');
  const { createReactAgent } = await import('@langchain/langgraph/prebuilt');
  let tools, close;
  if (process.env.MCP_CLIENT === 'v2') {
    const { loadMcpTools } = await import('@langchain/mcp-adapters');
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const client = new Client({ name: 'langgraph-v2', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL)));
    tools = await loadMcpTools('reach', client);
    close = () => client.close();
  } else {
    const { MultiServerMCPClient } = await import('@langchain/mcp-adapters');
    const client = process.env.TEXT_HOOK === '1'
      ? new MultiServerMCPClient({
        mcpServers: { reach: { url: MCP_URL } },
        afterToolCall: ({ result: [content] }) => ({ result: typeof content === 'string' ? content : content.map((b) => b.text ?? '').join('') }),
      })
      : new MultiServerMCPClient({ mcpServers: { reach: { url: MCP_URL } } });
    tools = await client.getTools();
    close = () => client.close();
  }
  try {
    const llm = new ChatOpenAI({ model: 'scripted', apiKey: 'sk-test', configuration: { baseURL: MODEL_URL, defaultHeaders: HEADERS } });
    const agent = createReactAgent({ llm, tools });
    const state = await agent.invoke({ messages: [{ role: 'user', content: TASK }] }, { recursionLimit: 2 * MAX_STEPS + 1 });
    const last = state.messages[state.messages.length - 1];
    return { ok: true, text: String(last?.content ?? '') };
  } finally {
    await close();
  }
}

async function aiSDK() {
  const { generateText, stepCountIs } = await import('ai');
  const { createMCPClient } = await import('@ai-sdk/mcp');
  const { createOpenAI } = await import('@ai-sdk/openai');
  const mcp = await createMCPClient({ transport: { type: 'http', url: MCP_URL } });
  try {
    const tools = await mcp.tools();
    const openai = createOpenAI({ baseURL: MODEL_URL, apiKey: 'sk-test', headers: HEADERS });
    const result = await generateText({ model: CHAT ? openai.chat('scripted') : openai('scripted'), tools, prompt: TASK, stopWhen: stepCountIs(MAX_STEPS) });
    return { ok: true, text: result.text };
  } finally {
    await mcp.close();
  }
}

async function mastra() {
  const { Agent } = await import('@mastra/core/agent');
  const { MCPClient } = await import('@mastra/mcp');
  // The lines that point it at reach: an MCP server by URL, and a model of
  // Mastra's router given reach's base URL.
  const mcp = new MCPClient({ servers: { reach: { url: new URL(MCP_URL) } } });
  try {
    const agent = new Agent({
      id: 'assistant', name: 'assistant', instructions: 'Use the tools.',
      model: { id: 'openai/scripted', url: MODEL_URL, apiKey: 'sk-test', headers: HEADERS, ...(CHAT ? { api: 'chat' } : {}) },
      tools: process.env.TEXT_HOOK === '1' ? textOnly(await mcp.listTools()) : await mcp.listTools(),
    });
    const result = await agent.generate(TASK, { maxSteps: MAX_STEPS });
    if (result.error) throw result.error;
    return { ok: true, text: String(result.text ?? '') };
  } finally {
    await mcp.disconnect();
  }
}

// textOnly is docs/frameworks/mastra.md's hook: the model reads a result's
// text, not the whole result in JSON.
function textOnly(tools) {
  for (const tool of Object.values(tools)) {
    tool.toModelOutput = (out) => Array.isArray(out?.content)
      ? { type: 'text', value: out.content.map((b) => b.text ?? '').join('') }
      : { type: 'json', value: out };
  }
  return tools;
}

async function genkitRun() {
  const { genkit } = await import('genkit');
  const { openAICompatible } = await import('@genkit-ai/compat-oai');
  const { createMcpClient } = await import('@genkit-ai/mcp');
  // The lines that point it at reach: an OpenAI-compatible plugin with
  // reach's base URL, and an MCP client by URL.
  const ai = genkit({ plugins: [openAICompatible({ name: 'reach', baseURL: MODEL_URL, apiKey: 'sk-test', defaultHeaders: HEADERS })] });
  const mcp = createMcpClient({ name: 'reach', mcpServer: { url: MCP_URL } });
  await mcp.ready();
  try {
    const tools = await mcp.getActiveTools(ai);
    const result = await ai.generate({ model: 'reach/scripted', prompt: TASK, tools, maxTurns: MAX_STEPS });
    return { ok: true, text: String(result.text ?? '') };
  } finally {
    await mcp.disable();
  }
}

async function voltagent() {
  const { Agent, MCPConfiguration } = await import('@voltagent/core');
  const { createOpenAI } = await import('@ai-sdk/openai');
  // The lines that point it at reach: an MCP server by URL, and an AI SDK
  // OpenAI model given reach's base URL (VoltAgent's own models are the
  // AI SDK's).
  const mcp = new MCPConfiguration({ servers: { reach: { type: 'http', url: MCP_URL } } });
  try {
    const openai = createOpenAI({ baseURL: MODEL_URL, apiKey: 'sk-test', headers: HEADERS });
    const tools = await mcp.getTools();
    if (process.env.TEXT_HOOK === '1') {
      // docs/frameworks/voltagent.md's hook: the model reads a result's
      // text, not the whole result in JSON.
      for (const tool of tools) {
        tool.toModelOutput = ({ output }) => Array.isArray(output?.content)
          ? { type: 'text', value: output.content.map((b) => b.text ?? '').join('') }
          : { type: 'json', value: output };
      }
    }
    const agent = new Agent({ name: 'assistant', instructions: 'Use the tools.', model: CHAT ? openai.chat('scripted') : openai('scripted'), tools });
    const result = await agent.generateText(TASK, { maxSteps: MAX_STEPS });
    return { ok: true, text: String(result.text ?? '') };
  } finally {
    await mcp.disconnect();
  }
}

async function kaiban() {
  const { Agent, Task, Team } = await import('kaibanjs');
  const { MultiServerMCPClient } = await import('@langchain/mcp-adapters');
  // The lines that point it at reach: LangChain's MCP client by URL (the
  // way KaibanJS documents MCP), and the agent's llmConfig with reach's
  // base URL in LangChain's `configuration` (its apiBaseUrl sets the same,
  // but leaves no room for headers).
  //
  // Its agent writes a tool call into the model's answer as JSON text, not
  // as a tool call of the API: reach reads the block, and links the MCP
  // call of that tool with those arguments, and the next turn, whose
  // history holds the block, to the turn that wrote it. KAIBAN_REQUEST=1
  // names the run's request on both clients too (Reach-Request), as
  // docs/frameworks/kaibanjs.md offers, which reach needs for nothing else.
  const request = process.env.KAIBAN_REQUEST === '1'
    ? { 'Reach-Request': `req_kaiban_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}` } : {};
  const mcp = new MultiServerMCPClient({ mcpServers: { reach: { url: MCP_URL, headers: request } } });
  try {
    // docs/frameworks/kaibanjs.md's hook: KaibanJS gives the model an
    // empty result ("") for a tool that throws, and LangChain's MCP tools
    // throw reach's refusals (results with isError); this returns the
    // error's text as the result instead.
    const tools = (await mcp.getTools()).map((tool) => {
      const invoke = tool.invoke.bind(tool);
      tool.invoke = (input, config) => invoke(input, config).catch((e) => String(e?.message ?? e));
      return tool;
    });
    const agent = new Agent({
      name: 'assistant', role: 'Assistant', goal: 'Use the tools.', background: 'A shop assistant.', tools,
      maxIterations: MAX_STEPS,
      llmConfig: { provider: 'openai', model: 'scripted', apiKey: 'sk-test', configuration: { baseURL: MODEL_URL, defaultHeaders: { ...HEADERS, ...request } } },
    });
    const task = new Task({ description: TASK, expectedOutput: 'The answer.', agent });
    const team = new Team({ name: 'shop', agents: [agent], tasks: [task], logLevel: 'error' });
    const result = await team.start();
    if (result.status !== 'FINISHED') {
      // The run's error is in its log: an agent's log entry with
      // metadata.error, whose originalError is the model client's (its
      // status, and reach's text).
      const failed = team.getStore().getState().workflowLogs.filter((l) => l.logType === 'AgentStatusUpdate' && l.metadata?.error).pop();
      const e = failed?.metadata?.error;
      const err = new Error(`${result.status}: ${e?.originalError?.message ?? e?.message ?? failed?.logDescription ?? 'no error logged'}`);
      err.status = e?.originalError?.status;
      throw err;
    }
    return { ok: true, text: String(result.result ?? '') };
  } finally {
    await mcp.close();
  }
}

async function llamaindex() {
  const { agent } = await import('@llamaindex/workflow');
  const { openai } = await import('@llamaindex/openai');
  const { mcp } = await import('@llamaindex/tools');
  const server = mcp({ url: MCP_URL });
  try {
    // docs/frameworks/llamaindex.md's hooks: the model reads a result's
    // text (LlamaIndex prints the whole CallToolResult, _meta included),
    // and a model call's error, which escapes run() as an unhandled
    // rejection, ends the run instead of the process.
    const tools = (await server.tools()).map((tool) => {
      const call = tool.call.bind(tool);
      tool.call = async (input) => {
        const r = await call(input);
        return Array.isArray(r?.content) ? r.content.map((b) => b.text ?? '').join('') : r;
      };
      return tool;
    });
    // A model name it knows to call tools: it decides by the name whether
    // a model can (a name it does not know gets no tools).
    const llm = openai({ model: 'gpt-4o-mini', apiKey: 'sk-test', baseURL: MODEL_URL, additionalSessionOptions: { defaultHeaders: HEADERS } });
    const a = agent({ llm, tools });
    let onRejection;
    const escaped = new Promise((_, reject) => { onRejection = reject; process.once('unhandledRejection', reject); });
    try {
      const result = await Promise.race([a.run(TASK), escaped]);
      return { ok: true, text: String(result.data?.result ?? '') };
    } finally {
      process.removeListener('unhandledRejection', onRejection);
    }
  } finally {
    await server.cleanup();
  }
}

async function beeai() {
  const { RequirementAgent } = await import('beeai-framework/agents/requirement/agent');
  const { OpenAIChatModel } = await import('beeai-framework/adapters/openai/backend/chat');
  const { MCPTool } = await import('beeai-framework/tools/mcp');
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  // The lines that point it at reach: the MCP TypeScript SDK's client its
  // MCPTool takes the tools from, and its OpenAI model's baseURL (the AI
  // SDK's provider settings; it calls chat completions).
  const client = new Client({ name: 'beeai', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(MCP_URL)));
  try {
    const tools = await MCPTool.fromClient(client);
    const llm = new OpenAIChatModel('gpt-4o-mini', {}, { baseURL: MODEL_URL, apiKey: 'sk-test', headers: HEADERS });
    // docs/frameworks/beeai.md's setting: its own check of repeated tool
    // calls (on by default) takes a tool away from the model at its second
    // identical call in a row, a poll's included; reach's loop guard tells
    // a poll from a loop.
    const agent = new RequirementAgent({ llm, tools, toolCallChecker: false });
    try {
      // docs/frameworks/beeai.md's other setting: it retries a failed model
      // call 3 times (maxRetriesPerStep), a 402 or 403 with
      // x-should-retry: false included.
      const r = await agent.run({ prompt: TASK }, { execution: { maxIterations: MAX_STEPS, maxRetriesPerStep: 0 } });
      return { ok: true, text: String(r.result?.text ?? '') };
    } catch (e) {
      // BeeAI wraps a model call's error ("The Agent has encountered an
      // error."): the API's error, reach's text and status, is in its
      // errors (AgentError, ChatModelError, the AI SDK's APICallError).
      let cause = e;
      while (cause && cause.statusCode === undefined && (cause.errors?.[0] ?? cause.cause)) cause = cause.errors?.[0] ?? cause.cause;
      const err = new Error(`${e?.message} ${cause?.message ?? ''}`);
      err.status = cause?.statusCode;
      throw err;
    }
  } finally {
    await client.close();
  }
}

async function adk() {
  const { LlmAgent, InMemoryRunner, MCPToolset, BaseLlm } = await import('@google/adk');
  // docs/frameworks/adk.md's model class: ADK's own models speak Gemini's
  // API only, so its model calls reach reach's /v1 through a BaseLlm that
  // speaks chat completions (ADK's contents and function declarations in,
  // its LlmResponse out).
  class ChatCompletions extends BaseLlm {
    constructor({ model, baseURL, apiKey, headers }) {
      super({ model });
      Object.assign(this, { baseURL, apiKey, headers });
    }
    async *generateContentAsync(req, _stream, abortSignal) {
      const messages = [];
      const system = req.config?.systemInstruction;
      const sys = typeof system === 'string' ? system : (system?.parts ?? []).map((p) => p.text ?? '').join('');
      if (sys) messages.push({ role: 'system', content: sys });
      for (const c of req.contents ?? []) {
        const parts = c.parts ?? [];
        const text = parts.map((p) => p.text ?? '').join('');
        const calls = parts.filter((p) => p.functionCall).map((p) => p.functionCall);
        const results = parts.filter((p) => p.functionResponse).map((p) => p.functionResponse);
        if (c.role === 'model') {
          messages.push({ role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls.map((f) => ({ id: f.id, type: 'function', function: { name: f.name, arguments: JSON.stringify(f.args ?? {}) } })) } : {}) });
        } else if (results.length) {
          for (const r of results) messages.push({ role: 'tool', tool_call_id: r.id, content: JSON.stringify(r.response) });
        } else {
          messages.push({ role: 'user', content: text });
        }
      }
      const tools = (req.config?.tools ?? []).flatMap((t) => t.functionDeclarations ?? [])
        .map((f) => ({ type: 'function', function: { name: f.name, description: f.description, parameters: f.parametersJsonSchema ?? f.parameters ?? { type: 'object' } } }));
      const res = await fetch(`${this.baseURL}/chat/completions`, {
        method: 'POST', signal: abortSignal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.apiKey}`, ...this.headers },
        body: JSON.stringify({ model: this.model, messages, ...(tools.length ? { tools } : {}) }),
      });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) throw Object.assign(new Error(`${res.status} ${body?.error?.message ?? res.statusText}`), { status: res.status });
      const msg = body.choices?.[0]?.message ?? {};
      const parts = [];
      if (msg.content) parts.push({ text: msg.content });
      for (const tc of msg.tool_calls ?? []) parts.push({ functionCall: { id: tc.id, name: tc.function.name, args: JSON.parse(tc.function.arguments || '{}') } });
      yield { content: { role: 'model', parts }, usageMetadata: { promptTokenCount: body.usage?.prompt_tokens, candidatesTokenCount: body.usage?.completion_tokens } };
    }
    async connect() { throw new Error('live connections are not supported'); }
  }
  // The lines that point it at reach: its MCPToolset at /mcp (Streamable
  // HTTP, the TypeScript SDK's client), and the model class at /v1.
  const toolset = new MCPToolset({ type: 'StreamableHTTPConnectionParams', url: MCP_URL });
  try {
    const agent = new LlmAgent({
      name: 'assistant', instruction: 'Use the tools.',
      model: new ChatCompletions({ model: 'gpt-4o-mini', baseURL: MODEL_URL, apiKey: 'sk-test', headers: HEADERS }),
      tools: [toolset],
    });
    const runner = new InMemoryRunner({ agent, appName: 'shop' });
    let text = '';
    for await (const ev of runner.runEphemeral({ userId: 'u', newMessage: { role: 'user', parts: [{ text: TASK }] }, runConfig: { maxLlmCalls: MAX_STEPS } })) {
      if (ev.errorMessage || ev.errorCode) throw Object.assign(new Error(ev.errorMessage ?? String(ev.errorCode)), { status: Number(ev.errorCode) || undefined });
      const t = (ev.content?.parts ?? []).map((p) => p.text ?? '').join('');
      if (t && ev.author === 'assistant') text = t;
    }
    return { ok: true, text };
  } finally {
    await toolset.close();
  }
}

async function strands() {
  const { Agent, McpClient } = await import('@strands-agents/sdk');
  const { OpenAIModel } = await import('@strands-agents/sdk/models/openai');
  // The lines that point it at reach: its McpClient by URL, and its OpenAI
  // model's clientConfig (the openai SDK's options).
  const mcp = new McpClient({ url: MCP_URL });
  try {
    const model = new OpenAIModel({ modelId: 'gpt-4o-mini', apiKey: 'sk-test', ...(CHAT ? { api: 'chat' } : {}), clientConfig: { baseURL: MODEL_URL, defaultHeaders: HEADERS } });
    const agent = new Agent({ model, tools: [mcp], printer: false });
    const r = await agent.invoke(TASK);
    return { ok: true, text: String(r) };
  } finally {
    await mcp.disconnect?.();
  }
}

async function langchain() {
  const { createAgent } = await import('langchain');
  const { ChatOpenAI } = await import('@langchain/openai');
  const { MultiServerMCPClient } = await import('@langchain/mcp-adapters');
  // The lines that point it at reach: LangChain's MCP client by URL (the
  // way LangChain documents MCP tools for createAgent), and ChatOpenAI with
  // reach's base URL in its `configuration` (the openai SDK's options).
  const client = new MultiServerMCPClient({ mcpServers: { reach: { url: MCP_URL } } });
  try {
    const tools = await client.getTools();
    const model = new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: 'sk-test', configuration: { baseURL: MODEL_URL, defaultHeaders: HEADERS } });
    const agent = createAgent({ model, tools });
    const state = await agent.invoke({ messages: [{ role: 'user', content: TASK }] }, { recursionLimit: 2 * MAX_STEPS + 1 });
    const last = state.messages[state.messages.length - 1];
    return { ok: true, text: String(last?.content ?? '') };
  } finally {
    await client.close();
  }
}

async function axRun() {
  const { ai, ax, AxMCPClient, AxMCPStreamableHTTPTransport } = await import('@ax-llm/ax');
  // The lines that point it at reach: its MCP client (Streamable HTTP,
  // passed to the program by `mcp`), and its OpenAI profile with reach's
  // base URL.
  // docs/frameworks/ax.md's setting: Ax's MCP transport wants https and a
  // host that is not loopback; a reach on loopback over plain HTTP (its
  // default) needs both allowed.
  const transport = new AxMCPStreamableHTTPTransport(MCP_URL, { ssrfProtection: { allowHTTP: true, allowLoopback: true } });
  const client = new AxMCPClient(transport, { namespace: 'reach' });
  try {
    // Its OpenAI profile takes no extra headers; its credentialProvider,
    // whose headers it sends with each model call, carries a named budget
    // (docs/frameworks/ax.md).
    const llm = ai({
      name: 'openai', apiKey: 'sk-test', apiURL: MODEL_URL, config: { model: 'gpt-4o-mini' },
      ...(Object.keys(HEADERS ?? {}).length ? { credentialProvider: async () => ({ Authorization: 'Bearer sk-test', ...HEADERS }) } : {}),
    });
    const gen = ax('question:string -> answer:string', { mcp: client, maxSteps: MAX_STEPS });
    try {
      const r = await gen.forward(llm, { question: TASK });
      return { ok: true, text: String(r.answer ?? '') };
    } catch (e) {
      // Its error says the status ("HTTP 402 - Payment Required"); reach's
      // text is in the response's body, which it keeps
      // (responseBody.responseBody).
      let cause = e;
      while (cause && cause.responseBody === undefined && cause.cause) cause = cause.cause;
      const body = cause?.responseBody?.responseBody ?? cause?.responseBody;
      const text = typeof body === 'string' ? body : body?.error?.message ?? '';
      throw Object.assign(new Error(`${e?.message} ${text}`), { status: cause?.status ?? e?.status });
    }
  } finally {
    await client.close();
  }
}

const runners = { 'openai-agents': openaiAgents, langgraph, 'ai-sdk': aiSDK, mastra, genkit: genkitRun, voltagent, kaibanjs: kaiban, llamaindex, beeai, adk, strands, langchain, ax: axRun };
try {
  out(await runners[FRAMEWORK]());
} catch (e) {
  out(describe(e));
}
process.exit(0);
