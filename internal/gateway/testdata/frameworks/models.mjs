// models.mjs asks reach's model proxy for its models with the openai SDK
// (models.list and models.retrieve), as a tool set to an OpenAI-compatible
// base URL does first. The gateway's tests (frameworks_models_test.go) copy
// it beside the frameworks' node_modules and read the JSON line it prints
// last: {ids, retrieved, missing}.
//
//   MODEL_URL  the OpenAI-compatible base URL (reach's /v1)

const { MODEL_URL } = process.env;
const { default: OpenAI } = await import('openai');
const client = new OpenAI({ baseURL: MODEL_URL, apiKey: 'sk-test', maxRetries: 0 });
const res = {};
try {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  res.ids = ids;
  res.retrieved = (await client.models.retrieve('org/m-1')).id;
  try {
    await client.models.retrieve('nope');
  } catch (e) {
    res.missing = `${e.status} ${e.code}`;
  }
} catch (e) {
  res.error = String(e?.message ?? e).slice(0, 2000);
}
process.stdout.write(JSON.stringify(res) + '\n', () => process.exit(0));
