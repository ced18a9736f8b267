// An MCP client on the official TypeScript SDK, run by internal/api's
// TestMCP_TypeScriptClient: it connects to OUTBOXD_MCP_URL over Streamable
// HTTP with OUTBOXD_TOKEN, lists the tools, calls the tool named by
// MCP_ALLOW_TOOL with MCP_ALLOW_ARGUMENTS and then the one named by
// MCP_APPROVAL_TOOL with MCP_APPROVAL_ARGUMENTS (which a human approves
// while it waits), and prints what it saw as one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`client.mjs: ${name} is not set`);
    process.exit(2);
  }
  return value;
};

const transport = new StreamableHTTPClientTransport(new URL(env("OUTBOXD_MCP_URL")), {
  requestInit: { headers: { Authorization: `Bearer ${env("OUTBOXD_TOKEN")}` } },
});
const client = new Client({ name: "outboxd-ts-test", version: "1.0.0" });
await client.connect(transport);

const { tools } = await client.listTools();
const allow = await client.callTool({
  name: env("MCP_ALLOW_TOOL"),
  arguments: JSON.parse(env("MCP_ALLOW_ARGUMENTS")),
});
const approval = await client.callTool(
  { name: env("MCP_APPROVAL_TOOL"), arguments: JSON.parse(env("MCP_APPROVAL_ARGUMENTS")) },
  undefined,
  { timeout: 60_000 },
);
console.log(JSON.stringify({ tools: tools.map((t) => t.name), allow, approval }));
await client.close();
