// client.cjs names a budget for new requests through a real client of one
// protocol, once for each of CALLS (a JSON list of {key, request}: an API
// key to authenticate with, the request to begin), and prints what came
// back as one JSON line, a list of {ok, code, state, status, text}. PROTO
// picks the client:
//   mcp     the MCP TypeScript SDK: tools/call search_kb, _meta reach/budget
//   a2a     the A2A JS SDK: SendMessage to /a2a/executor/, metadata reach/budget
//   openai  the OpenAI SDK: chat.completions.create, the Reach-Budget header
// Each names the request it begins (REQUEST) so that the Go test can read
// the budget it got. Run by TestNamedBudgetTenantsRealClients.
const { PROTO, REACH, BUDGET } = process.env;
const CALLS = JSON.parse(process.env.CALLS);

const text = (content) => (content || []).map((c) => c.text || '').join('');

async function mcp(KEY, REQUEST) {
  const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const c = new Client({ name: 'budget-client', version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(REACH + '/mcp'), { requestInit: { headers: { authorization: 'Bearer ' + KEY } } }));
  const r = await c.callTool({ name: 'search_kb', arguments: { query: 'refund' }, _meta: { 'reach/request': REQUEST, 'reach/budget': BUDGET } });
  await c.close();
  const err = (r._meta && r._meta['reach/error']) || {};
  return { ok: !r.isError, code: err.code || '', text: text(r.content) };
}

async function a2a(KEY, REQUEST) {
  const { Role, TaskState } = require('@a2a-js/sdk');
  const { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, DefaultAgentCardResolver } = require('@a2a-js/sdk/client');
  const authFetch = (url, init) => {
    const req = new Request(url, init);
    req.headers.set('authorization', 'Bearer ' + KEY);
    return fetch(req);
  };
  const f = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }),
  }));
  const client = await f.createFromUrl(REACH + '/a2a/executor/');
  const message = { messageId: crypto.randomUUID(), role: Role.ROLE_USER, contextId: '', taskId: '', referenceTaskIds: [], extensions: [],
    parts: [{ content: { $case: 'text', value: 'hi' }, mediaType: 'text/plain', filename: '', metadata: {} }],
    metadata: { 'reach/request': REQUEST, 'reach/budget': BUDGET } };
  const res = await client.sendMessage({ message });
  const state = res.status ? TaskState[res.status.state] : 'MESSAGE';
  const parts = res.status ? res.status.message && res.status.message.parts : res.parts;
  const said = (parts || []).map((p) => (p.content && p.content.$case === 'text' ? p.content.value : '')).join('');
  return { ok: state === 'TASK_STATE_COMPLETED', state, text: said };
}

async function openai(KEY, REQUEST) {
  const OpenAI = require('openai');
  const client = new (OpenAI.default || OpenAI)({ apiKey: KEY, baseURL: REACH + '/v1', maxRetries: 0,
    defaultHeaders: { 'Reach-Budget': BUDGET, 'Reach-Request': REQUEST } });
  try {
    const r = await client.chat.completions.create({ model: 'fake', messages: [{ role: 'user', content: 'hi' }] });
    return { ok: true, text: r.choices[0].message.content };
  } catch (e) {
    return { ok: false, status: e.status || 0, code: e.code || '', text: String(e.message) };
  }
}

(async () => {
  const out = [];
  for (const c of CALLS) out.push(await ({ mcp, a2a, openai })[PROTO](c.key, c.request));
  return out;
})()
  .then((r) => process.stdout.write(JSON.stringify(r) + '\n'))
  .catch((e) => { process.stderr.write(String((e && e.stack) || e) + '\n'); process.exit(1); });
