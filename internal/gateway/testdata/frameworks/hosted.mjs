// hosted.mjs runs OpenAI Agents on its defaults with a hosted MCP tool
// (hostedMcpTool: the model's endpoint calls the server itself) beside
// reach's MCP tools, its model through reach's model proxy. The gateway's
// tests (frameworks_hosted_test.go) copy it beside the frameworks'
// node_modules and read the JSON line it prints last: {ok, text, error,
// status}.
//
//   MODEL_URL  the OpenAI-compatible base URL (reach's /v1)
//   MCP_URL    reach's MCP endpoint
//   HOSTED_URL the hosted MCP tool's server_url

const { MODEL_URL, MCP_URL, HOSTED_URL } = process.env;

function out(v) {
  return new Promise((resolve) => process.stdout.write(JSON.stringify(v) + '\n', resolve));
}

async function main() {
  const { Agent, run, MCPServerStreamableHttp, hostedMcpTool, setDefaultOpenAIClient } = await import('@openai/agents');
  const { default: OpenAI } = await import('openai');
  setDefaultOpenAIClient(new OpenAI({ baseURL: MODEL_URL, apiKey: 'sk-test' }));
  const mcp = new MCPServerStreamableHttp({ url: MCP_URL, name: 'reach' });
  await mcp.connect();
  try {
    const agent = new Agent({
      name: 'assistant',
      instructions: 'Use the tools.',
      model: 'scripted',
      mcpServers: [mcp],
      tools: [hostedMcpTool({ serverLabel: 'shop', serverUrl: HOSTED_URL })],
    });
    const result = await run(agent, 'look up refunds', { maxTurns: 4 });
    return { ok: true, text: String(result.finalOutput ?? '') };
  } finally {
    await mcp.close();
  }
}

try {
  await out(await main());
} catch (e) {
  const status = [e?.status, e?.cause?.status].find((v) => typeof v === 'number');
  await out({ ok: false, error: String(e?.message ?? e).slice(0, 2000), status: status ?? null });
}
process.exit(0);
