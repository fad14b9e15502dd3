// A client of mcpmon's /mcp built with the TypeScript SDK
// (@modelcontextprotocol/sdk, installed in prober/testdata/ts-sdk by
// .ci/start-tsmcp.sh). It lists the tools, calls list_endpoints and
// get_endpoint and prints what it saw as one JSON line; the SDK itself
// validates each structuredContent against the tool's outputSchema.
//
// usage: node tsclient.cjs SDK_APP_DIR MCP_URL API_KEY ENDPOINT_ID
'use strict';
const { createRequire } = require('node:module');
const path = require('node:path');

const [appDir, url, key, endpointId] = process.argv.slice(2);
const sdk = createRequire(path.join(appDir, 'package.json'));
const { Client } = sdk('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = sdk('@modelcontextprotocol/sdk/client/streamableHttp.js');

async function main() {
  const client = new Client({ name: 'mcpmon-ts-client', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  const tools = await client.listTools();
  const list = await client.callTool({ name: 'list_endpoints', arguments: { limit: 10 } });
  const get = await client.callTool({ name: 'get_endpoint', arguments: { id: endpointId } });
  const missing = await client.callTool({ name: 'get_endpoint', arguments: { id: 'nosuch' } });
  console.log(JSON.stringify({
    protocolVersion: transport.protocolVersion,
    tools: tools.tools.map((t) => ({ name: t.name, annotations: t.annotations, outputSchema: !!t.outputSchema })),
    list: { isError: !!list.isError, structuredContent: list.structuredContent },
    get: { isError: !!get.isError, structuredContent: get.structuredContent },
    missing: { isError: !!missing.isError, text: (missing.content || []).map((c) => c.text || '').join('') },
  }));
  await client.close();
}

main().catch((err) => {
  console.error((err && err.stack) || String(err));
  process.exit(1);
});
