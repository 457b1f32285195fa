'use strict';
// A test agent written with the A2A JS SDK: a planner, an executor or a
// verifier (ROLE), serving A2A on a free loopback port, calling its tools
// through reach's /mcp and its model through reach's /v1/chat/completions
// (REACH), and handing work to its peers at the URLs in PLANNER, EXECUTOR
// and VERIFIER (reach's /a2a/NAME/, or the agents themselves).
//
// LINK=forward passes on what reach gave it with each message (the
// traceparent and baggage headers, reach/request and reach/parent) with its
// own messages, tool calls and model calls; LINK=protocol passes nothing on
// but names its task in referenceTaskIds, as the protocol allows.
// IGNORE_CANCEL=1 makes it ignore CancelTask. LATE=1 makes it answer a
// CancelTask with events first (an artifact "late part" and a status
// update "late status", on the task's stream before its answer), then the
// cancel. (The SDK refuses a message in a task's stream.) CAP bounds the planner's
// rounds. It writes one JSON object a line to stdout for each thing it does.
//
// What a task does depends on its text:
//   incident ...      planner: hand "ship order 1001" to the executor and
//                     "verify order 1001" to the verifier until the verifier
//                     approves, a hand-off fails, or CAP rounds
//   ship order 1001   executor: ask the model, call get_order, report
//   verify order 1001 verifier: ask the model, answer what it said
//   work              look something up every 20 ms, hand "work" to the next
//                     agent (planner -> executor -> verifier) and wait, until
//                     canceled
//   cycle: ...        planner hands it to the executor, the executor back to
//                     the planner
//   budget            planner hands "spend" to the executor, then finishes
//                     itself; spend: ask the model until reach says no
//   ask colour        wait for input ("which colour?"); the answer to it,
//                     in the same task, completes it ("colour: ANSWER")
//   ask through       planner hands "ask colour" to the executor and
//                     answers its question ("blue") in the same task
//   ask auth          wait for authorization (TASK_STATE_AUTH_REQUIRED); the
//                     answer "signed in", in the same task, completes it
//                     ("authorized: ..."), another asks again
//   auth through      planner hands "ask auth" to the executor and answers
//                     it ("signed in") in the same task; "auth through 0.3"
//                     the same in A2A 0.3
//   stream            ask the model, then stream an artifact and a status
//                     update, five times, until reach says no; then wait
//   stream through    planner streams "stream" to the executor
//                     (SendStreamingMessage), writing each event it reads
//                     ("stream"), then subscribes to the ended task
//                     ("resub") and gets it ("get")
//   stream through 0.3  the same in A2A 0.3 (message/stream,
//                     tasks/resubscribe, tasks/get); with LATE_GATE, it
//                     reads the ended task once that file exists
const express = require('express');
const { AGENT_CARD_PATH, A2A_PROTOCOL_VERSION, Role, TaskState } = require('@a2a-js/sdk');
const { InMemoryTaskStore, DefaultRequestHandler, AgentEvent } = require('@a2a-js/sdk/server');
const { agentCardHandler, jsonRpcHandler, UserBuilder } = require('@a2a-js/sdk/server/express');
const { ClientFactory } = require('@a2a-js/sdk/client');
const { Client: MCPClient } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

const ROLE = process.env.ROLE;
const REACH = process.env.REACH;
const PEERS = { planner: process.env.PLANNER, executor: process.env.EXECUTOR, verifier: process.env.VERIFIER };
const NEXT = { planner: 'executor', executor: 'verifier' };
const LINK = process.env.LINK || 'forward';
const CAP = Number(process.env.CAP || 30);
const IGNORE_CANCEL = process.env.IGNORE_CANCEL === '1';
const LATE = process.env.LATE === '1';

const emit = (o) => process.stdout.write(JSON.stringify({ role: ROLE, ...o }) + '\n');
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const textPart = (t) => ({ content: { $case: 'text', value: t }, mediaType: 'text/plain', filename: '', metadata: {} });
const textOf = (parts) => (parts || []).map((p) => (p.content && p.content.$case === 'text' ? p.content.value : '')).join('');
const agentMsg = (taskId, contextId, t) => ({ role: Role.ROLE_AGENT, messageId: crypto.randomUUID(), parts: [textPart(t)],
  taskId, contextId, extensions: [], metadata: {}, referenceTaskIds: [] });
const status = (taskId, contextId, state, t) => AgentEvent.statusUpdate({ taskId, contextId,
  status: { state, timestamp: new Date().toISOString(), message: t ? agentMsg(taskId, contextId, t) : undefined }, metadata: {} });

const card = {
  name: ROLE, description: `the ${ROLE} of the incident test`, version: '1.0.0',
  supportedInterfaces: [{ url: '', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
  capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
  securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text'], defaultOutputModes: ['text'],
  skills: [{ id: ROLE, name: ROLE, description: ROLE, tags: [ROLE], examples: [], inputModes: ['text'], outputModes: ['text'], securityRequirements: [] }],
  documentationUrl: '', signatures: [],
};

// link is what a task passes on: reach's headers and metadata (forward),
// or its own task id (protocol).
function linkOf(rc) {
  const h = rc.context.state.get('headers') || {};
  const md = rc.userMessage.metadata || {};
  if (LINK !== 'forward') return { headers: {}, meta: {}, refs: [rc.taskId] };
  const headers = {};
  for (const k of ['traceparent', 'baggage']) if (h[k]) headers[k] = h[k];
  const meta = {};
  for (const k of ['reach/request', 'reach/parent']) if (md[k]) meta[k] = md[k];
  return { headers, meta, refs: [] };
}

async function tools(link) {
  const c = new MCPClient({ name: ROLE, version: '1.0.0' });
  await c.connect(new StreamableHTTPClientTransport(new URL(REACH + '/mcp'), { requestInit: { headers: link.headers } }));
  return c;
}

async function callTool(c, args, name = 'get_order') {
  try {
    const r = await c.callTool({ name, arguments: args });
    const text = textOf2(r.content);
    emit({ event: 'tool', ok: !r.isError, code: (r._meta && r._meta['reach/error'] && r._meta['reach/error'].code) || '', text: text.slice(0, 300), t: now() });
    return r;
  } catch (e) {
    emit({ event: 'tool', ok: false, code: 'exception', text: String(e).slice(0, 300), t: now() });
    return null;
  }
}
const textOf2 = (content) => (content || []).map((c) => c.text || '').join('');

async function model(link, text) {
  const res = await fetch(REACH + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...link.headers },
    body: JSON.stringify({ model: 'scripted', messages: [{ role: 'system', content: `You are the ${ROLE}.` }, { role: 'user', content: text }] }),
  });
  const body = await res.json().catch(() => ({}));
  const out = res.ok ? body.choices[0].message.content : '';
  emit({ event: 'model', ok: res.ok, status: res.status, text: res.ok ? out : JSON.stringify(body).slice(0, 300) });
  return { ok: res.ok, text: out };
}

let ticks = 0;
const clients = {};
async function peer(name) {
  if (!clients[name]) clients[name] = await new ClientFactory().createFromUrl(PEERS[name]);
  return clients[name];
}

// legacy is a client of the peer that speaks A2A 0.3's JSON-RPC
// (message/stream, tasks/resubscribe, tasks/get), the SDK's compatibility
// transport.
async function legacy(name) {
  const { Client } = require('@a2a-js/sdk/client');
  const { LegacyJsonRpcTransport } = require('@a2a-js/sdk/compat/v0_3/client');
  return new Client(new LegacyJsonRpcTransport({ endpoint: PEERS[name] }), (await peer(name)).agentCard);
}

// handOff sends text to a peer and waits for its answer: {state, text}.
async function handOff(link, to, text) {
  const client = await peer(to);
  const message = { messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [textPart(text)], contextId: '', taskId: '',
    referenceTaskIds: link.refs, extensions: [], metadata: link.meta };
  let res;
  try {
    res = await client.sendMessage({ message }, { serviceParameters: link.headers });
  } catch (e) {
    emit({ event: 'delegate', to, state: 'ERROR', text: String(e).slice(0, 300) });
    return { state: 'ERROR', text: String(e) };
  }
  const state = res.status ? TaskState[res.status.state] : 'MESSAGE';
  const out = res.status ? textOf(res.status.message && res.status.message.parts) : textOf(res.parts);
  emit({ event: 'delegate', to, state, text: out.slice(0, 500), task: res.id || '' });
  return { state, text: out };
}

class Executor {
  constructor() { this.live = new Map(); }

  cancelTask = async (taskId, bus) => {
    emit({ event: 'cancel', task: taskId, t: now() });
    if (IGNORE_CANCEL) return;
    const l = this.live.get(taskId);
    if (l) {
      l.abort.abort();
      if (LATE) {
        bus.publish(AgentEvent.artifactUpdate({ taskId, contextId: l.contextId, append: false, lastChunk: true, metadata: {},
          artifact: { artifactId: 'late', name: 'late part', description: '', parts: [textPart('late part')], metadata: {}, extensions: [] } }));
        bus.publish(status(taskId, l.contextId, TaskState.TASK_STATE_WORKING, 'late status'));
        emit({ event: 'late', task: taskId });
      }
      bus.publish(status(taskId, l.contextId, TaskState.TASK_STATE_CANCELED, 'canceled'));
    }
  };

  async execute(rc, bus) {
    const { taskId, contextId } = rc;
    const text = textOf(rc.userMessage.parts);
    const link = linkOf(rc);
    const abort = new AbortController();
    this.live.set(taskId, { abort, contextId });
    emit({ event: 'task', task: taskId, text, meta: rc.userMessage.metadata || {}, context: contextId });
    bus.publish(AgentEvent.task(rc.task || { id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString() },
      artifacts: [], history: [rc.userMessage], metadata: {} }));
    bus.publish(status(taskId, contextId, TaskState.TASK_STATE_WORKING));
    let answer;
    try {
      const waited = rc.task && rc.task.status && rc.task.status.state;
      answer = waited === TaskState.TASK_STATE_INPUT_REQUIRED ? { text: 'colour: ' + text }
        : waited === TaskState.TASK_STATE_AUTH_REQUIRED ? (text === 'signed in' ? { text: 'authorized: the report is ready' }
          : { state: TaskState.TASK_STATE_AUTH_REQUIRED, text: 'still not signed in' })
        : await this.run(text, link, abort.signal, rc, bus);
    } catch (e) {
      answer = { state: TaskState.TASK_STATE_FAILED, text: String(e) };
    }
    this.live.delete(taskId);
    if (abort.signal.aborted) return; // canceled: cancelTask published it
    bus.publish(status(taskId, contextId, answer.state || TaskState.TASK_STATE_COMPLETED, answer.text));
    emit({ event: 'done', task: taskId, text: answer.text });
  }

  async run(text, link, signal, rc, bus) {
    if (text === 'stream') {
      for (let i = 1; i <= 5 && !signal.aborted; i++) {
        if (!(await model(link, 'stream ' + i)).ok) break;
        bus.publish(AgentEvent.artifactUpdate({ taskId: rc.taskId, contextId: rc.contextId, append: false, lastChunk: true, metadata: {},
          artifact: { artifactId: 'part-' + i, name: 'part ' + i, description: '', parts: [textPart('part ' + i)], metadata: {}, extensions: [] } }));
        bus.publish(status(rc.taskId, rc.contextId, TaskState.TASK_STATE_WORKING, 'streamed part ' + i));
        emit({ event: 'streamed', n: i });
        await sleep(20);
      }
      for (let i = 0; i < 500 && !signal.aborted; i++) await sleep(10);
      return { text: 'streamed' };
    }
    if (text === 'stream through' || text === 'stream through 0.3') {
      const client = text.endsWith('0.3') ? await legacy('executor') : await peer('executor');
      const message = { messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [textPart('stream')], contextId: '', taskId: '',
        referenceTaskIds: [], extensions: [], metadata: link.meta };
      const read = async (kind, gen) => {
        let id = '', last = '';
        try {
          for await (const ev of gen) {
            const p = ev.payload || {};
            const v = p.value || {};
            const st = p.$case === 'task' || p.$case === 'statusUpdate' ? v.status : undefined;
            id = id || v.id || v.taskId || '';
            if (st) last = TaskState[st.state];
            emit({ event: kind, kind: p.$case, task: v.id || v.taskId || '', state: st ? TaskState[st.state] : '',
              text: st ? textOf(st.message && st.message.parts) : p.$case === 'artifactUpdate' ? textOf(v.artifact.parts) : p.$case === 'message' ? textOf(v.parts) : '',
              artifacts: p.$case === 'task' ? (v.artifacts || []).map((a) => textOf(a.parts)) : undefined,
              history: p.$case === 'task' ? (v.history || []).map((m) => textOf(m.parts)) : undefined });
          }
          emit({ event: kind + '-end', task: id, state: last, version: client.protocolVersion });
        } catch (e) {
          emit({ event: kind + '-end', task: id, state: last, error: String(e).slice(0, 300) });
        }
        return id;
      };
      const id = await read('stream', client.sendMessageStream({ message }, { serviceParameters: link.headers }));
      // LATE_GATE: read the ended task only once that file exists (the
      // test makes it when the executor's late events are in its view).
      for (let i = 0; process.env.LATE_GATE && i < 3000 && !require('fs').existsSync(process.env.LATE_GATE); i++) await sleep(10);
      await read('resub', client.resubscribeTask({ tenant: '', id }, { serviceParameters: link.headers }));
      try {
        const t = await client.getTask({ tenant: '', id, historyLength: 0 }, { serviceParameters: link.headers });
        emit({ event: 'get', state: TaskState[t.status.state], text: textOf(t.status.message && t.status.message.parts), artifacts: (t.artifacts || []).length,
          parts: (t.artifacts || []).map((a) => textOf(a.parts)) });
        const h = await client.getTask({ tenant: '', id }, { serviceParameters: link.headers });
        emit({ event: 'get-history', state: TaskState[h.status.state], history: (h.history || []).map((m) => textOf(m.parts)),
          parts: (h.artifacts || []).map((a) => textOf(a.parts)) });
      } catch (e) {
        emit({ event: 'get', state: 'ERROR', text: String(e).slice(0, 300) });
      }
      return { text: 'read it' };
    }
    if (text.startsWith('incident')) return this.incident(link);
    if (text === 'ship order 1001') {
      await model(link, text);
      const c = await tools(link);
      const r = await callTool(c, { order_id: '1001' });
      await c.close();
      return { text: r && !r.isError ? 'shipped order 1001; tracking number: none' : 'could not ship: ' + textOf2(r && r.content) };
    }
    if (text === 'verify order 1001') return { text: (await model(link, text)).text };
    if (text === 'work') return this.work(link, signal);
    if (text === 'ask colour') return { state: TaskState.TASK_STATE_INPUT_REQUIRED, text: 'which colour?' };
    if (text === 'ask auth') return { state: TaskState.TASK_STATE_AUTH_REQUIRED, text: 'sign in to the report service, then say "signed in"' };
    if (text === 'ask through' || text === 'auth through' || text === 'auth through 0.3') {
      const client = text.endsWith('0.3') ? await legacy('executor') : await peer('executor');
      const auth = text.startsWith('auth');
      const ask = { messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [textPart(auth ? 'ask auth' : 'ask colour')], contextId: '', taskId: '',
        referenceTaskIds: [], extensions: [], metadata: link.meta };
      const q = await client.sendMessage({ message: ask }, { serviceParameters: link.headers });
      emit({ event: 'delegate', to: 'executor', state: TaskState[q.status.state], text: textOf(q.status.message && q.status.message.parts), task: q.id });
      const reply = { ...ask, messageId: crypto.randomUUID(), parts: [textPart(auth ? 'signed in' : 'blue')], taskId: q.id, contextId: q.contextId };
      const r = await client.sendMessage({ message: reply }, { serviceParameters: link.headers });
      const out = textOf(r.status.message && r.status.message.parts);
      emit({ event: 'delegate', to: 'executor', state: TaskState[r.status.state], text: out, task: r.id });
      return { text: `${TaskState[r.status.state]}: ${out}` };
    }
    if (text.startsWith('pingpong:')) {
      // Hand the other agent a new task, one step further each time (a
      // chain no task repeats); give up past 40 steps.
      const n = Number(text.slice('pingpong:'.length));
      if (n > 40) return { text: 'gave up at step ' + n };
      const r = await handOff(link, ROLE === 'planner' ? 'executor' : 'planner', 'pingpong:' + (n + 1));
      return { text: `step ${n} ${r.state}: ${r.text}` };
    }
    if (text.startsWith('cycle:')) {
      const r = await handOff(link, ROLE === 'planner' ? 'executor' : 'planner', text);
      return { text: `${r.state}: ${r.text}` };
    }
    if (text === 'budget') {
      const r = await handOff(link, 'executor', 'spend');
      const m = await model(link, 'finish it');
      return { text: `executor ${r.state} (${r.text}); finished myself: ${m.ok}` };
    }
    if (text === 'spend') {
      for (let i = 0; i < 50 && !signal.aborted; i++) {
        if (!(await model(link, 'spend ' + i)).ok) break;
      }
      for (let i = 0; i < 500 && !signal.aborted; i++) await sleep(10);
      return { text: 'spent' };
    }
    return { state: TaskState.TASK_STATE_FAILED, text: 'unknown task: ' + text };
  }

  async incident(link) {
    for (let round = 1; round <= CAP; round++) {
      emit({ event: 'round', n: round });
      await model(link, 'plan round ' + round);
      const e = await handOff(link, 'executor', 'ship order 1001');
      if (e.state !== 'TASK_STATE_COMPLETED') return { text: `stopped in round ${round}: the executor's hand-off ended ${e.state}: ${e.text}` };
      const v = await handOff(link, 'verifier', 'verify order 1001');
      if (v.state !== 'TASK_STATE_COMPLETED') return { text: `stopped in round ${round}: the verifier's hand-off ended ${v.state}: ${v.text}` };
      if (v.text.startsWith('APPROVED')) return { text: 'approved in round ' + round };
    }
    return { text: `gave up after ${CAP} rounds` };
  }

  async work(link, signal) {
    const c = await tools(link);
    let first = true;
    const loop = (async () => {
      for (let i = 0; !signal.aborted || IGNORE_CANCEL; i++) {
        // A fresh lookup each time (one the loop guard has no reason to stop).
        const r = await callTool(c, { query: `tick ${String(++ticks).padStart(6, '0')}` }, 'search_kb');
        if (first) { first = false; emit({ event: 'working' }); }
        const code = (r && r._meta && r._meta['reach/error'] && r._meta['reach/error'].code) || '';
        if (IGNORE_CANCEL && (code.startsWith('stopped') || code === 'request_ended')) break; // reach refuses: give up
        await sleep(20);
      }
    })();
    const next = NEXT[ROLE];
    if (next) handOff(link, next, 'work').catch(() => {});
    if (IGNORE_CANCEL) {
      await loop; // until reach refuses a call
    } else {
      await new Promise((r) => (signal.aborted ? r() : signal.addEventListener('abort', r)));
      await loop;
    }
    await c.close().catch(() => {});
    return { text: 'worked' };
  }
}

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Executor());
const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
app.use(jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
const server = app.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  card.supportedInterfaces[0].url = `http://127.0.0.1:${port}/`;
  emit({ event: 'listening', port });
});
