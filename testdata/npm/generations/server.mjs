// An MCP server built on one generation of the TypeScript SDK, for
// mcpfleet's fleet of every protocol generation
// (internal/testkit/generations). It uses only the SDK's low-level Server,
// which every version has, so that the same script runs on 1.0.4
// (2024-11-05) as on 1.32.2 (2025-11-25):
//
//   node server.mjs <sdk package> stdio|sse|http
//
// <sdk package> is the npm name it is installed under in testdata/npm
// (sdk-1-0, sdk-1-12, sdk-1-22, @modelcontextprotocol/sdk). sse serves the
// legacy HTTP+SSE transport at /sse (1.0.4 has no other), http Streamable
// HTTP at /mcp, on 127.0.0.1 and the port in MCP_PORT.
//
// Tools: echo (answers "echo: <message>"), grow (adds a tool, which the
// server announces with notifications/tools/list_changed) and crash (answers,
// then exits with status 3: a stdio server's restart).
import http from 'node:http';
import { randomUUID } from 'node:crypto';

const [pkg, mode] = process.argv.slice(2);
const { Server } = await import(`${pkg}/server/index.js`);
const types = await import(`${pkg}/types.js`);

const tools = [
  { name: 'echo', description: 'Echoes its message', inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] } },
  { name: 'grow', description: 'Adds a tool', inputSchema: { type: 'object', properties: {} } },
  { name: 'crash', description: 'Exits after answering', inputSchema: { type: 'object', properties: {} } },
];
const servers = new Set();

function newServer() {
  const server = new Server({ name: `generations-${pkg}`, version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  server.setRequestHandler(types.ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(types.CallToolRequestSchema, async (req) => {
    switch (req.params.name) {
      case 'echo':
        return { content: [{ type: 'text', text: `echo: ${req.params.arguments?.message}` }] };
      case 'grow':
        tools.push({ name: `grown-${tools.length - 2}`, description: 'A grown tool', inputSchema: { type: 'object', properties: {} } });
        for (const s of servers) {
          s.sendToolListChanged().catch(() => {});
        }
        return { content: [{ type: 'text', text: 'grown' }] };
      case 'crash':
        setTimeout(() => process.exit(3), 50);
        return { content: [{ type: 'text', text: 'crashing' }] };
    }
    throw new Error(`unknown tool ${req.params.name}`);
  });
  servers.add(server);
  server.onclose = () => servers.delete(server);
  return server;
}

if (mode === 'stdio') {
  const { StdioServerTransport } = await import(`${pkg}/server/stdio.js`);
  await newServer().connect(new StdioServerTransport());
} else {
  const port = parseInt(process.env.MCP_PORT ?? '0', 10);
  const sessions = new Map();
  let handler;
  if (mode === 'sse') {
    const { SSEServerTransport } = await import(`${pkg}/server/sse.js`);
    handler = async (req, res) => {
      const url = new URL(req.url, 'http://127.0.0.1');
      if (req.method === 'GET' && url.pathname === '/sse') {
        const t = new SSEServerTransport('/messages', res);
        sessions.set(t.sessionId, t);
        res.on('close', () => sessions.delete(t.sessionId));
        await newServer().connect(t);
      } else if (req.method === 'POST' && url.pathname === '/messages') {
        const t = sessions.get(url.searchParams.get('sessionId'));
        if (!t) {
          res.writeHead(404).end('no such session');
          return;
        }
        await t.handlePostMessage(req, res);
      } else {
        res.writeHead(404).end();
      }
    };
  } else {
    const { StreamableHTTPServerTransport } = await import(`${pkg}/server/streamableHttp.js`);
    handler = async (req, res) => {
      if (new URL(req.url, 'http://127.0.0.1').pathname !== '/mcp') {
        res.writeHead(404).end();
        return;
      }
      const id = req.headers['mcp-session-id'];
      if (id) {
        const t = sessions.get(id);
        if (!t) {
          res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
          return;
        }
        await t.handleRequest(req, res);
        return;
      }
      const t = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, t),
      });
      t.onclose = () => { if (t.sessionId) sessions.delete(t.sessionId); };
      await newServer().connect(t);
      await t.handleRequest(req, res);
    };
  }
  http.createServer((req, res) => {
    handler(req, res).catch((err) => {
      console.error(err);
      if (!res.headersSent) res.writeHead(500).end();
    });
  }).listen(port, '127.0.0.1', () => console.log(`generations server listening on port ${port}`));
}
