// The official TypeScript SDK client (from the npm cache of server-everything's
// dependencies) driving a Streamable HTTP server: node ts_client.cjs SDK_DIST_CJS URL
const [base, url] = process.argv.slice(2);
const { Client } = require(base + "/client/index.js");
const { StreamableHTTPClientTransport } = require(base + "/client/streamableHttp.js");
(async () => {
  const client = new Client({ name: "ts-client", version: "1.0.0" }, { capabilities: { roots: { listChanged: true } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const tools = await client.listTools();
  const args = { echo: { text: "hi" }, add: { a: 1, b: 2 }, slow: { steps: 1 } };
  for (const t of tools.tools) {
    if (!(t.name in args)) continue;
    const r = await client.callTool({ name: t.name, arguments: args[t.name] });
    if (r.isError) throw new Error(`${t.name} failed`);
  }
  await client.listPrompts();
  await client.listResources();
  await client.ping();
  await client.close();
  console.log("ok", tools.tools.length);
})().catch(e => { console.error("FAILED", e); process.exit(1); });
