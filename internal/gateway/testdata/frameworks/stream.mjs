// stream.mjs reads streamed answers through reach with real SDKs' stream
// parsers. The gateway's tests (frameworks_stream_test.go) copy it beside
// the frameworks' node_modules and read the JSON line it prints last.
//
//   MODE       sdk: the openai SDK, for each case of CASES (a JSON list of
//              user's messages, each naming the model's script), five streams:
//              chat.completions.stream, chat.completions.create({stream}) with
//              and without stream_options.include_usage,
//              responses.stream and responses.create({stream}); prints a
//              list of {case, task, error, deltaText, deltaArgs, deltaSummary,
//              finalText, finalArgs, finalSummary, usage, sequence}.
//              openai-agents | ai-sdk, on the Responses API, or
//              openai-agents-chat | ai-sdk-chat, on chat completions: one
//              streamed run of TASK with the MCP tools of MCP_URL; prints
//              {ok, text, streamed, error}: the run's final text and the
//              text its stream's deltas added up to.
//   MODEL_URL  the OpenAI-compatible base URL (reach's /v1)

const { MODE, MODEL_URL, MCP_URL, TASK } = process.env;

// out prints v and resolves once it is written: a pipe is written to
// asynchronously, and process.exit would cut a long line short.
function out(v) {
  return new Promise((resolve) => process.stdout.write(JSON.stringify(v) + '\n', resolve));
}

function errorText(e) {
  return String(e?.stack ?? e?.message ?? e).slice(0, 2000);
}

// The text and arguments a chat completion's chunks add up to.
function addChunk(acc, chunk) {
  if (chunk.usage) acc.usage = chunk.usage.total_tokens;
  for (const c of chunk.choices ?? []) {
    acc.deltaText += c.delta?.content ?? '';
    for (const tc of c.delta?.tool_calls ?? []) {
      acc.deltaArgs[tc.index] = (acc.deltaArgs[tc.index] ?? '') + (tc.function?.arguments ?? '');
      if (tc.function?.name) acc.names[tc.index] = tc.function.name;
    }
    if (c.finish_reason) acc.finish = c.finish_reason;
  }
}

// The text and arguments a Responses stream's events add up to, by item.
function addEvent(acc, ev, items) {
  acc.events++;
  // A delta after the end of its part (content_part.done, summary_part.done)
  // or item (output_item.done), which the SDK adds to the text it ended.
  const part = `${ev.item_id}/${ev.content_index ?? ev.summary_index ?? ''}`;
  if (ev.type?.endsWith('.delta') && (acc.ended.has(part) || acc.ended.has(ev.item_id))) acc.late.push(`${ev.type} ${part}`);
  if (ev.type === 'response.content_part.done' || ev.type === 'response.reasoning_summary_part.done') acc.ended.add(part);
  if (ev.type === 'response.output_item.done') acc.ended.add(ev.item.id);
  if (typeof ev.sequence_number === 'number') acc.sequence.push(ev.sequence_number);
  if (ev.type === 'response.output_text.delta') acc.deltaText += ev.delta;
  if (ev.type === 'response.reasoning_summary_text.delta') acc.deltaSummary += ev.delta;
  if (ev.type === 'response.function_call_arguments.delta') items.set(ev.item_id, (items.get(ev.item_id) ?? '') + ev.delta);
  if (ev.type === 'response.output_item.added' && ev.item.type === 'function_call') items.set(ev.item.id, items.get(ev.item.id) ?? '');
  if (ev.type === 'response.completed' || ev.type === 'response.incomplete') acc.usage = ev.response.usage?.total_tokens ?? 0;
}

async function sdk() {
  const { default: OpenAI } = await import('openai');
  const client = new OpenAI({ baseURL: MODEL_URL, apiKey: 'sk-test', maxRetries: 0 });
  const results = [];
  const run = async (name, task, f) => {
    const acc = { case: `${name} ${task}`, task, deltaText: '', deltaArgs: [], names: [], finalText: null, finalArgs: [],
      deltaSummary: '', finalSummary: null, usage: 0, sequence: [], events: 0, late: [], ended: new Set() };
    try {
      await f(acc, task);
    } catch (e) {
      acc.error = errorText(e);
    }
    delete acc.ended;
    results.push(acc);
  };
  for (const task of JSON.parse(process.env.CASES)) {
    const chat = (input) => ({ model: 'scripted', messages: [{ role: 'user', content: input }], stream_options: { include_usage: true } });
    await run('chat.stream', task, async (acc, input) => {
      const s = client.chat.completions.stream(chat(input));
      for await (const chunk of s) addChunk(acc, chunk);
      const final = await s.finalChatCompletion();
      const m = final.choices[0].message;
      acc.finalText = m.content ?? '';
      acc.finalArgs = (m.tool_calls ?? []).map((tc) => tc.function.arguments);
    });
    await run('chat.create', task, async (acc, input) => {
      const s = await client.chat.completions.create({ ...chat(input), stream: true });
      for await (const chunk of s) addChunk(acc, chunk);
    });
    await run('chat.plain', task, async (acc, input) => { // no usage asked for: none comes
      const { stream_options, ...body } = chat(input);
      const s = await client.chat.completions.create({ ...body, stream: true });
      for await (const chunk of s) addChunk(acc, chunk);
    });
    await run('responses.stream', task, async (acc, input) => {
      const items = new Map();
      const s = client.responses.stream({ model: 'scripted', input });
      for await (const ev of s) addEvent(acc, ev, items);
      acc.deltaArgs = [...items.values()];
      const final = await s.finalResponse();
      acc.finalText = final.output_text;
      acc.finalSummary = final.output.filter((it) => it.type === 'reasoning').map((it) => it.summary.map((p) => p.text).join('')).join('');
      acc.finalArgs = final.output.filter((it) => it.type === 'function_call').map((it) => it.arguments);
    });
    await run('responses.create', task, async (acc, input) => {
      const items = new Map();
      const s = await client.responses.create({ model: 'scripted', input, stream: true });
      for await (const ev of s) addEvent(acc, ev, items);
      acc.deltaArgs = [...items.values()];
    });
  }
  return results;
}

async function openaiAgents(chat) {
  const { Agent, run, MCPServerStreamableHttp, setDefaultOpenAIClient, setOpenAIAPI } = await import('@openai/agents');
  const { default: OpenAI } = await import('openai');
  setDefaultOpenAIClient(new OpenAI({ baseURL: MODEL_URL, apiKey: 'sk-test' }));
  if (chat) setOpenAIAPI('chat_completions');
  const mcp = new MCPServerStreamableHttp({ url: MCP_URL, name: 'reach' });
  await mcp.connect();
  try {
    const agent = new Agent({ name: 'assistant', instructions: 'Use the tools.', mcpServers: [mcp], model: 'scripted' });
    const result = await run(agent, TASK, { stream: true, maxTurns: 10 });
    let streamed = '';
    for await (const ev of result) {
      if (ev.type === 'raw_model_stream_event' && ev.data.type === 'output_text_delta') streamed += ev.data.delta;
    }
    await result.completed;
    if (result.error) throw result.error;
    return { ok: true, text: String(result.finalOutput ?? ''), streamed };
  } finally {
    await mcp.close();
  }
}

async function aiSDK(chat) {
  const { streamText, stepCountIs } = await import('ai');
  const { createMCPClient } = await import('@ai-sdk/mcp');
  const { createOpenAI } = await import('@ai-sdk/openai');
  const mcp = await createMCPClient({ transport: { type: 'http', url: MCP_URL } });
  try {
    const tools = await mcp.tools();
    const openai = createOpenAI({ baseURL: MODEL_URL, apiKey: 'sk-test' });
    let failed;
    const result = streamText({
      model: chat ? openai.chat('scripted') : openai('scripted'), tools, prompt: TASK, stopWhen: stepCountIs(10),
      onError: ({ error }) => { failed = error; },
    });
    let streamed = '';
    for await (const t of result.textStream) streamed += t;
    if (failed) throw failed;
    const steps = await result.steps;
    return { ok: true, text: await result.text, streamed, steps: steps.length };
  } finally {
    await mcp.close();
  }
}

const modes = { sdk, 'openai-agents': () => openaiAgents(false), 'openai-agents-chat': () => openaiAgents(true), 'ai-sdk': () => aiSDK(false), 'ai-sdk-chat': () => aiSDK(true) };
try {
  await out(await modes[MODE]());
} catch (e) {
  await out({ ok: false, error: errorText(e) });
}
process.exit(0);
