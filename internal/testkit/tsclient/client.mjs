// A downstream MCP client for the gateway's tests: the official TypeScript
// SDK's Client, unmodified, driven by JSON lines.
//
//   node client.mjs SDK_DIR stdio COMMAND [ARGS...]
//   node client.mjs SDK_DIR http URL
//
// It connects, then prints {"event":"ready"} and reads commands from stdin,
// one JSON object a line, answering each with a line that carries its id:
//
//   {"id":1,"op":"list"}                              -> {"id":1,"tools":["a__echo",...]}
//   {"id":2,"op":"call","name":"a__echo","arguments":{"text":"x"}}
//                                                     -> {"id":2,"result":{...}} | {"id":2,"error":"..."}
//   {"id":3,"op":"close"}                             -> {"id":3,"closed":true}, then it exits
//
// Notifications become events: {"event":"tools/list_changed"}, and the
// server's sampling, elicitation and roots requests are answered as
// "ts-client" ({"event":"asked","method":...} is printed for each); its
// roots are those of $TSCLIENT_ROOTS (comma-separated URIs), or
// file:///ts-client.
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const [sdkDir, mode, ...rest] = process.argv.slice(2);
const sdk = (p) => import(pathToFileURL(path.join(sdkDir, "dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const types = await sdk("types.js");

const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

const client = new Client(
  { name: "ts-client", version: "1.0.0" },
  { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } },
);
client.setNotificationHandler(types.ToolListChangedNotificationSchema, () => out({ event: "tools/list_changed" }));
client.setRequestHandler(types.CreateMessageRequestSchema, (req) => {
  out({ event: "asked", method: "sampling/createMessage" });
  const text = req.params.messages[0]?.content?.text ?? "";
  return { model: "ts", role: "assistant", content: { type: "text", text: "ts-client answers " + text } };
});
client.setRequestHandler(types.ElicitRequestSchema, () => {
  out({ event: "asked", method: "elicitation/create" });
  return { action: "accept", content: { name: "ts-client" } };
});
// TSCLIENT_ROOTS, comma-separated URIs, are the client's roots.
const roots = (process.env.TSCLIENT_ROOTS || "file:///ts-client").split(",").map((uri) => ({ uri, name: uri }));
client.setRequestHandler(types.ListRootsRequestSchema, () => {
  out({ event: "asked", method: "roots/list" });
  return { roots };
});

let transport;
if (mode === "stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env, stderr: "inherit" });
} else {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  const token = process.env.TSCLIENT_TOKEN;
  transport = new StreamableHTTPClientTransport(new URL(rest[0]),
    token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : undefined);
}
await client.connect(transport);
out({ event: "ready", server: client.getServerVersion() });

// Commands run concurrently: a call waiting for its answer does not hold
// up the next command.
async function handle(cmd) {
  try {
    switch (cmd.op) {
      case "list": {
        const res = await client.listTools();
        out({ id: cmd.id, tools: res.tools.map((t) => t.name).sort() });
        break;
      }
      case "call": {
        const res = await client.callTool({ name: cmd.name, arguments: cmd.arguments ?? {} }, undefined, { timeout: 120000 });
        out({ id: cmd.id, result: res });
        break;
      }
      case "close":
        await client.close();
        out({ id: cmd.id, closed: true });
        process.exit(0);
        break;
      default:
        out({ id: cmd.id, error: "unknown op " + cmd.op });
    }
  } catch (e) {
    out({ id: cmd.id, error: String(e?.message ?? e) });
  }
}

const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  if (line.trim()) handle(JSON.parse(line));
});
rl.on("close", async () => {
  await client.close();
  process.exit(0);
});
