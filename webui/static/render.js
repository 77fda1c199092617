// Rendering of session content. Everything here treats content as hostile
// text: nodes are built with createElement and text nodes only (never
// HTML parsing), links are made only from http(s) URLs or from this app's own
// "#/…" routes, and images only from base64 data of an image/* type.

export function h(tag, props, ...kids) {
  const e = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v == null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else if (k === 'href') {
        const u = safeHref(v);
        if (u) e.setAttribute('href', u);
      } else if (k === 'dataset') Object.assign(e.dataset, v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(e, kids);
  return e;
}

function append(e, kids) {
  for (const c of kids) {
    if (c == null || c === false) continue;
    if (Array.isArray(c)) append(e, c);
    else e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// safeHref returns u when it is an in-app route ("#…"), a same-origin path
// ("/…") or an http(s) URL; anything else (javascript:, data:, vbscript:, …)
// gives null and never becomes an href.
export function safeHref(u) {
  if (typeof u !== 'string') return null;
  if (u.startsWith('#')) return u;
  if (u.startsWith('/') && !u.startsWith('//') && !u.startsWith('/\\')) return u;
  try {
    const x = new URL(u);
    if (x.protocol === 'http:' || x.protocol === 'https:') return x.href;
  } catch { /* not a URL */ }
  return null;
}

// ---- text ----------------------------------------------------------------

const inlineRe = /(`[^`\n]+`)|(\bhttps?:\/\/[^\s<>()"'`\]]*[^\s<>()"'`\].,;:!?])/g;

function inline(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(inlineRe)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1]) out.push(h('code', { class: 'ic', text: m[1].slice(1, -1) }));
    else {
      const href = safeHref(m[2]);
      out.push(href ? h('a', { href, rel: 'noopener noreferrer nofollow', target: '_blank', text: m[2] }) : m[2]);
    }
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

const fenceRe = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/;

// renderText renders markdown-ish text: fenced code blocks become <pre>,
// headings are bold lines, inline `code` and http(s) URLs are marked; all
// other text keeps its line breaks.
export function renderText(text, cls) {
  const root = h('div', { class: 'md' + (cls ? ' ' + cls : '') });
  if (text == null || text === '') return root;
  const lines = String(text).split('\n');
  let para = [];
  const flush = () => {
    if (para.length) {
      const s = para.join('\n');
      if (s.trim() !== '') root.append(h('p', null, inline(s)));
      para = [];
    }
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const m = fenceRe.exec(line);
    if (m) {
      flush();
      const fence = m[1];
      const code = [];
      let j = i + 1;
      for (; j < lines.length; j++) {
        const t = lines[j].trim();
        if (t.startsWith(fence[0].repeat(fence.length)) && t.replaceAll(fence[0], '') === '') break;
        code.push(lines[j]);
      }
      const pre = h('pre', { class: 'code' }, h('code', { text: code.join('\n') }));
      if (m[2]) pre.dataset.lang = m[2];
      root.append(pre);
      i = j;
      continue;
    }
    const hm = /^ {0,3}(#{1,6})\s+(.*)$/.exec(line);
    if (hm) {
      flush();
      root.append(h('div', { class: 'mdh mdh' + hm[1].length }, inline(hm[2])));
      continue;
    }
    if (line.trim() === '') {
      flush();
      continue;
    }
    para.push(line);
  }
  flush();
  return root;
}

// pre renders text verbatim; long text is collapsed behind a summary.
export function preBlock(text, cls, opts = {}) {
  const s = String(text ?? '');
  const lines = s.split('\n');
  const long = lines.length > (opts.lines ?? 12) || s.length > (opts.chars ?? 1500);
  const p = h('pre', { class: 'out' + (cls ? ' ' + cls : ''), text: s });
  if (!long) return p;
  const d = h('details', { class: 'long' },
    h('summary', null, (opts.label ? opts.label + ' · ' : '') + `${lines.length} lines, ${s.length} chars — `,
      h('span', { class: 'firstline', text: clip(lines.find((l) => l.trim() !== '') ?? '', 100) })), p);
  return d;
}

export function clip(s, n) {
  s = String(s ?? '');
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

// ---- images --------------------------------------------------------------

const mimeRe = /^image\/[a-z0-9][a-z0-9.+-]*$/i;
const b64Re = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

export function image(block) {
  const mime = block?.mimeType ?? block?.source?.media_type;
  const data = block?.data ?? block?.source?.data;
  if (typeof mime !== 'string' || typeof data !== 'string' || !mimeRe.test(mime) || !b64Re.test(data)) {
    return h('span', { class: 'tag warn', text: 'image (not shown: ' + clip(String(mime ?? 'no type'), 40) + ')' });
  }
  const img = document.createElement('img');
  img.alt = 'image ' + mime;
  img.loading = 'lazy';
  img.src = 'data:' + mime + ';base64,' + data.replace(/\s+/g, '');
  img.className = 'img';
  img.addEventListener('click', () => img.classList.toggle('big'));
  return img;
}

// content renders a message content field: a string or an array of blocks.
export function content(c) {
  if (c == null) return [];
  if (typeof c === 'string') return [renderText(c)];
  if (!Array.isArray(c)) return [preBlock(JSON.stringify(c, null, 2))];
  const out = [];
  for (const b of c) {
    if (b == null) continue;
    if (typeof b === 'string') out.push(renderText(b));
    else if (b.type === 'text') out.push(renderText(b.text));
    else if (b.type === 'image') out.push(image(b));
    else if (b.type === 'thinking') out.push(thinking(b));
    else out.push(h('details', { class: 'block' }, h('summary', { text: 'block: ' + clip(String(b.type), 40) }), preBlock(JSON.stringify(b, null, 2))));
  }
  return out;
}

function thinking(b) {
  const t = b.thinking ?? '';
  if (b.redacted || (!t && b.thinkingSignature)) return h('div', { class: 'thinking muted', text: 'thinking (redacted)' });
  return h('details', { class: 'thinking' }, h('summary', { text: `thinking · ${t.length} chars` }), renderText(t));
}

function contentText(c) {
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) return '';
  return c.filter((b) => b && b.type === 'text').map((b) => b.text).join('\n');
}

// ---- entries -------------------------------------------------------------

function fmtTime(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  if (isNaN(d)) return String(ts);
  // The browser's own time zone, named, so that it is not read as the UTC
  // the CLI prints.
  return d.toLocaleString(undefined, { timeZoneName: 'short' });
}

function fmtMs(ms) {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

function argPreview(args) {
  if (args == null) return '';
  if (typeof args !== 'object') return clip(String(args), 120);
  for (const k of ['command', 'path', 'file_path', 'pattern', 'query', 'url']) {
    if (typeof args[k] === 'string') return clip(args[k].split('\n')[0], 120);
  }
  for (const v of Object.values(args)) if (typeof v === 'string') return clip(v.split('\n')[0], 120);
  return '';
}

function toolCall(b, ctx) {
  const args = b.arguments;
  const argsText = typeof args === 'string' ? args : JSON.stringify(args, null, 2);
  const slot = h('div', { class: 'slot' });
  const box = h('div', { class: 'tool' },
    h('div', { class: 'toolhead' }, h('span', { class: 'tname', text: String(b.name ?? 'tool') }), ' ', h('span', { class: 'targ', text: argPreview(args) })),
    argsText && argsText !== '{}' ? preBlock(argsText, 'args', { lines: 8, chars: 600, label: 'arguments' }) : null,
    slot);
  if (b.id != null) {
    // Its result may be on screen already, on its own: shown first when a
    // later page came before this one ("Load earlier"). Take it in.
    const o = ctx.orphans?.get(String(b.id));
    if (o) {
      slot.append(o.node);
      if (o.node.classList.contains('error')) box.classList.add('error');
      o.art.remove();
      ctx.orphans.delete(String(b.id));
      ctx.entries.set(o.node.dataset.entry, o.node);
    } else ctx.calls.set(String(b.id), { slot, box });
  }
  return box;
}

// systemBody renders a system message (or a compaction's checkpoint):
// its prompt text and sections, folded when long, and the tools it adds
// and removes.
function systemBody(m) {
  const out = [];
  const text = contentText(m.content);
  if (text) out.push(preBlock(text, '', { lines: 6, chars: 600, label: 'prompt' }));
  const secs = m.sections && typeof m.sections === 'object' ? Object.entries(m.sections) : [];
  for (const [name, v] of secs) {
    if (v == null) out.push(h('div', { class: 'muted', text: `section ${name} removed` }));
    else out.push(h('div', { class: 'nbsec' }, h('div', { class: 'mdh', text: name }), preBlock(String(v), '', { lines: 6, chars: 600, label: name })));
  }
  const names = (l) => (Array.isArray(l) ? l.map((t) => String(t?.name ?? '?')) : []);
  const added = names(m.toolsAdded), removed = names(m.toolsRemoved);
  if (added.length || removed.length) {
    out.push(h('div', null, added.map((n) => tag('+ ' + n, 'dim')), removed.map((n) => tag('− ' + n, 'warn'))));
  }
  return out;
}

// tokens describes a usage record: its total and, when any, its cache reads.
function tokens(u) {
  if (!u || typeof u !== 'object') return '? tokens';
  let s = `${Number(u.totalTokens ?? 0).toLocaleString('en-US')} tokens`;
  if (u.cacheRead) s += ` (${Number(u.cacheRead).toLocaleString('en-US')} cache read)`;
  return s;
}

function toolResultNode(msg, item) {
  const err = !!(msg.isError || item.isError);
  const kids = [];
  const c = msg.content;
  if (typeof c === 'string') kids.push(preBlock(c, err ? 'err' : ''));
  else if (Array.isArray(c)) {
    for (const b of c) {
      if (b?.type === 'text') kids.push(preBlock(b.text, err ? 'err' : ''));
      else if (b?.type === 'image') kids.push(image(b));
      else if (b) kids.push(preBlock(JSON.stringify(b, null, 2)));
    }
  }
  if (msg.details && typeof msg.details.diff === 'string') kids.push(preBlock(msg.details.diff, 'diff', { label: 'diff' }));
  return h('div', { class: 'result' + (err ? ' error' : ''), dataset: { entry: item.entry } },
    h('div', { class: 'reshead' }, h('span', { class: err ? 'badge err' : 'badge ok', text: err ? 'error' : 'result' }), ' ',
      h('span', { class: 'tname', text: String(msg.toolName ?? item.toolName ?? '') }), ' ',
      typeof msg.durationMs === 'number' ? [tag(fmtMs(msg.durationMs), 'dim'), ' '] : null, timeEl(item.timestamp)),
    kids);
}

function timeEl(ts) {
  return h('time', { datetime: ts || null, title: ts || null, text: fmtTime(ts) });
}

function tag(text, cls) {
  return h('span', { class: 'tag' + (cls ? ' ' + cls : ''), text });
}

function notebookBody(data) {
  const secs = data && typeof data.sections === 'object' && data.sections ? Object.entries(data.sections) : [];
  return h('div', { class: 'nb' },
    h('div', { class: 'muted', text: `revision ${data?.revision ?? '?'}${data?.reviewOnly ? ' (review only)' : ''}` }),
    secs.map(([name, text]) => h('div', { class: 'nbsec' }, h('div', { class: 'mdh', text: name }), renderText(typeof text === 'string' ? text : JSON.stringify(text)))));
}

// entry renders one item of a window page. ctx carries the session's link
// builder, the map of tool calls waiting for their results and that of
// results shown without their calls; a tool result whose call is shown is
// put under the call and null is returned, and a call whose result is shown
// on its own (a later page drawn first) takes the result in.
export function entry(item, ctx) {
  let raw = null;
  if (item.raw) {
    try { raw = JSON.parse(item.raw); } catch { raw = null; }
  }
  const cls = ['entry', 't-' + cssName(item.type)];
  if (item.role) cls.push('r-' + cssName(item.role));
  let badge = item.role || item.type;
  const body = [];
  const extra = [];
  let error = !!item.isError;
  let orphan = null; // a tool result shown before (without) its call

  if (item.omitted) {
    body.push(h('div', { class: 'muted', text: `This line is ${item.rawBytes} bytes; its text is shown.` }), renderText(item.text));
  } else if (!raw || typeof raw !== 'object') {
    body.push(h('div', { class: 'muted', text: 'unreadable entry' }), preBlock(item.raw ?? ''));
  } else if (item.type === 'message') {
    const m = raw.message ?? {};
    switch (m.role) {
      case 'user':
        body.push(...content(m.content));
        break;
      case 'assistant': {
        const c = m.content;
        if (Array.isArray(c)) {
          for (const b of c) {
            if (b?.type === 'toolCall') body.push(toolCall(b, ctx));
            else body.push(...content([b]));
          }
        } else body.push(...content(c));
        if (m.stopReason === 'error' || m.stopReason === 'aborted' || m.errorMessage) {
          error = error || m.stopReason === 'error' || !!m.errorMessage;
          body.push(h('div', { class: 'errmsg', text: (m.stopReason === 'aborted' ? 'aborted' : 'error') + (m.errorMessage ? ': ' + m.errorMessage : '') }));
        }
        if (m.model) extra.push(tag(String(m.model), 'dim'));
        if (typeof m.thinkingLevel === 'string') extra.push(tag('thinking ' + m.thinkingLevel, 'dim'));
        break;
      }
      case 'toolResult': {
        const node = toolResultNode(m, item);
        const call = m.toolCallId != null ? ctx.calls.get(String(m.toolCallId)) : null;
        if (call) {
          call.slot.append(node);
          if (node.classList.contains('error')) call.box.classList.add('error');
          ctx.calls.delete(String(m.toolCallId));
          ctx.entries.set(item.entry, node);
          return null;
        }
        badge = 'toolResult';
        body.push(node);
        if (m.toolCallId != null) orphan = { id: String(m.toolCallId), node };
        break;
      }
      case 'bashExecution': {
        const failed = m.exitCode != null && m.exitCode !== 0;
        error = error || failed;
        body.push(h('div', { class: 'cmd' }, h('span', { class: 'prompt', text: '$ ' }), h('span', { text: String(m.command ?? '') })));
        body.push(preBlock(m.output ?? '', failed ? 'err' : ''));
        if (m.exitCode != null) extra.push(tag('exit ' + m.exitCode, failed ? 'err' : 'dim'));
        if (m.cancelled) extra.push(tag('cancelled', 'warn'));
        if (m.excludeFromContext) extra.push(tag('not in context', 'dim'));
        break;
      }
      case 'custom':
        badge = 'custom';
        extra.push(tag(String(m.customType ?? item.customType ?? 'custom')));
        body.push(...content(m.content));
        break;
      case 'branchSummary':
      case 'compactionSummary':
        body.push(renderText(m.summary ?? contentText(m.content)));
        break;
      case 'system':
        badge = 'system prompt';
        body.push(...systemBody(m));
        break;
      default:
        body.push(...content(m.content));
    }
  } else {
    switch (item.type) {
      case 'compaction': {
        cls.push('opening');
        badge = raw.fromHook ? 'rollover summary' : 'compaction summary';
        if (raw.tokensBefore != null) extra.push(tag(`${raw.tokensBefore} tokens before`, 'dim'));
        if (raw.firstKeptEntryId != null && raw.firstKeptEntryId === raw.id) extra.push(tag('keeps no earlier entry', 'dim'));
        if (raw.usage && typeof raw.usage === 'object') extra.push(tag(`summary: ${tokens(raw.usage)}`, 'dim'));
        body.push(renderText(raw.summary ?? ''));
        if (raw.systemMessage && typeof raw.systemMessage === 'object') {
          body.push(h('details', { class: 'block checkpoint' },
            h('summary', { text: 'system prompt checkpoint: the window starts from it' }), systemBody(raw.systemMessage)));
        }
        break;
      }
      case 'usage':
        cls.push('meta');
        body.push(`usage outside the conversation (${raw.kind ?? '?'}): ${raw.provider ?? '?'}/${raw.model ?? '?'}, ${tokens(raw.usage)}` +
          (raw.note ? ` · ${raw.note}` : ''));
        break;
      case 'context_edit': {
        const target = String(raw.targetId ?? '');
        if (raw.replacement == null || typeof raw.replacement !== 'object') {
          cls.push('meta');
          body.push('context edit: ', ctx.link(target, target), ' is left out of the model’s context from here on');
          break;
        }
        badge = 'context edit';
        extra.push(h('span', { class: 'tag dim' }, 'replaces ', ctx.link(target, target)));
        body.push(h('div', { class: 'muted', text: 'the model reads this in place of that entry from here on; the entry itself is unchanged' }));
        body.push(...content(raw.replacement.content));
        break;
      }
      case 'branch_summary':
        badge = 'branch summary';
        cls.push('opening');
        body.push(renderText(raw.summary ?? ''));
        break;
      case 'custom':
        extra.push(tag(String(raw.customType ?? 'custom')));
        if (raw.customType === 'note-context/notebook') body.push(notebookBody(raw.data));
        else if (raw.customType === 'note-context/handoff' && raw.data) {
          // The agent's Handoff for the next context window (seed B).
          badge = 'handoff';
          cls.push('handoff');
          body.push(h('div', { class: 'muted', text: 'written by the agent for the next context window' }));
          body.push(renderText(String(raw.data.text ?? '')));
        }
        else if (raw.customType === 'note-context/note' && raw.data) {
          const d = raw.data;
          body.push(h('div', null, tag(String(d.op ?? '?')), ' ', h('b', { text: String(d.name ?? '') })));
          if (d.content != null || d.text != null) body.push(renderText(String(d.content ?? d.text)));
        } else body.push(preBlock(JSON.stringify(raw.data ?? null, null, 2), 'dim', { lines: 4, chars: 300, label: 'data' }));
        break;
      case 'custom_message':
        extra.push(tag(String(raw.customType ?? 'custom')));
        if (raw.display === false) extra.push(tag('hidden', 'dim'));
        body.push(...content(raw.content));
        break;
      case 'model_change':
        cls.push('meta');
        body.push(`model → ${raw.provider ?? '?'}/${raw.modelId ?? '?'}`);
        break;
      case 'thinking_level_change':
        cls.push('meta');
        body.push(`thinking level → ${raw.thinkingLevel ?? '?'}`);
        break;
      case 'label':
        cls.push('meta');
        body.push(raw.label ? `label “${raw.label}” on ` : 'label cleared on ', ctx.link(String(raw.targetId ?? ''), String(raw.targetId ?? '')));
        break;
      case 'session_info':
        cls.push('meta');
        body.push(raw.name ? `session named “${raw.name}”` : 'session name cleared');
        break;
      default:
        extra.push(tag('unknown type', 'warn'));
        body.push(preBlock(JSON.stringify(raw, null, 2), 'dim', { lines: 4, chars: 300, label: 'entry' }));
    }
  }
  if (error) cls.push('error');
  const head = h('div', { class: 'ehead' },
    h('span', { class: 'badge' + (error ? ' err' : ''), text: badge }),
    error ? tag('error', 'err') : null,
    extra,
    item.label ? tag('label: ' + item.label, 'label') : null,
    h('span', { class: 'spacer' }),
    timeEl(item.timestamp),
    ctx.link(item.entry, item.entry, 'eid'));
  const art = h('article', { class: cls.join(' '), dataset: { entry: item.entry } }, head, h('div', { class: 'ebody' }, body));
  ctx.entries.set(item.entry, art);
  if (orphan && ctx.orphans) ctx.orphans.set(orphan.id, { node: orphan.node, art });
  return art;
}

function cssName(s) {
  return String(s).replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 40);
}

// highlight renders a search snippet with its match marked. matchStart and
// matchEnd are byte offsets into the UTF-8 text.
const enc = new TextEncoder();
const dec = new TextDecoder();
export function highlight(sn) {
  const b = enc.encode(sn.text ?? '');
  const s = Math.max(0, Math.min(sn.matchStart ?? 0, b.length));
  const e = Math.max(s, Math.min(sn.matchEnd ?? 0, b.length));
  return h('div', { class: 'snippet' }, dec.decode(b.slice(0, s)), h('mark', { text: dec.decode(b.slice(s, e)) }), dec.decode(b.slice(e)));
}

export { fmtTime, timeEl, tag };
