/**
 * The dashboard: one page, no build step. It keeps the bearer token from the URL fragment
 * (`/#token=…`, never sent to the server in a URL), lists the tenant's library and tasks, streams
 * each running task's progress over SSE (read with fetch, since EventSource cannot send an
 * Authorization header), and offers start, cancel, retry-failed and the exports.
 */
export function dashboardHtml(prefix: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ASL full-text extraction</title>
<style>
  :root { --ink: #1d2433; --muted: #5b6475; --line: #e3e7ee; --ok: #1f8a4c; --bad: #c0392b; --warn: #b7791f; --accent: #2b59c3; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f6f7fb; }
  header { background: #fff; border-bottom: 1px solid var(--line); padding: 14px 24px; display: flex; align-items: baseline; gap: 16px; }
  header h1 { font-size: 18px; margin: 0; }
  header .who { color: var(--muted); }
  main { display: grid; grid-template-columns: minmax(280px, 1fr) 2fr; gap: 20px; padding: 20px 24px; }
  section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px; }
  h2 { font-size: 15px; margin: 0 0 12px; display: flex; justify-content: space-between; align-items: center; }
  button { font: inherit; border: 1px solid var(--line); background: #fff; border-radius: 6px; padding: 5px 10px; cursor: pointer; }
  button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
  button:disabled { opacity: .5; cursor: default; }
  .docs { max-height: 60vh; overflow: auto; border: 1px solid var(--line); border-radius: 6px; }
  .docs label { display: flex; gap: 8px; padding: 5px 8px; border-bottom: 1px solid var(--line); }
  .docs label:last-child { border-bottom: 0; }
  .docs .file { color: var(--muted); margin-left: auto; font-size: 12px; }
  .task { border: 1px solid var(--line); border-radius: 8px; padding: 12px; margin-bottom: 12px; }
  .task .top { display: flex; gap: 10px; align-items: center; }
  .status { font-weight: 600; text-transform: uppercase; font-size: 11px; letter-spacing: .04em; padding: 2px 6px; border-radius: 4px; background: #eef1f7; }
  .status.completed { background: #e3f4ea; color: var(--ok); } .status.failed { background: #fbe9e7; color: var(--bad); }
  .status.cancelled, .status.stopping { background: #fdf3e1; color: var(--warn); }
  .bar { height: 10px; background: #eef1f7; border-radius: 5px; overflow: hidden; margin: 10px 0 6px; display: flex; }
  .bar .ok { background: var(--ok); } .bar .bad { background: var(--bad); } .bar .cx { background: var(--warn); }
  .meta { color: var(--muted); font-size: 12px; display: flex; gap: 14px; flex-wrap: wrap; }
  .actions { margin-left: auto; display: flex; gap: 6px; }
  .failures { margin: 8px 0 0; padding: 0; list-style: none; font-size: 12px; }
  .failures li { padding: 3px 0; border-top: 1px dashed var(--line); }
  .failures code { color: var(--bad); }
  .empty { color: var(--muted); }
  #error { color: var(--bad); margin-left: auto; }
</style>
</head>
<body>
<header><h1>ASL full-text extraction</h1><span class="who" id="who"></span><span id="error" role="alert"></span></header>
<main>
  <section>
    <h2>Library <span><button id="all">Select all</button> <button class="primary" id="start" disabled>Start batch</button></span></h2>
    <div class="docs" id="docs"><p class="empty">Loading…</p></div>
  </section>
  <section>
    <h2>Tasks</h2>
    <div id="tasks"><p class="empty">No tasks yet.</p></div>
  </section>
</main>
<script type="module">
const API = ${JSON.stringify(prefix)};
const fragment = new URLSearchParams(location.hash.slice(1));
if (fragment.get('token')) { sessionStorage.setItem('asl-token', fragment.get('token')); history.replaceState(null, '', location.pathname); }
let token = sessionStorage.getItem('asl-token') || prompt('API token') || '';
sessionStorage.setItem('asl-token', token);
const $ = (s) => document.querySelector(s);
const el = (tag, props = {}, ...children) => { const e = Object.assign(document.createElement(tag), props); e.append(...children); return e; };
const showError = (message) => { $('#error').textContent = message; };

async function api(path, options = {}) {
  const res = await fetch(API + path, { ...options, headers: { authorization: 'Bearer ' + token, ...(options.body ? { 'content-type': 'application/json' } : {}) } });
  if (!res.ok) { const body = await res.json().catch(() => ({})); throw new Error(body.error?.message || res.statusText); }
  return res;
}

const tasks = new Map(); // id -> { view, root, stream }

function renderTask(id) {
  const entry = tasks.get(id); const t = entry.view;
  const settled = t.succeeded + t.failed + t.cancelled;
  const total = Math.max(t.total, 1);
  const pct = Math.floor((settled / total) * 100);
  const seconds = ((t.completedAt ? new Date(t.completedAt) : new Date()) - new Date(t.startedAt || t.createdAt)) / 1000;
  const done = ['completed', 'failed', 'cancelled'].includes(t.status);
  const root = entry.root;
  root.replaceChildren(
    el('div', { className: 'top' },
      el('span', { className: 'status ' + t.status, textContent: t.status }),
      el('strong', { className: 'pct', textContent: pct + '%' }),
      el('span', { className: 'counts', textContent: settled + ' / ' + t.total + (t.round > 1 ? ' · round ' + t.round : '') }),
      el('span', { className: 'actions' },
        el('button', { textContent: 'Cancel', disabled: done, onclick: () => act(id, 'cancel') }),
        el('button', { className: 'retry', textContent: 'Retry failed', disabled: !(done && t.failed > 0 && t.status !== 'cancelled'), onclick: () => act(id, 'retry-failed') }),
        el('button', { textContent: 'CSV', disabled: !done, onclick: () => download(id, 'csv') }),
        el('button', { textContent: 'JSON', disabled: !done, onclick: () => download(id, 'json') }),
      ),
    ),
    el('div', { className: 'bar', title: pct + '%' },
      el('div', { className: 'ok', style: 'width:' + (t.succeeded / total) * 100 + '%' }),
      el('div', { className: 'bad', style: 'width:' + (t.failed / total) * 100 + '%' }),
      el('div', { className: 'cx', style: 'width:' + (t.cancelled / total) * 100 + '%' }),
    ),
    el('div', { className: 'meta' },
      el('span', { textContent: 'ok ' + t.succeeded }), el('span', { textContent: 'failed ' + t.failed }), el('span', { textContent: 'cancelled ' + t.cancelled }),
      el('span', { textContent: seconds.toFixed(1) + ' s' }), el('span', { textContent: (settled / Math.max(seconds, 0.001)).toFixed(1) + ' items/s' }),
      el('span', { textContent: new Date(t.createdAt).toLocaleTimeString() }),
    ),
    entry.failures || '',
  );
}

async function loadFailures(id) {
  const entry = tasks.get(id);
  if (!entry || entry.view.failed === 0) { if (entry) entry.failures = null; return; }
  const { items } = await (await api('/tasks/' + id + '/items?status=failed&limit=20')).json();
  entry.failures = el('ul', { className: 'failures' }, ...items.map((i) => el('li', {}, (i.snapshot.filename || i.key) + ': ', el('code', { textContent: i.error?.code || '' }), ' ' + (i.error?.message || ''))));
  renderTask(id);
}

function applyState(id, counts) {
  const entry = tasks.get(id); if (!entry) return;
  Object.assign(entry.view, counts);
  if (['completed', 'failed', 'cancelled'].includes(counts.status) && !entry.view.completedAt) entry.view.completedAt = new Date().toISOString();
  renderTask(id);
}

// One stream per unfinished task (a browser allows only six connections per host): a finished
// task is not followed, and its stream is closed at the ending; a retry follows it again.
const FINISHED = ['completed', 'failed', 'cancelled'];
function unfollow(id) { const entry = tasks.get(id); if (entry?.stream) { entry.stream.abort(); entry.stream = null; } }
async function follow(id) {
  const entry = tasks.get(id);
  if (entry.stream || FINISHED.includes(entry.view.status)) return;
  const controller = new AbortController(); entry.stream = controller;
  let lastId = '';
  while (!controller.signal.aborted) {
    try {
      const res = await fetch(API + '/tasks/' + id + '/events', { headers: { authorization: 'Bearer ' + token, ...(lastId ? { 'last-event-id': lastId } : {}) }, signal: controller.signal });
      if (!res.ok) { showError('live updates stopped: HTTP ' + res.status); entry.stream = null; return; }
      const reader = res.body.getReader(); const decoder = new TextDecoder(); let buffer = '';
      for (;;) {
        const { value, done } = await reader.read(); if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf('\\n\\n')) >= 0) {
          const block = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
          let event = '', data = '';
          for (const line of block.split('\\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
            else if (line.startsWith('id: ')) lastId = line.slice(4);
          }
          if (!data) continue;
          const message = JSON.parse(data);
          if (message.counts) {
            applyState(id, message.counts);
            if (event !== 'task.progress') { unfollow(id); refreshTask(id).then(() => loadFailures(id)).catch((e) => showError(e.message)); }
          } else if (event === 'item.failed' && !message.willRetry) {
            loadFailures(id).catch(() => {});
          }
        }
      }
    } catch (e) { if (controller.signal.aborted) return; }
    await new Promise((r) => setTimeout(r, 1000)); // reconnect, resuming after lastId
  }
}

async function refreshTask(id) {
  const view = await (await api('/tasks/' + id)).json();
  const entry = tasks.get(id); entry.view = view; renderTask(id);
}

function addTask(view, atTop) {
  if (tasks.has(view.id)) return;
  const root = el('div', { className: 'task', id: 'task-' + view.id });
  tasks.set(view.id, { view, root, stream: null, failures: null });
  const list = $('#tasks'); if (list.querySelector('.empty')) list.replaceChildren();
  atTop ? list.prepend(root) : list.append(root);
  renderTask(view.id);
  loadFailures(view.id).catch(() => {});
  follow(view.id);
}

async function act(id, action) {
  try {
    await api('/tasks/' + id + '/' + action, { method: 'POST', body: '{}' });
    await refreshTask(id);
    await loadFailures(id);
    follow(id); // a retried task runs again
  } catch (e) { showError(e.message); }
}

async function download(id, kind) {
  try {
    const blob = await (await api('/tasks/' + id + '/results.' + kind)).blob();
    const a = el('a', { href: URL.createObjectURL(blob), download: 'asl-' + id + '.' + kind }); document.body.append(a); a.click(); a.remove();
  } catch (e) { showError(e.message); }
}

async function loadLibrary() {
  const { documents } = await (await api('/documents?limit=1000')).json();
  const box = $('#docs');
  box.replaceChildren(...(documents.length ? documents.map((d) => el('label', {}, el('input', { type: 'checkbox', value: d.id, onchange: updateStart }), el('span', { textContent: d.title }), el('span', { className: 'file', textContent: d.filename }))) : [el('p', { className: 'empty', textContent: 'The library is empty.' })]));
  updateStart();
}
function selected() { return [...document.querySelectorAll('#docs input:checked')].map((i) => i.value); }
function updateStart() { $('#start').disabled = selected().length === 0; $('#start').textContent = 'Start batch (' + selected().length + ')'; }
$('#all').onclick = () => { const boxes = [...document.querySelectorAll('#docs input')]; const on = boxes.some((b) => !b.checked); boxes.forEach((b) => (b.checked = on)); updateStart(); };
$('#start').onclick = async () => {
  try {
    const { id } = await (await api('/tasks', { method: 'POST', body: JSON.stringify({ input: { documentIds: selected() } }) })).json();
    addTask(await (await api('/tasks/' + id)).json(), true);
  } catch (e) { showError(e.message); }
};

try {
  await loadLibrary();
  const { tasks: list } = await (await api('/tasks?limit=20')).json();
  list.forEach((t) => addTask(t, false));
  $('#who').textContent = 'signed in with a token';
} catch (e) { showError(e.message); }
setInterval(() => { for (const [id, e] of tasks) if (!['completed', 'failed', 'cancelled'].includes(e.view.status)) renderTask(id); }, 1000);
// Tasks started elsewhere (another tab, the API) join the list within a few seconds.
setInterval(async () => {
  try {
    const { tasks: list } = await (await api('/tasks?limit=20')).json();
    list.filter((t) => !tasks.has(t.id)).reverse().forEach((t) => addTask(t, true));
  } catch {}
}, 3000);
</script>
</body>
</html>`;
}
