// A downstream MCP client for the gateway's tests: the official TypeScript
// SDK's Client, unmodified, driven by JSON lines.
//
//   node client.mjs SDK_DIR stdio COMMAND [ARGS...]
//   node client.mjs SDK_DIR http URL
//
// Over HTTP it sends $TSCLIENT_TOKEN as its bearer token, or, with
// $TSCLIENT_OAUTH set to a user's name, does the OAuth flow itself (see
// below). A connection that fails prints {"event":"failed","error":...}
// and exits.
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
let connected = false;
if (mode === "stdio") {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env, stderr: "inherit" });
} else if (process.env.TSCLIENT_OAUTH) {
  // The SDK's own OAuth: on the server's 401 it discovers the protected
  // resource metadata and the authorization server, registers, and sends
  // the user to authorize; here the "browser" is a fetch that names the
  // user (TSCLIENT_OAUTH) to the test authorization server, which approves
  // at once, and takes the code from its redirect.
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  const { UnauthorizedError } = await sdk("client/auth.js");
  const provider = {
    redirectUrl: "http://127.0.0.1:9/callback",
    clientMetadata: { client_name: "ts-client", redirect_uris: ["http://127.0.0.1:9/callback"],
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" },
    clientInformation() { return this.info; },
    saveClientInformation(info) { this.info = info; },
    tokens() { return this.saved; },
    saveTokens(tokens) { this.saved = tokens; },
    saveCodeVerifier(v) { this.verifier = v; },
    codeVerifier() { return this.verifier; },
    async redirectToAuthorization(url) {
      const res = await fetch(url, { redirect: "manual", headers: { "X-Test-User": process.env.TSCLIENT_OAUTH } });
      const loc = res.headers.get("location");
      if (!loc) throw new Error("authorization answered " + res.status + " without a redirect");
      this.code = new URL(loc).searchParams.get("code");
    },
  };
  const url = new URL(rest[0]);
  transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  try {
    await client.connect(transport);
    connected = true;
  } catch (e) {
    if (!(e instanceof UnauthorizedError) || !provider.code) {
      out({ event: "failed", error: String(e?.message ?? e) });
      process.exit(1);
    }
    await transport.finishAuth(provider.code);
    transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  }
} else {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  const token = process.env.TSCLIENT_TOKEN;
  transport = new StreamableHTTPClientTransport(new URL(rest[0]),
    token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : undefined);
}
if (!connected) {
  try {
    await client.connect(transport);
  } catch (e) {
    // Connecting failed: say why on stdout for the test, then leave.
    out({ event: "failed", error: String(e?.message ?? e) });
    process.exit(1);
  }
}
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
