#!/usr/bin/env bash
# frameworks-deps.sh installs the agent frameworks that the gateway's
# interoperability tests (internal/gateway, TestFrameworks*) run on their
# default settings against reach: OpenAI Agents (@openai/agents), LangGraph
# (@langchain/langgraph with @langchain/mcp-adapters and @langchain/openai),
# LangChain's agent (langchain, its createAgent), Ax (@ax-llm/ax),
# the AI SDK (ai with @ai-sdk/mcp and @ai-sdk/openai), Mastra (@mastra/core
# with @mastra/mcp), Genkit (genkit with @genkit-ai/mcp and
# @genkit-ai/compat-oai), VoltAgent (@voltagent/core, in voltagent/), KaibanJS
# (kaibanjs, in kaibanjs/), LlamaIndex TS (@llamaindex/workflow, in
# llamaindex/), BeeAI (beeai-framework, in beeai/), Google's ADK (@google/adk,
# in adk/), Strands Agents (@strands-agents/sdk, in strands/) and the MCP
# Inspector's CLI
# (@modelcontextprotocol/inspector, in inspector/), with the MCP
# TypeScript SDK client of the sessionless protocol (@modelcontextprotocol/
# client) and the 1.x SDK (@modelcontextprotocol/sdk), whose SSEClientTransport
# OpenAI Agents' MCPServerSSE and LlamaIndex use on /sse, into a repo-local, gitignored folder (.cache/frameworks by
# default; override with REACH_FRAMEWORKS_CACHE). Several of them need Node
# 22, which may be newer than the system node, so Node 22 comes along (as the
# npm package node, in node_modules/node/bin); they install with the npm of
# Node 20. The agents' own code is in internal/gateway/testdata/frameworks.
# Without node and npm it prints why and exits 0: the Go tests then skip
# with the same message (and fail under make test, where REACH_CI is set).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${REACH_FRAMEWORKS_CACHE:-$root/.cache/frameworks}"

# Pinned so that a run today and a run next month test the same frameworks.
pkgs=(
	@openai/agents@0.20.0
	openai@7.59.0
	zod@4.6.7
	@langchain/langgraph@1.7.3
	@langchain/mcp-adapters@1.1.4
	@langchain/openai@1.6.0
	@langchain/core@1.4.0
	langchain@1.5.14
	@ax-llm/ax@24.0.21
	ai@7.0.173
	@ai-sdk/mcp@2.0.99
	@ai-sdk/openai@4.0.118
	@modelcontextprotocol/client@2.4.0
	@modelcontextprotocol/sdk@1.32.2
	@mastra/core@1.71.0
	@mastra/mcp@2.0.0
	genkit@1.42.0
	@genkit-ai/mcp@1.42.0
	@genkit-ai/compat-oai@1.42.0
	node@22.23.3
)

# VoltAgent wants the AI SDK 6 (its peer ai ^6), which the AI SDK 7 above
# would conflict with: it has a folder of its own, voltagent/, beside.
voltagent=(
	@voltagent/core@2.10.0
	ai@6.0.333
	@ai-sdk/openai@3.0.141
	@modelcontextprotocol/sdk@1.32.2
	zod@4.6.7
)

# The MCP Inspector's CLI (@modelcontextprotocol/inspector --cli), in
# inspector/: a client a user runs by hand, with its own SDK and zod.
inspector=(
	@modelcontextprotocol/inspector@2.12.0
)

# KaibanJS (kaibanjs) is on LangChain 0.3, which the LangChain 1 above would
# conflict with: it has kaibanjs/, with the MCP adapters it documents (the
# last for LangChain 0.3) on the last MCP SDK of zod 3 (1.22; the adapters'
# schemas fail on the zod 4 schemas of later SDKs).
kaibanjs=(
	kaibanjs@0.23.1
	@langchain/mcp-adapters@0.6.0
	@modelcontextprotocol/sdk@1.22.0
)

# LlamaIndex TS (its agent of @llamaindex/workflow, @llamaindex/openai and
# the MCP client of @llamaindex/tools), in llamaindex/.
llamaindex=(
	@llamaindex/workflow@1.1.25
	@llamaindex/openai@0.4.23
	@llamaindex/tools@0.2.1
)

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "frameworks-deps: node or npm not found; the agent framework tests will be skipped"
	exit 0
fi

# BeeAI (beeai-framework), in beeai/: its AI SDK 6 provider and the MCP SDK it
# takes tools from are optional peers, and zod 3 (its resolution) beside the
# zod 4 above; --legacy-peer-deps, since its optional LangChain peers conflict
# with each other.
beeai=(
	beeai-framework@0.1.30
	@ai-sdk/openai@3.0.141
	@modelcontextprotocol/sdk@1.32.2
	zod@3.25.76
)

# Google's ADK for TypeScript (@google/adk), in adk/, with the MCP SDK its
# MCPToolset takes as a peer.
adk=(
	@google/adk@2.0.0
	@modelcontextprotocol/sdk@1.32.2
)

# Strands Agents for TypeScript (@strands-agents/sdk), in strands/: the openai
# SDK 6 and the MCP SDK are its optional peers (--legacy-peer-deps: its other
# optional peers conflict).
strands=(
	@strands-agents/sdk@1.19.0
	openai@6.45.0
	@modelcontextprotocol/sdk@1.32.2
	zod@4.6.7
)

# Releases of the MCP TypeScript SDK 1.x whose newest protocol is an older
# one, in mcp-sdk-old/, each under an alias of its protocol: clients that
# never heard of the protocols reach prefers (TestFrameworksOlderProtocols).
mcpsdkold=(
	sdk-2025-03-26@npm:@modelcontextprotocol/sdk@1.11.5
	sdk-2025-06-18@npm:@modelcontextprotocol/sdk@1.17.5
)

stamp="$prefix/.installed"
want="${pkgs[*]} voltagent: ${voltagent[*]} inspector: ${inspector[*]} kaibanjs: ${kaibanjs[*]} llamaindex: ${llamaindex[*]} beeai: ${beeai[*]} adk: ${adk[*]} strands: ${strands[*]} mcp-sdk-old: ${mcpsdkold[*]}"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
	echo "frameworks-deps: up to date in $prefix"
	exit 0
fi

mkdir -p "$prefix"
echo "frameworks-deps: installing into $prefix: ${pkgs[*]}"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error --save-exact "${pkgs[@]}"
mkdir -p "$prefix/voltagent"
echo "frameworks-deps: installing into $prefix/voltagent: ${voltagent[*]}"
npm install --prefix "$prefix/voltagent" --no-audit --no-fund --loglevel=error --save-exact "${voltagent[@]}"
mkdir -p "$prefix/inspector"
echo "frameworks-deps: installing into $prefix/inspector: ${inspector[*]}"
npm install --prefix "$prefix/inspector" --no-audit --no-fund --loglevel=error --save-exact "${inspector[@]}"
mkdir -p "$prefix/kaibanjs"
echo "frameworks-deps: installing into $prefix/kaibanjs: ${kaibanjs[*]} llamaindex: ${llamaindex[*]}"
npm install --prefix "$prefix/kaibanjs" --no-audit --no-fund --loglevel=error --save-exact "${kaibanjs[@]}"
mkdir -p "$prefix/llamaindex"
echo "frameworks-deps: installing into $prefix/llamaindex: ${llamaindex[*]}"
npm install --prefix "$prefix/llamaindex" --no-audit --no-fund --loglevel=error --save-exact "${llamaindex[@]}"
mkdir -p "$prefix/beeai"
echo "frameworks-deps: installing into $prefix/beeai: ${beeai[*]}"
npm install --prefix "$prefix/beeai" --no-audit --no-fund --loglevel=error --save-exact --legacy-peer-deps "${beeai[@]}"
mkdir -p "$prefix/adk"
echo "frameworks-deps: installing into $prefix/adk: ${adk[*]}"
npm install --prefix "$prefix/adk" --no-audit --no-fund --loglevel=error --save-exact "${adk[@]}"
mkdir -p "$prefix/strands"
echo "frameworks-deps: installing into $prefix/strands: ${strands[*]}"
npm install --prefix "$prefix/strands" --no-audit --no-fund --loglevel=error --save-exact --legacy-peer-deps "${strands[@]}"
mkdir -p "$prefix/mcp-sdk-old"
echo "frameworks-deps: installing into $prefix/mcp-sdk-old: ${mcpsdkold[*]}"
npm install --prefix "$prefix/mcp-sdk-old" --no-audit --no-fund --loglevel=error --save-exact "${mcpsdkold[@]}"
echo "$want" >"$stamp"
