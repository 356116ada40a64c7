// The status page of a running mcpfleet serve. The token comes in the
// URL's fragment (never sent to a server), is kept for this tab only, and
// goes with every request as a bearer token: the page has no cookie, so no
// other site can act through it. What servers say is set as text, never
// as markup.
'use strict';

const tokenKey = 'mcpfleet-admin-token';
let token = new URLSearchParams(location.hash.slice(1)).get('token');
if (token) {
  sessionStorage.setItem(tokenKey, token);
  history.replaceState(null, '', location.pathname + location.search); // out of the address bar and history
} else {
  token = sessionStorage.getItem(tokenKey);
}

const rows = new Map(); // server name -> <tr>
const tbody = document.querySelector('#servers tbody');
const events = document.getElementById('events');
const live = document.getElementById('live');
const message = document.getElementById('message');

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function clock(t) {
  return new Date(t).toLocaleTimeString([], { hourCycle: 'h23' });
}

function firstLine(s) {
  return (s || '').split('\n')[0];
}

function setLive(ok, text) {
  live.dataset.live = ok ? 'yes' : 'no';
  live.textContent = text;
}

async function control(name, op, button) {
  button.disabled = true;
  message.textContent = '';
  try {
    const resp = await fetch('/v1/servers/' + encodeURIComponent(name) + '/' + op, {
      method: 'POST', headers: { Authorization: 'Bearer ' + token }, cache: 'no-store',
    });
    if (!resp.ok) {
      message.textContent = op + ' ' + name + ': ' + resp.status + ' ' + (await resp.text());
    }
  } catch (err) {
    message.textContent = op + ' ' + name + ': ' + err;
  } finally {
    button.disabled = false;
  }
}

function row(name) {
  let tr = rows.get(name);
  if (tr) return tr;
  tr = el('tr');
  tr.dataset.server = name;
  tr.append(el('td', 'name', name), el('td'), el('td', 'num'), el('td', 'num'), el('td', 'num'), el('td', 'num'),
    el('td', 'num'), el('td', 'cause'), el('td', 'actions'));
  const actions = tr.lastChild;
  for (const op of ['enable', 'disable', 'reconnect']) {
    const b = el('button', op, op[0].toUpperCase() + op.slice(1));
    b.type = 'button';
    b.dataset.op = op;
    b.addEventListener('click', () => control(name, op, b));
    actions.append(b);
  }
  rows.set(name, tr);
  tbody.append(tr);
  return tr;
}

function setState(tr, state) {
  tr.dataset.state = state;
  const cell = tr.children[1];
  cell.replaceChildren(el('span', 'state ' + state, state));
  const off = state === 'Disabled' || state === 'Disabling' || state === 'Closed';
  tr.querySelector('button[data-op="enable"]').hidden = !off;
  tr.querySelector('button[data-op="disable"]').hidden = off;
  tr.querySelector('button[data-op="reconnect"]').hidden = off;
}

function render(servers) {
  const seen = new Set();
  const counts = {};
  for (const s of servers) {
    seen.add(s.name);
    counts[s.state] = (counts[s.state] || 0) + 1;
    const tr = row(s.name);
    setState(tr, s.state);
    tr.dataset.generation = String(s.generation);
    const c = tr.children;
    c[2].textContent = s.generation;
    c[3].textContent = s.tools + (s.cached ? ' (cached)' : '');
    c[4].textContent = s.requests;
    c[5].textContent = s.failed;
    c[6].textContent = s.reconnects;
    let cause = '';
    if (s.authorizationUrl) cause = 'authorize: mcpfleet auth ' + s.name;
    else if (s.lastError) cause = firstLine(s.lastError);
    else if (s.catalogError) cause = 'catalog: ' + firstLine(s.catalogError);
    c[7].textContent = cause;
    c[7].title = s.lastError || '';
  }
  for (const [name, tr] of rows) {
    if (!seen.has(name)) {
      tr.remove();
      rows.delete(name);
    }
  }
  const parts = Object.keys(counts).sort().map((k) => counts[k] + ' ' + k);
  document.getElementById('summary').textContent =
    servers.length + (servers.length === 1 ? ' server' : ' servers') + (parts.length ? ': ' + parts.join(', ') : '');
}

function showServe(s) {
  let text = 'serve pid ' + s.pid + ' (' + (s.serving || 'stdio') + ', since ' +
    clock(s.started) + (s.version ? ', ' + s.version : '') + ')';
  if (s.config) text += ' of ' + s.config;
  document.getElementById('serve').textContent = text;
}

function showEvent(ev) {
  const li = el('li');
  li.dataset.server = ev.server;
  li.dataset.kind = ev.kind;
  let text = clock(ev.time) + ' ' + ev.server + ': ';
  if (ev.kind === 'state') {
    li.dataset.to = ev.to;
    text += ev.from + ' → ' + ev.to + ' (generation ' + (ev.generation || 0) + ')';
    const tr = rows.get(ev.server);
    if (tr) setState(tr, ev.to); // at once: the next snapshot may already be past it
  } else if (ev.kind === 'catalog') {
    text += 'catalog' + (ev.added ? ' +' + ev.added.length : '') + (ev.removed ? ' -' + ev.removed.length : '') +
      (ev.changed ? ' ~' + ev.changed.length : '');
  } else {
    text += ev.kind + (ev.method ? ' ' + ev.method : '');
  }
  if (ev.error) text += ': ' + firstLine(ev.error);
  li.textContent = text;
  events.prepend(li);
  while (events.children.length > 50) events.lastChild.remove();
}

// events reads the serve's server-sent events (a fetch, which can send the
// token; EventSource cannot), and reconnects when the stream ends.
async function follow() {
  for (;;) {
    try {
      const resp = await fetch('/v1/events', { headers: { Authorization: 'Bearer ' + token }, cache: 'no-store' });
      if (resp.status === 401) {
        setLive(false, 'the token is missing or wrong: open the URL mcpfleet status --web prints');
        return;
      }
      if (!resp.ok) throw new Error(resp.status + ' ' + (await resp.text()));
      setLive(true, 'live');
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let at;
        while ((at = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, at);
          buf = buf.slice(at + 2);
          let type = 'message';
          const data = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) type = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length === 0) continue;
          const v = JSON.parse(data.join('\n'));
          if (type === 'servers') render(v);
          else if (type === 'event') showEvent(v);
          else if (type === 'serve') showServe(v);
        }
      }
      setLive(false, 'the serve ended the stream; reconnecting');
    } catch (err) {
      setLive(false, 'not connected: ' + err.message);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

if (!token) {
  setLive(false, 'no token: open the URL mcpfleet status --web prints');
} else {
  follow();
}
