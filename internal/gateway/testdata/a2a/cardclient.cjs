// cardclient.cjs: the A2A JS SDK's client, made from the card at BASE
// (BASE/.well-known/agent-card.json), sends one message to the URL the
// card names and prints {url, state, text} or {error} as one JSON line.
const { Role, TaskState } = require('@a2a-js/sdk');
const { ClientFactory } = require('@a2a-js/sdk/client');

const textPart = (t) => ({ content: { $case: 'text', value: t }, mediaType: 'text/plain', filename: '', metadata: {} });
const textOf = (parts) => (parts || []).map((p) => (p.content && p.content.$case === 'text' ? p.content.value : '')).join('');

(async () => {
  let url = '';
  try {
    const client = await new ClientFactory().createFromUrl(process.env.BASE);
    url = client.agentCard.supportedInterfaces[0].url;
    const message = { messageId: crypto.randomUUID(), role: Role.ROLE_USER, parts: [textPart('hello')], contextId: '', taskId: '',
      referenceTaskIds: [], extensions: [], metadata: {} };
    const res = await client.sendMessage({ message });
    const state = res.status ? TaskState[res.status.state] : 'MESSAGE';
    const text = res.status ? textOf(res.status.message && res.status.message.parts) : textOf(res.parts);
    process.stdout.write(JSON.stringify({ url, state, text }) + '\n');
  } catch (e) {
    process.stdout.write(JSON.stringify({ url, error: String(e).slice(0, 500) }) + '\n');
  }
})();
