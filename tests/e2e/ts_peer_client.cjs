// A TypeScript-SDK client (@modelcontextprotocol/sdk, plain CommonJS) that walks a
// server's surface: initialize, ping, tools/list, the given tools/call requests
// (plus one to a tool that does not exist), resources/list + read of the first
// resource, prompts/list + get of the first prompt without required arguments.
//
//   node ts_peer_client.cjs SDK_DIR stdio CALLS_JSON -- CMD [ARGS...]
//   node ts_peer_client.cjs SDK_DIR http  CALLS_JSON URL
//
// CALLS_JSON: [{"name": "...", "arguments": {...}}, ...], or "auto": call every listed tool
// with arguments made from its inputSchema (enum[0], default, or a value of the type),
// and also walk the optional features the server declares (logging/setLevel, resource
// subscribe/unsubscribe, completion/complete, paginated lists, progress tokens), with
// sampling/elicitation/roots handlers on the client side. Prints one line per step
// on stdout ("ok <step>" / "err <step> <message>"); exits 1 if the session fails.
'use strict';
const path = require('path');
const [sdk, mode, callsJson, ...rest] = process.argv.slice(2);
const req = (p) => require(path.join(sdk, 'dist', 'cjs', p));
const { Client } = req('client/index.js');

async function step(name, fn) {
  try {
    const r = await fn();
    console.log(`ok ${name}`);
    return r;
  } catch (e) {
    console.log(`err ${name} ${String(e && e.message).split('\n')[0]}`);
    return undefined;
  }
}

function valueFor(s) {
  if (!s || typeof s !== 'object') return 'x';
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  if ('default' in s) return s.default;
  const t = Array.isArray(s.type) ? s.type[0] : s.type;
  if (t === 'number' || t === 'integer') return s.minimum !== undefined ? s.minimum : 1;
  if (t === 'boolean') return false;
  if (t === 'array') return [];
  if (t === 'object') return argsFor(s);
  return 'x';
}

function argsFor(schema) {
  const out = {};
  for (const k of (schema && schema.required) || []) out[k] = valueFor((schema.properties || {})[k]);
  // short runs: long-running demo tools take a duration in seconds
  if (schema && schema.properties && 'duration' in schema.properties) out.duration = 1;
  return out;
}

async function main() {
  let transport;
  if (mode === 'stdio') {
    const { StdioClientTransport } = req('client/stdio.js');
    const cmd = rest[0] === '--' ? rest.slice(1) : rest;
    transport = new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), env: process.env, stderr: 'inherit' });
  } else {
    const { StreamableHTTPClientTransport } = req('client/streamableHttp.js');
    transport = new StreamableHTTPClientTransport(new URL(rest[0]));
  }
  const auto = callsJson === 'auto';
  const clientCaps = auto ? { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } } : {};
  const client = new Client({ name: 'mcptap-ts-client', version: '1.0.0' }, { capabilities: clientCaps });
  if (auto) {
    const t = req('types.js');
    client.setRequestHandler(t.CreateMessageRequestSchema, async () => ({
      role: 'assistant', model: 'mcptap-test', stopReason: 'endTurn', content: { type: 'text', text: 'sampled' },
    }));
    client.setRequestHandler(t.ElicitRequestSchema, async () => ({ action: 'decline' }));
    client.setRequestHandler(t.ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///tmp', name: 'tmp' }] }));
  }
  await client.connect(transport);
  console.log(`ok initialize ${client.getServerVersion().name}`);
  const caps = client.getServerCapabilities() || {};
  await step('ping', () => client.ping());
  if (auto && caps.logging) await step('logging/setLevel', () => client.setLoggingLevel('debug'));
  if (caps.tools) {
    const tl = await step('tools/list', () => client.listTools());
    const tools = (tl && tl.tools) || [];
    const calls = auto ? tools.map((x) => ({ name: x.name, arguments: argsFor(x.inputSchema) })) : JSON.parse(callsJson || '[]');
    for (const c of calls) {
      const opts = auto ? { onprogress: () => {}, timeout: 20000 } : undefined;
      const t = tools.find((x) => x.name === c.name);
      if (auto && t && t.execution && t.execution.taskSupport === 'required') {
        await step(`tools/call ${c.name} (task)`, async () => {
          const kinds = [];
          for await (const m of client.experimental.tasks.callToolStream({ name: c.name, arguments: c.arguments }, undefined, { task: { ttl: 60000 } })) kinds.push(m.type);
          if (!kinds.includes('result')) throw new Error(`no result: ${kinds.join(',')}`);
        });
        continue;
      }
      await step(`tools/call ${c.name}`, () => client.callTool({ name: c.name, arguments: c.arguments || {} }, undefined, opts));
    }
    await step('tools/call missing', () => client.callTool({ name: 'no_such_tool_mcptap', arguments: {} }));
    // switch the demo timers (server-everything's toggle-* tools) off again: while they run the
    // server keeps running after stdin EOF (so does a task it still holds: docs/real-peers.md)
    for (const c of calls.filter((x) => auto && x.name.startsWith('toggle-'))) {
      await step(`tools/call ${c.name} (off)`, () => client.callTool({ name: c.name, arguments: c.arguments || {} }));
    }
    const slow = auto && tools.find((x) => x.inputSchema && x.inputSchema.properties && 'duration' in x.inputSchema.properties);
    if (slow) {
      // cancellation: the SDK sends notifications/cancelled when the signal aborts
      const ac = new AbortController();
      setTimeout(() => ac.abort('mcptap test'), 300);
      await step(`tools/call ${slow.name} (cancelled)`, () => client.callTool({ name: slow.name, arguments: { ...argsFor(slow.inputSchema), duration: 2 } }, undefined, { signal: ac.signal }))
        .then(() => new Promise((r) => setTimeout(r, 2200)));  // a late answer would land here
    }
    if (auto && caps.tasks && caps.tasks.list) await step('tasks/list', () => client.experimental.tasks.listTasks());
  }
  if (caps.resources) {
    const rs = await step('resources/list', () => client.listResources());
    if (rs && rs.resources.length) await step('resources/read', () => client.readResource({ uri: rs.resources[0].uri }));
    if (auto && rs && rs.nextCursor) await step('resources/list page 2', () => client.listResources({ cursor: rs.nextCursor }));
    if (auto && caps.resources.subscribe && rs && rs.resources.length) {
      await step('resources/subscribe', () => client.subscribeResource({ uri: rs.resources[0].uri }));
      await new Promise((r) => setTimeout(r, 300));
      await step('resources/unsubscribe', () => client.unsubscribeResource({ uri: rs.resources[0].uri }));
    }
    await step('resources/templates/list', () => client.listResourceTemplates());
  }
  if (caps.prompts) {
    const ps = await step('prompts/list', () => client.listPrompts());
    const p = ps && ps.prompts.find((x) => !(x.arguments || []).some((a) => a.required));
    if (p) await step('prompts/get', () => client.getPrompt({ name: p.name, arguments: {} }));
    const withArg = ps && ps.prompts.find((x) => (x.arguments || []).length);
    if (auto && caps.completions && withArg) {
      await step('completion/complete', () => client.complete({
        ref: { type: 'ref/prompt', name: withArg.name }, argument: { name: withArg.arguments[0].name, value: '' },
      }));
    }
  }
  if (mode === 'http' && transport.sessionId) await step('terminate', () => transport.terminateSession());
  const proc = mode === 'stdio' && transport._process;
  if (proc && proc.exitCode === null) {
    // Let the server (here: the tap) end on stdin EOF. The SDK's close() sends SIGTERM after 2 s
    // and SIGKILL after 4 s, too soon for a tap on a loaded machine to write its end record.
    const closed = new Promise((r) => proc.once('close', r));
    proc.stdin.end();
    await Promise.race([closed, new Promise((r) => setTimeout(r, 60000))]);
  }
  await client.close();
}

main().then(() => process.exit(0), (e) => {
  console.log(`fail ${String(e && e.stack)}`);
  process.exit(1);
});
