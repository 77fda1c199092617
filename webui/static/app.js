// pi-history web UI: hash-routed single page over the JSON API (/v1) and the
// UI's own data routes (/ui/data). See render.js for how content is drawn.
import { h, renderText, entry, highlight, fmtTime, timeEl, tag, clip, preBlock } from './render.js';

const app = document.getElementById('app');
const PAGE_FIRST = 40; // entries in the first page of a window: one screen and a bit
const PAGE = 200;

const S = {
  sessions: null, // last /v1/sessions answer
  sessionsAt: 0,
  cur: null, // the session view on screen
  lastSession: null, // {id, leaf} for search scopes
  loggedIn: false,
  es: null,
  lastSeq: null, // the store's last sequence number as the events last told it
  nav: 0, // counts routes: a route's late answer is dropped once another has started
  key: '', // the session's key (see takeKey)
};

// The session's key: a login sends the browser here with it in the URL's
// fragment (which no request carries); it is kept in this origin's
// localStorage and sent with every request beside the cookie. The cookie
// alone is not enough: a browser sends it to every port of 127.0.0.1, so a
// page served by any other program on the machine would get it, but
// localStorage belongs to this origin, port included.
const KEY_STORE = 'pi-history-key';
async function takeKey() {
  let stored = '';
  try { stored = localStorage.getItem(KEY_STORE) || ''; } catch { /* storage off */ }
  const m = /^#key=([A-Za-z0-9_-]{20,200})(?:&to=([^&#]{1,4000}))?$/.exec(location.hash);
  if (!m) return stored;
  // A login from 'pi-history open SESSION/ENTRY' goes on to that page; only
  // the page's own session and search routes are followed.
  let to = '/';
  if (m[2]) {
    try {
      const r = decodeURIComponent(m[2]);
      if (/^\/(s\/|search\?)/.test(r)) to = r;
    } catch { /* a malformed route: the list */ }
  }
  history.replaceState(null, '', location.pathname + location.search + '#' + to);
  // Any site can send the browser to /#key=…: a key is kept only when it
  // makes a session with this browser's cookie, or a wrong one would log
  // every tab out.
  try {
    const r = await fetch('/ui/check', { credentials: 'same-origin', headers: { 'X-Pi-History-Key': m[1] } });
    if (r.status !== 204) return stored;
  } catch {
    return stored;
  }
  try { localStorage.setItem(KEY_STORE, m[1]); } catch { /* storage off: this page only */ }
  return m[1];
}
S.key = await takeKey();
// A login in another tab gives every tab the new key.
window.addEventListener('storage', (e) => { if (e.key === KEY_STORE) S.key = e.newValue || ''; });

// ---- routing -------------------------------------------------------------

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [p, qs] = raw.split('?', 2);
  const q = new URLSearchParams(qs || '');
  const parts = p.split('/').filter(Boolean).map((x) => { try { return decodeURIComponent(x); } catch { return x; } });
  return { parts, q };
}

export function sessionHref(id, o = {}) {
  const q = new URLSearchParams();
  if (o.leaf) q.set('leaf', o.leaf);
  if (o.w) q.set('w', String(o.w));
  if (o.e) q.set('e', o.e);
  const s = q.toString();
  return '#/s/' + encodeURIComponent(id) + (s ? '?' + s : '');
}

async function route() {
  const { parts, q } = parseHash();
  const my = ++S.nav;
  try {
    if (parts[0] === 's' && parts[1]) await showSession(parts[1], { leaf: q.get('leaf') || '', w: +q.get('w') || 0, e: q.get('e') || '' });
    else if (parts[0] === 'search') await showSearch(q);
    else if (parts[0] === 'login') showLogin(q.get('failed') === '1');
    else await showSessions(q);
  } catch (err) {
    if (my !== S.nav) return; // the user has moved on
    if (err && err.status === 401) showLogin(false);
    else showError(err);
  }
}

function showError(err) {
  S.cur = null;
  app.replaceChildren(h('div', { class: 'problem' }, h('h2', { text: 'Something went wrong' }), h('p', { text: String(err?.message ?? err) })));
}

// ---- API -----------------------------------------------------------------

class APIError extends Error {
  constructor(status, detail) {
    super(detail || 'HTTP ' + status);
    this.status = status;
  }
}

async function api(path, opts = {}) {
  const init = { credentials: 'same-origin', headers: { Accept: 'application/json', 'X-Pi-History-Key': S.key }, signal: opts.signal };
  if (opts.body !== undefined) {
    init.method = 'POST';
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(opts.body);
  }
  const r = await fetch(path, init);
  if (!r.ok) {
    let detail = '';
    try { const p = await r.json(); detail = p.detail || p.title || ''; } catch { /* not JSON */ }
    throw new APIError(r.status, detail);
  }
  if (!S.loggedIn) {
    S.loggedIn = true;
    connectEvents();
  }
  return r.json();
}

const enc = encodeURIComponent;

// ---- login ---------------------------------------------------------------

function showLogin(failed) {
  S.cur = null;
  const form = h('form', { method: 'post', action: '/ui/login', class: 'login' },
    h('label', null, 'API token ', h('input', { type: 'password', name: 'token', autocomplete: 'off', size: 40 })),
    ' ', h('button', { type: 'submit', text: 'Log in' }));
  app.replaceChildren(h('div', { class: 'loginbox' },
    h('h2', { text: 'Log in to pi-history' }),
    failed ? h('p', { class: 'errmsg', text: 'That token is not right.' }) : null,
    h('p', null, 'Run ', h('code', { text: 'pi-history open' }), ' to open a logged-in page, or use the login URL that ',
      h('code', { text: 'pi-history serve' }), ' printed. You can also paste the API token (', h('code', { text: 'pi-history token' }), '):'),
    form));
}

// ---- sessions list -------------------------------------------------------

function humanBytes(n) {
  if (n >= 1 << 30) return (n / (1 << 30)).toFixed(1) + ' GiB';
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + ' MiB';
  if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + ' KiB';
  return n + ' B';
}

function ago(ts) {
  const t = Date.parse(ts);
  if (isNaN(t)) return '';
  const s = (Date.now() - t) / 1000;
  if (s < 60) return 'just now';
  if (s < 3600) return Math.floor(s / 60) + ' min ago';
  if (s < 86400) return Math.floor(s / 3600) + ' h ago';
  if (s < 86400 * 30) return Math.floor(s / 86400) + ' days ago';
  return new Date(t).toLocaleDateString();
}

async function loadSessions(force) {
  if (!S.sessions || force || Date.now() - S.sessionsAt > 5000) {
    const r = await api('/v1/sessions');
    S.sessions = r.sessions || [];
    S.sessionsAt = Date.now();
  }
  return S.sessions;
}

function sessionName(s) {
  return s.title || s.name || '(untitled ' + String(s.id).slice(0, 8) + ')';
}

async function showSessions(q) {
  S.cur = null;
  document.title = 'pi-history';
  const my = S.nav;
  const list = await loadSessions(true);
  if (my !== S.nav) return; // another page was asked for meanwhile
  const nameIn = h('input', { type: 'search', placeholder: 'filter by name', value: q.get('name') || '', 'aria-label': 'Filter by name', id: 'fname' });
  const projIn = h('input', { type: 'search', placeholder: 'filter by project', value: q.get('project') || '', 'aria-label': 'Filter by project', id: 'fproject' });
  // Ranked word search over sessions (GET /v1/sessions?match=): titles,
  // names, projects and user messages, best first.
  const wordsIn = h('input', { type: 'search', placeholder: 'search sessions by words', value: q.get('words') || '', 'aria-label': 'Search sessions by words', id: 'fwords', class: 'wide' });
  const out = h('div', { class: 'groups' });
  let ranked = null; // the word search's sessions, best first, while words are given
  const shown = (s) => {
    const nf = nameIn.value.toLowerCase();
    const pf = projIn.value.toLowerCase();
    return (!nf || sessionName(s).toLowerCase().includes(nf) || String(s.id).includes(nf)) &&
      (!pf || String(s.cwd).toLowerCase().includes(pf));
  };
  const nameCell = (s) => h('td', null, h('a', { href: sessionHref(s.id), class: 'sname', title: sessionName(s), text: sessionName(s) }),
    s.parentSession ? tag('fork', 'dim') : null);
  const draw = () => {
    if (ranked) {
      const rows = ranked.filter(shown);
      out.replaceChildren(rows.length
        ? h('table', { class: 'sessions ranked' },
          h('thead', null, h('tr', null, ['name', 'project', 'matched', 'last activity'].map((t) => h('th', { text: t })))),
          h('tbody', null, rows.map((s) => h('tr', { class: 'srow wrow', dataset: { session: s.id } },
            nameCell(s),
            h('td', { class: 'cwd', text: s.cwd || '' }),
            h('td', { class: 'frag' }, h('span', { class: 'muted', text: (s.matchField === 'text' ? 'user' : s.matchField || '') + ': ' }), h('span', { text: s.match || '' })),
            h('td', { title: s.lastActivity, text: ago(s.lastActivity) })))))
        : h('p', { class: 'muted', text: 'No session matches these words.' }));
      return;
    }
    const groups = new Map();
    for (const s of list) {
      if (!shown(s)) continue;
      if (!groups.has(s.cwd)) groups.set(s.cwd, []);
      groups.get(s.cwd).push(s);
    }
    const kids = [];
    for (const [cwd, ss] of groups) {
      kids.push(h('section', { class: 'group' },
        h('h3', { class: 'cwd', text: cwd || '(no project)' }),
        h('table', { class: 'sessions' },
          h('thead', null, h('tr', null, ['name', 'entries', 'size', 'windows', 'last activity'].map((t) => h('th', { text: t })))),
          h('tbody', null, ss.map((s) => h('tr', { class: 'srow', dataset: { session: s.id } },
            nameCell(s),
            h('td', { class: 'num', text: String(s.entries) }),
            h('td', { class: 'num', text: humanBytes(s.bytes || 0) }),
            h('td', { class: 'num', text: String(s.windows) }),
            h('td', { title: s.lastActivity, text: ago(s.lastActivity) })))))));
    }
    if (!kids.length) kids.push(h('p', { class: 'muted', text: list.length ? 'No session matches.' : 'No sessions yet: run pi-history import, or use Pi while pi-history serve runs.' }));
    out.replaceChildren(...kids);
  };
  let searched = 0;
  const search = async () => {
    const n = ++searched;
    const words = wordsIn.value;
    if (!words.trim()) {
      ranked = null;
      draw();
      return;
    }
    try {
      const r = await api('/v1/sessions?' + new URLSearchParams({ match: words, limit: '100' }));
      if (n !== searched || my !== S.nav) return; // a later search, or another page
      ranked = r.sessions || [];
      draw();
    } catch (err) {
      if (n !== searched || my !== S.nav) return;
      ranked = null;
      out.replaceChildren(h('p', { class: 'problem wordsproblem', text: String(err?.message ?? err) }));
    }
  };
  let timer = 0;
  const keep = () => {
    const p = new URLSearchParams();
    if (wordsIn.value) p.set('words', wordsIn.value);
    if (nameIn.value) p.set('name', nameIn.value);
    if (projIn.value) p.set('project', projIn.value);
    history.replaceState(null, '', '#/' + (p.toString() ? '?' + p : ''));
  };
  wordsIn.addEventListener('input', () => {
    keep();
    clearTimeout(timer);
    timer = setTimeout(search, 250);
  });
  nameIn.addEventListener('input', () => { keep(); draw(); });
  projIn.addEventListener('input', () => { keep(); draw(); });
  draw();
  if (wordsIn.value.trim()) search();
  const total = h('span', { class: 'muted', text: ` ${list.length} sessions` });
  app.replaceChildren(h('div', { class: 'list' }, h('div', { class: 'filters' }, wordsIn, ' ', nameIn, ' ', projIn, total), out));
  let asked = 0;
  S.redraw = async () => {
    const n = ++asked;
    const fresh = await loadSessions(true);
    if (n !== asked || my !== S.nav) return; // a later redraw, or another page
    list.splice(0, list.length, ...fresh);
    total.textContent = ` ${list.length} sessions`;
    if (ranked) search();
    else draw();
  };
}

// ---- a session -----------------------------------------------------------

function newCtx(view) {
  return {
    calls: new Map(), // tool calls on screen waiting for their results
    orphans: new Map(), // tool results on screen without their calls, by call id
    entries: new Map(),
    link: (id, text, cls) => h('a', { class: cls || 'elink', href: sessionHref(view.id, { leaf: view.leafParam, e: id }), text }),
  };
}

async function showSession(id, o) {
  const v = S.cur;
  if (v && v.id === id && v.leafParam === o.leaf && v.el?.isConnected) {
    // Same branch on screen: open the window, focus the entry.
    if (o.e) await focusEntry(v, o.e);
    else if (o.w) await expandWindow(v, o.w, true);
    return;
  }
  const t0 = performance.now();
  const view = { id, leafParam: o.leaf, windows: new Map(), el: null, data: null, t0 };
  view.ctx = newCtx(view);
  S.cur = view;
  S.lastSession = { id, leaf: o.leaf };
  const q = new URLSearchParams({ limit: String(PAGE_FIRST) });
  if (o.leaf) q.set('leaf', o.leaf);
  if (o.e) q.set('entry', o.e);
  else if (o.w) q.set('window', String(o.w));
  const page = await api(`/ui/data/sessions/${enc(id)}/entries?${q}`);
  if (S.cur !== view) return;
  view.data = page;
  view.leaf = page.leaf;
  if (S.lastSeq === null && page.lastSeq != null) S.lastSeq = page.lastSeq;
  buildSessionView(view);
  renderPage(view, page, 'append');
  view.windows.get(page.window)?.sec.classList.remove('collapsed');
  if (page.focus) scrollToEntry(view, page.focus);
  window.__firstEntryMs = window.__firstEntryMs ?? performance.now();
  view.firstMs = performance.now() - t0;
  // The rest waits for the first screen.
  api(`/v1/sessions/${enc(id)}?tree=false`).then((s) => S.cur === view && fillHeader(view, s.summary)).catch(() => {});
  loadSide(view);
}

function exportLinks(id, leaf) {
  const mk = (fmt, withLeaf) => {
    const q = new URLSearchParams({ format: fmt });
    if (withLeaf && leaf) q.set('leaf', leaf);
    q.set('key', S.key); // a download sends no header of ours
    return h('a', { class: 'btn', href: `/v1/sessions/${enc(id)}/export?${q}`, download: '', text: fmt });
  };
  return h('span', { class: 'exports' }, 'export session ', ['jsonl', 'md', 'html'].map((f) => mk(f, false)),
    leaf ? [' branch ', ['jsonl', 'md', 'html'].map((f) => mk(f, true))] : null);
}

function buildSessionView(view) {
  const d = view.data;
  view.head = h('div', { class: 'shead' },
    h('h2', { class: 'sname', text: String(d.session) }),
    h('div', { class: 'smeta' }, h('span', { class: 'cwd' }), ' ', h('code', { class: 'sid', text: d.session })),
    h('div', { class: 'sbar' },
      h('span', { class: 'branchinfo', text: d.leaf === d.currentLeaf ? 'current branch' : 'branch ending at ' + d.leaf }),
      d.leaf !== d.currentLeaf ? [' ', tag('not current', 'warn'), ' ', h('a', { href: sessionHref(d.session), text: 'show current' })] : null,
      ' · ', exportLinks(d.session, view.leafParam || (d.leaf !== d.currentLeaf ? d.leaf : ''))));
  view.winsEl = h('div', { class: 'windows' });
  view.tabs = {
    branches: h('div', { class: 'panel', id: 'branches' }, h('p', { class: 'muted', text: 'Loading branches…' })),
    notebook: h('div', { class: 'panel hidden', id: 'notebook' }, h('p', { class: 'muted', text: 'Loading notebook…' })),
  };
  const tabBtn = (name, label) => h('button', {
    class: 'tab' + (name === 'branches' ? ' on' : ''), type: 'button', dataset: { tab: name }, text: label,
    onclick: (ev) => {
      for (const [n, p] of Object.entries(view.tabs)) p.classList.toggle('hidden', n !== name);
      for (const b of ev.target.parentNode.children) b.classList.toggle('on', b === ev.target);
    },
  });
  const side = h('aside', { class: 'side' }, h('div', { class: 'tabs' }, tabBtn('branches', 'Branches'), tabBtn('notebook', 'Notebook')),
    view.tabs.branches, view.tabs.notebook);
  for (const w of d.windows) view.winsEl.append(windowSection(view, w));
  view.el = h('div', { class: 'session' }, view.head, h('div', { class: 'cols' }, side, view.winsEl));
  app.replaceChildren(view.el);
  document.title = 'pi-history · ' + d.session;
}

function fillHeader(view, s) {
  if (!s) return;
  view.summary = s;
  const nm = view.head.querySelector('.sname');
  nm.textContent = nm.title = sessionName(s);
  view.head.querySelector('.cwd').textContent = s.cwd || '';
  view.head.querySelector('.smeta').append(' · ', `${s.entries} entries · ${humanBytes(s.bytes || 0)} · last activity `,
    h('span', { title: s.lastActivity, text: ago(s.lastActivity) }));
  document.title = 'pi-history · ' + sessionName(s);
}

const startedBy = { start: 'session start', compaction: 'compaction', hook: 'rollover' };

function windowSection(view, w) {
  const n = w.window;
  const body = h('div', { class: 'wbody' });
  const sum = w.summary ? h('div', { class: 'wsummary' }, h('div', { class: 'muted', text: (w.startedBy === 'hook' ? 'Rollover' : 'Compaction') + ' summary' + (w.summaryClipped ? ' (start)' : '') }), renderText(w.summary)) : null;
  const count = h('span', { class: 'wcount', text: `${w.entries} entries` });
  const head = h('header', { class: 'whead', role: 'button', tabindex: '0', dataset: { window: String(n) } },
    h('span', { class: 'caret' }), ` Window ${n}`, ' · ', h('span', { text: 'started by ' + (startedBy[w.startedBy] || w.startedBy) }),
    w.startedAt ? [' · ', timeEl(w.startedAt)] : null, ' · ', count);
  const sec = h('section', { class: 'window collapsed', dataset: { window: String(n) } }, head, sum, body);
  const ws = { n, info: w, sec, body, head, count, sum, from: 0, to: 0, total: w.entries, gen: 0, loading: null, loadingTop: null, topBtn: null, moreBtn: null, sentinel: null };
  view.windows.set(n, ws);
  const toggle = () => {
    if (sec.classList.contains('collapsed')) {
      expandWindow(view, n, false);
      history.replaceState(null, '', sessionHref(view.id, { leaf: view.leafParam, w: n }));
    } else sec.classList.add('collapsed');
  };
  head.addEventListener('click', toggle);
  head.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(); } });
  return sec;
}

async function fetchPage(view, params) {
  const q = new URLSearchParams(params);
  q.set('leaf', view.leaf);
  return api(`/ui/data/sessions/${enc(view.id)}/entries?${q}`);
}

// renderPage draws a page into its window: 'append' after what is shown,
// 'prepend' before it.
// A page loading when the user closes its window does not open it again:
// only the callers that show an entry open its window.
function renderPage(view, page, how) {
  const ws = view.windows.get(page.window);
  if (!ws) return false;
  ws.total = page.total;
  ws.count.textContent = `${page.total} entries`;
  const nodes = [];
  for (const it of page.items) {
    const n = entry(it, view.ctx);
    if (n) nodes.push(n);
  }
  const end = page.from + page.items.length;
  // A page fetched for what the window showed before (a load still under
  // way when a link reset it, say) no longer joins up: drop it.
  const empty = ws.to === 0 && ws.from === 0 && !ws.body.querySelector('.entry');
  if (!empty && (how === 'prepend' ? end !== ws.from : page.from !== ws.to)) return false;
  if (how === 'prepend') {
    ws.body.insertBefore(fragment(nodes), ws.topBtn ? ws.topBtn.nextSibling : ws.body.firstChild);
    ws.from = page.from;
  } else if (empty) {
    dropPager(ws); // buttons a live update gave the window before it was opened
    ws.body.replaceChildren(fragment(nodes));
    ws.from = page.from;
    ws.to = end;
  } else {
    ws.body.insertBefore(fragment(nodes), ws.moreBtn || null);
    ws.to = end;
  }
  updatePager(view, ws);
  return true;
}

function dropPager(ws) {
  if (ws.moreBtn && observer) observer.unobserve(ws.moreBtn);
  ws.topBtn?.remove();
  ws.moreBtn?.remove();
  ws.topBtn = ws.moreBtn = null;
}

// loadFailed says on the window's button (or in its body) that a page did
// not load; a 401 goes to the login page.
function loadFailed(ws, err, btn) {
  if (err && err.status === 401) {
    showLogin(false);
    return;
  }
  const msg = `Loading failed: ${err?.message ?? err}. Click to try again.`;
  if (btn && btn.isConnected) btn.textContent = msg;
  else ws.body.append(h('p', { class: 'errmsg', text: msg }));
}

function fragment(nodes) {
  const f = document.createDocumentFragment();
  f.append(...nodes);
  return f;
}

function updatePager(view, ws) {
  if (ws.from > 0) {
    if (!ws.topBtn) {
      ws.topBtn = h('button', { class: 'more top', type: 'button', onclick: () => loadEarlier(view, ws) });
      ws.body.prepend(ws.topBtn);
    }
    ws.topBtn.textContent = `Load earlier (${ws.from} more)`;
  } else if (ws.topBtn) {
    ws.topBtn.remove();
    ws.topBtn = null;
  }
  const left = ws.total - ws.to;
  if (left > 0) {
    if (!ws.moreBtn) {
      ws.moreBtn = h('button', { class: 'more bottom', type: 'button', onclick: () => loadMore(view, ws) });
      ws.body.append(ws.moreBtn);
      observe(view, ws);
    }
    ws.moreBtn.textContent = `Load more (${left} more)`;
  } else if (ws.moreBtn) {
    ws.moreBtn.remove();
    ws.moreBtn = null;
  }
}

let observer = null;
function observe(view, ws) {
  if (!('IntersectionObserver' in window)) return;
  if (!observer) {
    observer = new IntersectionObserver((es) => {
      for (const e of es) {
        if (!e.isIntersecting) continue;
        const v = S.cur;
        const n = +e.target.closest('section.window')?.dataset.window;
        const w = v && v.windows.get(n);
        if (w && w.moreBtn === e.target) loadMore(v, w);
      }
    }, { rootMargin: '800px' });
  }
  observer.observe(ws.moreBtn);
}

// loadMore and loadEarlier grow the window at its two ends, each with its
// own load in flight: a click on "Load earlier" while later pages are still
// coming in (the observer below keeps loading while the bottom is near)
// must not be lost. A reset of the window (focusEntry) bumps ws.gen, and a
// load that started before it draws nothing.
async function loadMore(view, ws) {
  if (ws.loading || ws.to >= ws.total) return ws.loading;
  const gen = ws.gen;
  const run = (async () => {
    let drawn = false;
    try {
      const p = await fetchPage(view, { window: ws.n, from: ws.to, limit: PAGE });
      if (S.cur === view && ws.gen === gen && p.window === ws.n) drawn = renderPage(view, p, 'append');
    } catch (err) {
      if (S.cur === view && ws.gen === gen) loadFailed(ws, err, ws.moreBtn);
    } finally {
      if (ws.loading === run) ws.loading = null;
    }
    // Still on screen (and open, and this view's)? keep going. A button no
    // longer in the page measures 0: it must not count as on screen.
    if (drawn && S.cur === view && ws.gen === gen && ws.sec.isConnected && !ws.sec.classList.contains('collapsed') &&
        ws.moreBtn?.isConnected && ws.moreBtn.getBoundingClientRect().top < innerHeight + 800) loadMore(view, ws);
  })();
  ws.loading = run;
  return run;
}

async function loadEarlier(view, ws) {
  if (ws.loadingTop || ws.from <= 0) return ws.loadingTop;
  const gen = ws.gen;
  const run = (async () => {
    try {
      // The page that ends where the window's shown entries begin (the
      // server may send fewer than PAGE when their lines are large).
      const p = await fetchPage(view, { window: ws.n, to: ws.from, limit: PAGE });
      if (S.cur === view && ws.gen === gen && p.window === ws.n) renderPage(view, p, 'prepend');
    } catch (err) {
      if (S.cur === view && ws.gen === gen) loadFailed(ws, err, ws.topBtn);
    } finally {
      if (ws.loadingTop === run) ws.loadingTop = null;
    }
  })();
  ws.loadingTop = run;
  return run;
}

async function expandWindow(view, n, scroll) {
  const ws = view.windows.get(n);
  if (!ws) return;
  ws.sec.classList.remove('collapsed');
  if (!ws.body.querySelector('.entry') && !ws.loading) {
    const run = fetchPage(view, { window: n, from: 0, limit: PAGE_FIRST });
    ws.loading = run;
    try {
      const p = await run;
      if (S.cur === view) renderPage(view, p, 'append');
    } catch (err) {
      if (S.cur === view) loadFailed(ws, err, null);
    } finally {
      if (ws.loading === run) ws.loading = null;
    }
  }
  if (scroll) ws.sec.scrollIntoView({ block: 'start' });
}

async function focusEntry(view, id) {
  if (!view.ctx.entries.has(id)) {
    const p = await fetchPage(view, { entry: id, limit: PAGE_FIRST, before: 5 });
    if (S.cur !== view) return;
    if (p.leaf !== view.leaf) {
      location.hash = sessionHref(view.id, { leaf: p.leaf, e: id });
      return;
    }
    const ws = view.windows.get(p.window);
    // Reset the window to the page around the entry.
    dropPager(ws);
    ws.body.replaceChildren();
    ws.from = ws.to = 0;
    ws.gen++;
    ws.loading = ws.loadingTop = null;
    renderPage(view, p, 'append');
    ws.sec.classList.remove('collapsed');
  }
  scrollToEntry(view, id);
}

function scrollToEntry(view, id) {
  const el = view.ctx.entries.get(id);
  if (!el) return;
  for (const old of view.el.querySelectorAll('.focus')) old.classList.remove('focus');
  el.classList.add('focus');
  const det = el.closest('details');
  if (det) det.open = true;
  el.scrollIntoView({ block: 'center' });
}

// ---- side panels ---------------------------------------------------------

// loadSide (re)draws the side panels: at first and on each live update.
// Only the answers of the latest call are drawn (they may come out of
// order), and what the user opened stays open.
function loadSide(view) {
  const n = (view.sideAsked = (view.sideAsked || 0) + 1);
  const fresh = () => S.cur === view && n === view.sideAsked;
  const draw = (el, fn) => (x) => fresh() && keepOpen(el, () => fn(view, x));
  const fail = (el) => (e) => fresh() && el.replaceChildren(h('p', { class: 'errmsg', text: String(e.message) }));
  api(`/ui/data/sessions/${enc(view.id)}/branches`).then(draw(view.tabs.branches, drawBranches)).catch(fail(view.tabs.branches));
  const q = view.leaf ? '?leaf=' + enc(view.leaf) : '';
  api(`/ui/data/sessions/${enc(view.id)}/notebook${q}`).then(draw(view.tabs.notebook, drawNotebook)).catch(fail(view.tabs.notebook));
}

// keepOpen redraws el with draw, reopening the <details> (by data-key)
// that were open before.
function keepOpen(el, draw) {
  const open = new Set([...el.querySelectorAll('details[open][data-key]')].map((d) => d.dataset.key));
  draw();
  for (const d of el.querySelectorAll('details[data-key]')) if (open.has(d.dataset.key)) d.open = true;
}

function drawBranches(view, b) {
  const shown = view.leaf;
  const node = (n) => {
    const isShown = n.kind === 'leaf' && n.entry === shown;
    const row = h('div', { class: 'bnode ' + n.kind + (n.current ? ' cur' : '') + (isShown ? ' shown' : '') },
      n.kind === 'leaf'
        ? h('a', { class: 'leaf', href: sessionHref(view.id, { leaf: n.currentLeaf ? '' : n.entry }), dataset: { leaf: n.entry } },
          n.currentLeaf ? tag('current', 'ok') : null, ' ', clip(n.preview || n.entry, 90))
        : h('span', { class: 'fork' }, 'fork at ', view.ctx.link(n.entry, clip(n.preview || n.entry, 60))),
      h('div', { class: 'bmeta' }, `${n.segment} entries`, n.kind === 'leaf' ? ` · depth ${n.depth}` : '', n.timestamp ? [' · ', timeEl(n.timestamp)] : null),
      (n.labels || []).map((l) => h('div', { class: 'blabel' }, tag('label: ' + l.label, 'label'), ' ', view.ctx.link(l.entry, l.entry))),
      (n.summaries || []).map((s) => h('details', { class: 'bsum', dataset: { key: 'bsum ' + s.entry } }, h('summary', null, 'branch summary ', view.ctx.link(s.entry, '↗')), renderText(s.text + (s.clipped ? '' : '')))));
    const kids = n.children && n.children.length ? h('ul', null, n.children.map((c) => h('li', null, node(c)))) : null;
    return [row, kids];
  };
  view.tabs.branches.replaceChildren(
    h('p', { class: 'muted', text: `${b.leaves} branch${b.leaves === 1 ? '' : 'es'}, ${b.entries} entries` }),
    h('ul', { class: 'btree' }, b.roots.map((r) => h('li', null, node(r)))));
}

function drawNotebook(view, nb) {
  const p = view.tabs.notebook;
  const kids = [];
  const st = nb.notebook || {};
  if (st.entryId) {
    kids.push(h('h4', null, `Notebook · revision ${st.revision}`),
      h('div', { class: 'muted' }, `${st.bytes} bytes · ~${st.tokensEstimate} tokens · `, view.ctx.link(st.entryId, 'entry'), ' · ', timeEl(st.timestamp)),
      ...nb.sections.map((s) => h('div', { class: 'nbsec' }, h('div', { class: 'mdh', text: s.name }), renderText(s.text))));
  } else kids.push(h('p', { class: 'muted', text: 'No notebook on this branch.' }));
  if (nb.revisions.length) {
    kids.push(h('h4', { text: `Revisions (${nb.revisions.length})` }));
    const tl = h('ol', { class: 'timeline', reversed: true });
    for (const r of [...nb.revisions].reverse()) {
      const ch = [];
      if (r.added?.length) ch.push(h('span', { class: 'add', text: '+' + r.added.join(', +') }));
      if (r.changed?.length) ch.push(h('span', { class: 'chg', text: '~' + r.changed.join(', ~') }));
      if (r.removed?.length) ch.push(h('span', { class: 'del', text: '−' + r.removed.join(', −') }));
      if (r.reviewOnly) ch.push(tag('review', 'dim'));
      tl.append(h('li', null, h('details', { class: 'rev', dataset: { key: 'rev ' + r.revision } },
        h('summary', null, `r${r.revision} `, timeEl(r.timestamp), ' ', ch.flatMap((c) => [c, ' '])),
        h('div', { class: 'muted' }, `${r.bytes} bytes · `, view.ctx.link(r.entryId, 'show entry')),
        (r.content || []).map((s) => h('div', { class: 'nbsec' }, h('div', { class: 'mdh', text: s.name }), renderText(s.text))))));
    }
    kids.push(tl);
  }
  kids.push(h('h4', { text: `Named notes (${nb.notes.length})` }));
  if (!nb.notes.length) kids.push(h('p', { class: 'muted', text: 'No named notes on this branch.' }));
  for (const n of nb.notes) {
    kids.push(h('details', { class: 'note', dataset: { key: 'note ' + n.name } },
      h('summary', null, h('b', { text: n.name }), ` · ${n.characters} chars · `, timeEl(n.updatedAt)),
      h('div', { class: 'muted' }, h('code', { text: n.ref }), ' ', view.ctx.link(n.entryId, 'entry')),
      renderText(n.content)));
  }
  p.replaceChildren(...kids);
}

// ---- search --------------------------------------------------------------

const form = document.getElementById('searchform');
form.addEventListener('submit', (ev) => {
  ev.preventDefault();
  const f = new FormData(form);
  const q = new URLSearchParams();
  q.set('q', f.get('q') || '');
  const scope = f.get('scope') || 'all';
  q.set('scope', scope);
  if (scope !== 'all' && S.lastSession) {
    q.set('s', S.lastSession.id);
    const leaf = S.cur?.leaf ?? S.lastSession.leaf;
    if (scope === 'branch' && leaf) q.set('leaf', leaf);
  }
  for (const k of ['window', 'role', 'type', 'i', 're']) if (f.get(k)) q.set(k, String(f.get(k)));
  // The same search again (to see what arrived since) changes no hash.
  if (location.hash === '#/search?' + q) route();
  else location.hash = '#/search?' + q;
});

function syncForm(q) {
  form.q.value = q.get('q') || '';
  form.scope.value = q.get('scope') || 'all';
  form.window.value = q.get('window') || '';
  form.role.value = q.get('role') || '';
  form.type.value = q.get('type') || '';
  form.i.checked = q.get('i') === '1';
  form.re.checked = q.get('re') === '1';
  form.q.placeholder = searchMode(q);
}

// searchMode says how the search box matches, as its placeholder.
function searchMode(q) {
  const re = q.get('re') === '1';
  const fold = q.get('i') === '1';
  if (re) return fold ? 'Search (regex, any case)' : 'Search (regex, RE2 syntax)';
  return fold ? 'Search (literal, any case)' : 'Search (literal, case-sensitive)';
}

async function showSearch(q) {
  S.cur = null;
  syncForm(q);
  const needle = q.get('q') || '';
  if (!needle) {
    app.replaceChildren(h('p', { class: 'muted', text: 'Type text to find (literal and case-sensitive, like grep -F; Aa ignores case, .* takes a regular expression).' }));
    return;
  }
  let scope = q.get('scope') || 'all';
  const session = q.get('s') || '';
  // The next search from this page keeps its session and branch (a
  // reloaded or bookmarked results page included).
  if (session) S.lastSession = { id: session, leaf: q.get('leaf') || '' };
  const notes = [];
  if (scope !== 'all' && !session) {
    notes.push(`Scope “${scope}” needs a session: open one first. Searching everything instead.`);
    scope = 'all';
  }
  const req = { needle, scope, limit: 50, count: true };
  if (q.get('i') === '1') req.ignoreCase = true;
  if (q.get('re') === '1') req.regex = true;
  if (scope !== 'all') req.session = session;
  if (scope === 'branch' && q.get('leaf')) req.leaf = q.get('leaf');
  if (+q.get('window') > 0) req.window = +q.get('window');
  if (q.get('role')) req.roles = [q.get('role')];
  if (q.get('type')) req.types = [q.get('type')];
  const list = h('ol', { class: 'hits' });
  const status = h('p', { class: 'muted' });
  app.replaceChildren(h('div', { class: 'search' }, notes.map((n) => h('p', { class: 'warnmsg', text: n })), status, list));
  status.textContent = 'Searching…';
  const names = new Map();
  loadSessions(false).then((ss) => { for (const s of ss) names.set(s.id, sessionName(s)); }).catch(() => {});
  let shown = 0;
  let total = null; // the exact count, from the first page
  const more = h('button', { class: 'more', type: 'button', text: 'More hits' });
  const run = async (cursor) => {
    let r;
    try {
      r = await api('/v1/search', { body: cursor ? { ...req, cursor, count: false } : req });
    } catch (err) {
      // A regex that does not compile is the user's to fix, not a failure:
      // the server says what is wrong with it.
      if (err?.status !== 400 || cursor) throw err;
      status.className = 'warnmsg';
      status.textContent = String(err.message);
      return;
    }
    try { for (const s of await loadSessions(false)) names.set(s.id, sessionName(s)); } catch { /* names are a nicety */ }
    for (const hit of r.hits) list.append(hitItem(hit, req, names));
    shown += r.hits.length;
    if (r.total != null) total = r.total;
    const mode = [req.regex ? 'regex' : '', req.ignoreCase ? 'any case' : ''].filter(Boolean).join(', ');
    status.textContent = `${total ?? shown} hit${(total ?? shown) === 1 ? '' : 's'} for “${needle}”${mode ? ` (${mode})` : ''} in ${scope === 'all' ? 'everything' : scope}` +
      (r.stats ? ` · ${r.stats.tookMs} ms` : '');
    if (r.cursor) {
      // One page at a time: a second click while the next page loads would
      // ask for the same page again and show its hits twice.
      more.onclick = async () => {
        more.disabled = true; // a disabled button takes no clicks
        more.textContent = 'Loading…';
        try {
          await run(r.cursor);
        } catch (err) {
          status.textContent = `Loading more hits failed: ${err?.message ?? err}`;
        } finally {
          more.disabled = false;
          more.textContent = 'More hits';
        }
      };
      list.after(more);
    } else more.remove();
  };
  await run('');
}

function hitItem(hit, req, names) {
  let leaf = '';
  if (req.scope === 'branch') leaf = req.leaf || '';
  else if (!hit.onCurrentBranch && hit.leaves && hit.leaves.length) leaf = hit.leaves[hit.leaves.length - 1];
  const href = sessionHref(hit.session, { leaf, w: hit.window, e: hit.entry });
  return h('li', { class: 'hit' },
    h('a', { class: 'hitlink', href },
      h('div', { class: 'hithead' },
        h('b', { class: 'hname', title: names.get(hit.session) || hit.session, text: names.get(hit.session) || hit.session }), ' · ',
        h('span', { class: 'badge', text: hit.role || hit.type }), hit.toolName ? [' ', tag(hit.toolName, 'dim')] : null,
        hit.customType ? [' ', tag(hit.customType)] : null,
        ` window ${hit.window} · `, h('span', { title: hit.timestamp, text: fmtTime(hit.timestamp) }),
        hit.onCurrentBranch ? null : [' ', tag('other branch', 'warn')],
        hit.matches > 1 ? ` · ${hit.matches} matches` : ''),
      hit.snippets.map(highlight)));
}

// ---- live updates --------------------------------------------------------

// A page holds its event stream only while it is shown. Browsers open at
// most six connections to one host over HTTP/1.1, and a stream holds one for
// as long as it is open: streams left open by hidden tabs and by pages kept
// in the back/forward cache would use them up, and every other request of
// every tab of the app would wait behind them. So the stream closes when the
// page is hidden or left, and opens again (catching up) when it is shown.
let pending = null;
function connectEvents() {
  if (S.es || !S.loggedIn || document.hidden || !('EventSource' in window)) return;
  const live = document.getElementById('live');
  const es = new EventSource('/ui/events?key=' + enc(S.key)); // EventSource sends no header of ours
  S.es = es;
  es.addEventListener('open', () => live.classList.add('on'));
  es.addEventListener('error', () => live.classList.remove('on'));
  es.addEventListener('hello', (ev) => {
    // Changes made while no stream was open (hidden, or reconnecting after
    // an error) were never sent: when there were any, redraw what is shown.
    let c;
    try { c = JSON.parse(ev.data); } catch { return; }
    const missed = S.lastSeq !== null && c.lastSeq !== S.lastSeq;
    S.lastSeq = c.lastSeq;
    if (missed) later({ lastSeq: c.lastSeq, sessions: S.cur ? [S.cur.id] : [] });
  });
  es.addEventListener('change', (ev) => {
    let c;
    try { c = JSON.parse(ev.data); } catch { return; }
    S.lastSeq = c.lastSeq;
    window.__lastChange = c;
    later(c);
  });
}

function later(c) {
  clearTimeout(pending);
  pending = setTimeout(() => onChange(c).catch((err) => {
    if (err?.status === 401) showLogin(false);
    else console.warn('pi-history: live update failed:', err);
  }), 100);
}

function disconnectEvents() {
  if (!S.es) return;
  S.es.close();
  S.es = null;
  document.getElementById('live').classList.remove('on');
}

document.addEventListener('visibilitychange', () => (document.hidden ? disconnectEvents() : connectEvents()));
// Chromium also fires visibilitychange when a page is left or restored; these
// two are for browsers that do not.
addEventListener('pagehide', disconnectEvents);
addEventListener('pageshow', connectEvents);

async function onChange(c) {
  S.sessions = null;
  const v = S.cur;
  if (v && v.el?.isConnected) {
    if (c.sessions.includes(v.id)) await refreshSession(v);
    return;
  }
  if (!v && S.redraw && app.querySelector('.groups')) await S.redraw();
}

async function refreshSession(view) {
  // A pinned branch (leaf= in the URL) stays; otherwise follow the current leaf.
  const q = new URLSearchParams({ limit: '1' });
  if (view.leafParam) q.set('leaf', view.leafParam);
  const p = await api(`/ui/data/sessions/${enc(view.id)}/entries?${q}`);
  if (S.cur !== view) return;
  if (p.leaf !== view.leaf) {
    // Did the branch grow (the old leaf is on the new branch) or did Pi move elsewhere?
    const chk = await api(`/ui/data/sessions/${enc(view.id)}/entries?` + new URLSearchParams({ leaf: p.leaf, entry: view.leaf, limit: '1', before: '0' }));
    if (S.cur !== view) return;
    if (chk.leaf !== p.leaf) {
      S.cur = null;
      const my = S.nav;
      try {
        await showSession(view.id, { leaf: view.leafParam });
      } catch (err) {
        if (my === S.nav) showError(err);
      }
      return;
    }
    view.leaf = p.leaf;
  }
  for (const w of p.windows) {
    const ws = view.windows.get(w.window);
    if (!ws) {
      view.winsEl.append(windowSection(view, w));
      continue;
    }
    ws.total = w.entries;
    ws.count.textContent = `${w.entries} entries`;
    const loadedToEnd = !ws.sec.classList.contains('collapsed') && ws.body.querySelector('.entry') && !ws.moreBtn;
    if (loadedToEnd && ws.to < ws.total) {
      const np = await fetchPage(view, { window: w.window, from: ws.to, limit: PAGE });
      if (S.cur === view) renderPage(view, np, 'append');
    } else if (ws.body.querySelector('.entry')) updatePager(view, ws); // an unopened window gets its pager when opened
  }
  loadSide(view);
}

window.addEventListener('hashchange', route);
route();
watchFirstScan();

// ---- the server's first reading of Pi's sessions ---------------------------

// While the server is still reading Pi's sessions for the first time (a new
// data directory, or a long history), a banner says how far it is: the list
// and searches hold only what is read so far. It goes when the reading ends,
// and the list is shown again with everything.
async function watchFirstScan() {
  let shown = false;
  for (;;) {
    let fs = null;
    try {
      if (S.key || S.loggedIn) {
        const st = await api('/v1/ingest/status');
        if (!st.watcher) return; // a server that watches nothing reads nothing first
        fs = st.watcher.firstScan || null;
      }
    } catch { /* not logged in yet, or the server went away: ask again */ }
    if (fs && fs.done) {
      if (shown) {
        banner(null);
        if (S.cur === null) route(); // the list, now whole
      }
      return;
    }
    if (fs) {
      const pct = fs.bytes > 0 ? Math.floor(fs.bytesDone * 100 / fs.bytes) : 100;
      banner(`Reading Pi's sessions: ${fs.filesDone.toLocaleString('en-US')} of ${fs.files.toLocaleString('en-US')} journals (${pct}%), ` +
        `${fs.entries.toLocaleString('en-US')} entries so far. Sessions and search results are partial until this ends.`);
      shown = true;
    }
    await new Promise((res) => setTimeout(res, 2000));
  }
}

function banner(text) {
  let el = document.getElementById('firstscan');
  if (!text) {
    if (el) el.remove();
    return;
  }
  if (!el) {
    el = h('p', { id: 'firstscan', class: 'banner', role: 'status' });
    document.getElementById('top').after(el);
  }
  el.textContent = text;
}

export { preBlock };
