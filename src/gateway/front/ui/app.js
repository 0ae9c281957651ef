/* global document, Node, sessionStorage, alert */
// The operator page: pending approvals, live sessions and the selected session's log, updated live from the
// approvals event stream (new and settled approvals, session rows, session activity); only while that stream is down
// does the page poll, and it stops again once the stream is back. Every request carries the approver's Bearer
// credential, kept in this tab's sessionStorage only.
'use strict';

const KEY = 'toolsearch.approverToken';
const POLL_MS = 1500;
const $ = (id) => document.getElementById(id);
const pending = new Map();
const sessions = new Map();
let selected = null;
let streamAbort = null;
let pollTimer = null;
let retryMs = 500;
let retryTimer = null;
let connectedBefore = false;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

const token = () => sessionStorage.getItem(KEY);

async function api(path, init) {
  const res = await fetch(path, {
    ...(init || {}),
    headers: { authorization: `Bearer ${token()}`, 'content-type': 'application/json' },
  });
  if (res.status === 401) {
    signOut('The credential was refused: sign in again.');
    throw new Error('unauthenticated');
  }
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((body.error && body.error.message) || `HTTP ${res.status}`);
  return body;
}

function signOut(message) {
  sessionStorage.removeItem(KEY);
  if (streamAbort) streamAbort.abort();
  stopPolling();
  if (retryTimer !== null) clearTimeout(retryTimer);
  retryTimer = null;
  setLive(null);
  $('main').hidden = true;
  $('signout').hidden = true;
  $('login').hidden = false;
  $('status').textContent = 'not signed in';
  $('login-error').textContent = message || '';
}

async function signIn() {
  try {
    const r = await api('/v1/approvals');
    $('login').hidden = true;
    $('main').hidden = false;
    $('signout').hidden = false;
    $('status').textContent = `signed in as ${r.principal}`;
    pending.clear();
    for (const a of r.approvals) remember(a);
    for (const s of r.recent.slice().reverse()) addSettled(s);
    renderApprovals();
    stream();
    refreshSessions();
  } catch (err) {
    if (err.message !== 'unauthenticated') signOut(err.message);
  }
}

function remember(a) {
  pending.set(a.approvalId, { ...a, deadline: Date.now() + (a.timeLeftMs ?? Date.parse(a.expiresAt) - Date.now()) });
}

/** Whether the page hears the server live (`stream`), polls while the stream is down (`polling`), or neither. */
function setLive(state) {
  document.body.dataset.live = state || '';
  const badge = $('live');
  if (badge !== null) {
    badge.textContent = state === 'stream' ? 'live' : state === 'polling' ? 'reconnecting: polling' : '';
    badge.className = `live ${state || ''}`;
  }
  if (state === 'stream') stopPolling();
  else if (state === 'polling') startPolling();
}

function startPolling() {
  if (pollTimer !== null || token() === null) return;
  pollTimer = setInterval(() => {
    refreshApprovals();
    refreshSessions();
  }, POLL_MS);
}

function stopPolling() {
  if (pollTimer !== null) clearInterval(pollTimer);
  pollTimer = null;
}

async function refreshApprovals() {
  try {
    const r = await api('/v1/approvals');
    pending.clear();
    for (const a of r.approvals) remember(a);
    renderApprovals();
  } catch {
    // Shown again on the next poll.
  }
}

async function stream() {
  if (streamAbort) streamAbort.abort();
  const abort = new AbortController();
  streamAbort = abort;
  try {
    const res = await fetch('/v1/approvals/events', {
      headers: { authorization: `Bearer ${token()}` },
      signal: abort.signal,
    });
    if (res.status === 401) {
      signOut('The credential was refused: sign in again.');
      return;
    }
    if (!res.ok || res.body === null) throw new Error(`HTTP ${res.status}`);
    // The stream opens with every pending approval: what was pending before it (re)connected is replaced.
    pending.clear();
    renderApprovals();
    setLive('stream');
    retryMs = 500;
    // What changed while it was down (nothing on the first connect: sign-in just read it).
    if (connectedBefore) {
      refreshSessions();
      scheduleLog();
    }
    connectedBefore = true;
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf('\n\n')) !== -1) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const type = /^event: (.*)$/m.exec(block);
        const data = /^data: (.*)$/m.exec(block);
        if (type === null || data === null) continue;
        onStreamEvent(type[1], JSON.parse(data[1]));
      }
    }
  } catch {
    // Aborted or cut: polled below until the stream is back.
  }
  if (streamAbort !== abort || token() === null) return;
  setLive('polling');
  retryTimer = setTimeout(() => {
    retryTimer = null;
    if (token() !== null) stream();
  }, retryMs);
  retryMs = Math.min(retryMs * 2, 5000);
}

function onStreamEvent(type, d) {
  if (type === 'requested') {
    remember(d);
    renderApprovals();
  } else if (type === 'settled') {
    pending.delete(d.approvalId);
    addSettled(d);
    renderApprovals();
  } else if (type === 'session') {
    sessions.delete(d.sessionId);
    sessions.set(d.sessionId, d);
    renderSessions();
  } else if (type === 'activity' && d.sessionId === selected) {
    scheduleLog();
  }
}

function addSettled(s) {
  const list = $('settled');
  list.prepend(
    el(
      'li',
      { 'data-approval': s.approvalId },
      el('span', { class: s.approved ? 'ok' : 'bad' }, s.approved ? 'approved' : 'denied'),
      ` ${s.callId.slice(0, 8)} by ${s.by}${s.channel ? ` via ${s.channel}` : ''} at ${new Date(s.at).toLocaleTimeString()}${s.reason ? `: ${s.reason}` : ''}`,
    ),
  );
  while (list.children.length > 15) list.lastChild.remove();
}

function renderApprovals() {
  const box = $('approvals');
  box.replaceChildren();
  $('pending-count').textContent = String(pending.size);
  if (pending.size === 0) box.append(el('p', { class: 'empty' }, 'Nothing waits for an approver.'));
  for (const a of pending.values()) {
    const reason = el('input', { type: 'text', placeholder: 'reason (optional)', 'aria-label': 'reason' });
    const answer = async (approved) => {
      try {
        await api(`/v1/approvals/${encodeURIComponent(a.approvalId)}`, {
          method: 'POST',
          body: JSON.stringify({
            approved,
            argsDigest: a.argsDigest,
            callId: a.callId,
            ...(reason.value ? { reason: reason.value } : {}),
          }),
        });
      } catch (err) {
        alert(err.message);
      }
    };
    const hints = Object.entries(a.tool.annotations || {})
      .filter(([, v]) => v === true)
      .map(([k]) => el('span', { class: k === 'destructiveHint' ? 'badge danger' : 'badge' }, k));
    box.append(
      el(
        'article',
        { class: 'card approval', 'data-approval': a.approvalId },
        el('h3', {}, a.tool.name, ' ', el('span', { class: 'muted' }, a.tool.id)),
        el('div', {}, el('span', { class: 'badge' }, a.tool.source), ...hints),
        a.tool.description ? el('p', {}, a.tool.description) : null,
        el(
          'dl',
          {},
          el('dt', {}, 'session'),
          el('dd', {}, a.sessionId),
          el('dt', {}, 'agent / profile'),
          el('dd', {}, `${a.agentId} / ${a.profile}`),
          ...(a.member ? [el('dt', {}, 'gateway'), el('dd', {}, a.member)] : []),
          el('dt', {}, 'reason'),
          el('dd', {}, a.reason || ''),
          el('dt', {}, 'time left'),
          el('dd', {}, el('span', { class: 'countdown', 'data-deadline': String(a.deadline) }, '')),
        ),
        el('pre', { class: 'args' }, JSON.stringify(a.args, null, 2)),
        el(
          'div',
          { class: 'actions' },
          reason,
          el('button', { class: 'approve', type: 'button', onclick: () => answer(true) }, 'Approve'),
          el('button', { class: 'deny', type: 'button', onclick: () => answer(false) }, 'Deny'),
        ),
      ),
    );
  }
  tick();
}

function tick() {
  for (const c of document.querySelectorAll('.countdown')) {
    const left = Math.max(0, Number(c.dataset.deadline) - Date.now());
    c.textContent = `${Math.ceil(left / 1000)} s`;
  }
}

async function refreshSessions() {
  if (token() === null) return;
  try {
    const r = await api('/v1/sessions');
    sessions.clear();
    for (const row of r.sessions.slice().reverse()) sessions.set(row.sessionId, row);
    renderSessions();
  } catch {
    // Shown again on the next poll or stream event.
  }
}

/** The sessions list, most recently active first; the first one is selected when none is. */
function renderSessions() {
  const list = $('sessions');
  list.replaceChildren();
  const rows = [...sessions.values()].reverse();
  if (rows.length === 0) list.append(el('li', { class: 'empty' }, 'No session yet.'));
  for (const s of rows) {
    list.append(
      el(
        'li',
        {
          class: s.sessionId === selected ? 'selected' : '',
          'data-session': s.sessionId,
          onclick: () => {
            selected = s.sessionId;
            renderSessions();
            scheduleLog();
          },
        },
        el('strong', {}, s.sessionId),
        ` ${s.agentId || 'default'}/${s.profile || 'default'}, ${s.turns} turn${s.turns === 1 ? '' : 's'}${s.running > 0 ? `, ${s.running} running` : ''}`,
      ),
    );
  }
  if (selected === null && rows.length > 0) {
    selected = rows[0].sessionId;
    renderSessions();
  }
  // While polling, the log is read with each poll; while live, when the stream says the session changed.
  if (selected !== null && (pollTimer !== null || $('log-title').textContent !== selected)) scheduleLog();
}

let logBusy = false;
let logAgain = false;
/** Reads the selected session's log, one read at a time (a change during a read reads it once more). */
async function scheduleLog() {
  if (selected === null) return;
  if (logBusy) {
    logAgain = true;
    return;
  }
  logBusy = true;
  try {
    do {
      logAgain = false;
      await refreshLog().catch(() => undefined);
    } while (logAgain);
  } finally {
    logBusy = false;
  }
}

function table(headers, rows) {
  return el(
    'table',
    {},
    el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', {}, h)))),
    el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((c) => el('td', {}, c))))),
  );
}

async function refreshLog() {
  const r = await api(`/v1/sessions/${encodeURIComponent(selected)}/log`);
  const d = r.report.detail;
  $('log-title').textContent = selected;
  const calls = d.calls.map((c) => [
    c.id,
    c.source,
    el('span', { class: c.outcome === 'ok' ? 'ok' : c.outcome === 'pending' ? '' : 'bad' }, c.outcome),
    c.approval
      ? `${c.approval.status}${c.approval.by ? ` by ${c.approval.by}` : ''}${c.approval.channel ? ` via ${c.approval.channel}` : ''}`
      : '',
    c.reason || '',
  ]);
  $('log').replaceChildren(
    el(
      'div',
      { class: 'summary' },
      el('span', {}, `${r.report.turns} turns`),
      el('span', {}, `${r.report.schemasUpFront} schemas up front`),
      el('span', {}, `${r.report.searches} searches`),
      el('span', {}, `${r.report.describes} describes`),
      el('span', {}, `${r.report.finalCalls.length} final calls`),
      el('span', {}, `${r.report.codeRuns} code runs`),
    ),
    el('h3', {}, 'Searches'),
    table(
      ['query', 'hits'],
      d.searches.map((s) => [s.query, `${s.matched} matched: ${s.resultIds.join(', ') || '(none)'}`]),
    ),
    el('h3', {}, 'Describes'),
    table(
      ['asked', 'resolved'],
      d.describes.map((x) => [x.ref, x.toolId || x.error || '']),
    ),
    el('h3', {}, 'Final calls'),
    el('div', { id: 'calls' }, table(['tool', 'source', 'outcome', 'approval', 'reason'], calls)),
    el('h3', {}, 'Code runs'),
    table(
      ['run', 'outcome', 'bytes'],
      d.codeRuns.map((c) => [c.codeRunId.slice(0, 8), c.outcome, String(c.bodyBytes)]),
    ),
  );
}

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY, $('token').value.trim());
    $('token').value = '';
    signIn();
  });
  $('signout').addEventListener('click', () => signOut());
  setInterval(tick, 500);
  if (token() === null) signOut();
  else signIn();
});
